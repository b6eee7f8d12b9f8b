package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileFiles are job files that once killed the process reading them,
// with the error each must get instead.
func hostileFiles() map[string]struct{ src, want string } {
	var chain strings.Builder
	for i := range 9000 {
		if i > 0 {
			chain.WriteString(" OR ")
		}
		chain.WriteString("id = " + strconv.Itoa(i))
	}
	head := "source: s\nsink: {table: copy, mode: append}\nschedule: continuous\n"
	return map[string]struct{ src, want string }{
		"huge.yaml":   {head + "filter: \"" + strings.Repeat("id = 1 OR ", 120000) + "id = 2\"\n", "larger than the limit of 1 MiB"},
		"chain.yaml":  {head + "filter: \"" + chain.String() + "\"\n", "expression too large: more than 10000 operators (limit 10000"},
		"deep.yaml":   {head + "filter: \"" + strings.Repeat("(", 5000) + "id = 1" + strings.Repeat(")", 5000) + "\"\n", "expression too deeply nested (limit 128)"},
		"nested.yaml": {"name: n\nx: " + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + "\n", "YAML nested too deeply (limit 64)"},
		"utf8.yaml":   {"source: s\nsink: {table: t\xffutf}\n", "utf8.yaml:2:16: invalid UTF-8 (byte 0xff)"},
		"literal.sql": {"-- name: literal\nINSERT INTO copy SELECT id, v FROM s WHERE v = 'a\xc3'", "literal.sql:2:50: invalid UTF-8 (byte 0xc3)"},
		"deepsql.sql": {"-- name: deepsql\nINSERT INTO copy SELECT id, v FROM s WHERE " + strings.Repeat("(", 3000) + "id = 1" + strings.Repeat(")", 3000), "too deeply nested"},
	}
}

// TestServeSurvivesHostileJobFiles starts `sluice serve --watch` on a
// directory holding a good job and hostile files, then copies more hostile
// files in while it runs: every bad file is reported with its error, the
// good job keeps moving rows, and serve exits cleanly when stopped.
func TestServeSurvivesHostileJobFiles(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "src.db")
	if out := run(ctx, "sql", "--conn", db, `
CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);
ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');
INSERT INTO t VALUES (1, 'a');`); !strings.HasPrefix(out, "exit 0") {
		t.Fatal(out)
	}
	jobs := filepath.Join(dir, "jobs")
	if err := os.MkdirAll(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, src string) {
		t.Helper()
		// Write beside, then rename: the watcher never sees half a file.
		tmp := filepath.Join(dir, name)
		if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(jobs, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("good.yaml", "name: good\nsource: s\nsink: {table: copy, mode: append}\nschedule: continuous\n")
	files := hostileFiles()
	atStart := []string{"huge.yaml", "deep.yaml", "utf8.yaml"}
	for _, f := range atStart {
		write(f, files[f].src)
	}

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan string, 1)
	go func() {
		done <- run(sctx, "serve", "--watch", "--conn", db, "--state", "sqlite:"+filepath.Join(dir, "state.db"), jobs)
	}()
	copied := func(want int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			out := run(ctx, "sql", "--conn", db, "--format", "jsonl", "SELECT count(*) AS n FROM copy")
			if strings.Contains(out, `"n":`+strconv.Itoa(want)+"}") {
				return
			}
			select {
			case log := <-done:
				t.Fatalf("serve stopped:\n%.4000s", log)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("the good job did not copy %d rows in 60 s: %s", want, out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	copied(1)
	for f := range files {
		if !contains(atStart, f) {
			write(f, files[f].src)
		}
	}
	time.Sleep(3 * time.Second) // the watcher polls every second
	run(ctx, "sql", "--conn", db, "INSERT INTO t VALUES (2, 'b'), (3, 'c')")
	copied(3)
	cancel()
	var log string
	select {
	case log = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.HasPrefix(log, "exit 0") {
		t.Fatalf("serve: %.4000s", log)
	}
	for f, h := range files {
		if !strings.Contains(log, h.want) {
			t.Errorf("%s: the log lacks %q", f, h.want)
		}
		if !strings.Contains(log, filepath.Join(jobs, f)) {
			t.Errorf("%s: the log does not name the file", f)
		}
	}
	if t.Failed() {
		t.Logf("serve log:\n%.6000s", log)
	}
}
