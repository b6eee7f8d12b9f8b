package dsl

import (
	"strings"
	"testing"

	"github.com/sluicedata/sluice/plan"
)

// exprAt checks that e's position points at the first byte of its text in
// src (when the text appears there unchanged).
func exprAt(t *testing.T, src string, e plan.Expr, wantText string, wantLine, wantCol int) {
	t.Helper()
	if e.Text != wantText {
		t.Errorf("text %q, want %q", e.Text, wantText)
	}
	if e.Pos.Line != wantLine || e.Pos.Col != wantCol {
		t.Errorf("%q at %d:%d, want %d:%d", e.Text, e.Pos.Line, e.Pos.Col, wantLine, wantCol)
	}
	lines := strings.Split(src, "\n")
	if e.Pos.Line >= 1 && e.Pos.Line <= len(lines) {
		line := lines[e.Pos.Line-1]
		if e.Pos.Col-1 > len(line) || !strings.HasPrefix(line[e.Pos.Col-1:], firstLine(wantText)) {
			t.Errorf("%q: source at %d:%d is %q", e.Text, e.Pos.Line, e.Pos.Col, line[min(e.Pos.Col-1, len(line)):])
		}
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func TestYAMLExprPositions(t *testing.T) {
	src := "source: s\n" +
		"filter: |\n" +
		"\n" +
		"    `__change_type` = 'INSERT'\n" +
		"    AND amount > 1\n" +
		"select:\n" +
		"  - id\n" +
		"  - 'name AS n'\n" +
		"  - \"upper(名前) AS 名\"\n" +
		"  - [bad]\n" +
		"sink: {table: t}\n"
	_, err := ParseYAML("j.yaml", []byte(src))
	if err == nil || err.Error() != "j.yaml:10:5: a select item must be a string, found a list" {
		t.Fatalf("error %v", err)
	}
	src = strings.Replace(src, "  - [bad]\n", "", 1)
	src = strings.Replace(src, "select:\n", "select:\n  - \"名前\"\n", 1)
	job, err := ParseYAML("j.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	exprAt(t, src, *job.Filter, "`__change_type` = 'INSERT'\nAND amount > 1", 4, 5)
	if len(job.Select) != 4 {
		t.Fatalf("select %v", job.Select)
	}
	exprAt(t, src, job.Select[0].Expr, "名前", 7, 6)
	exprAt(t, src, job.Select[1].Expr, "id", 8, 5)
	exprAt(t, src, job.Select[2].Expr, "name AS n", 9, 6)
	exprAt(t, src, job.Select[3].Expr, "upper(名前) AS 名", 10, 6)

	// Flow sequences with multi-byte text before an item: byte columns.
	src = "source: s\nselect: [\"名前\", 'x', y]\nsink: {table: t}\n"
	job, err = ParseYAML("j.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	exprAt(t, src, job.Select[1].Expr, "x", 2, 21)
	exprAt(t, src, job.Select[2].Expr, "y", 2, 25)
}

func TestYAMLDefaults(t *testing.T) {
	job, err := ParseJob("jobs/orders-sync.v2.yml", []byte("source: s\nsink:\n  stdout: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if job.Name != "orders-sync.v2" || job.Format != "yaml" || job.Sink.Mode != plan.ModeAppend || !job.Sink.Stdout || job.Filter != nil || job.Select != nil {
		t.Errorf("job %+v", job)
	}
	_, err = ParseJob("jobs/bad name.yaml", []byte("source: s\nsink: {stdout: true}\n"))
	want := `jobs/bad name.yaml:1:1: job name "bad name" may hold only letters, digits, '_', '-' and '.', and must start with a letter, digit or '_' (the name defaults to the file's base name; set name explicitly)`
	if err == nil || err.Error() != want {
		t.Errorf("error %v", err)
	}
}

func TestYAMLAnchorsAndTags(t *testing.T) {
	src := "source: &s orders_stream\nfilter: !!str 1 = 1\nsink:\n  table: *s\n"
	job, err := ParseYAML("j.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if job.Source.Stream != "orders_stream" || job.Sink.Table != "orders_stream" || job.Filter.Text != "1 = 1" {
		t.Errorf("job %s", renderJob(job))
	}
}

func TestYAMLSelectStar(t *testing.T) {
	for _, sel := range []string{`"*"`, `["*"]`} {
		job, err := ParseYAML("j.yaml", []byte("source: s\nselect: "+sel+"\nsink: {table: t}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if job.Select != nil {
			t.Errorf("select %s: %v", sel, job.Select)
		}
	}
	_, err := ParseYAML("j.yaml", []byte("source: s\nselect: ['*', id]\nsink: {table: t}\n"))
	if err == nil || err.Error() != "j.yaml:2:11: * must be the only select item" {
		t.Errorf("error %v", err)
	}
}
