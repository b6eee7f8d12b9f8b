package dsl

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// addSeeds adds the testdata files with the given extensions to the corpus.
func addSeeds(f *testing.F, exts ...string) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*"))
	for _, path := range files {
		for _, ext := range exts {
			if strings.HasSuffix(path, ext) {
				b, err := os.ReadFile(path)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(b)
			}
		}
	}
}

// checkErr fails unless err is a non-empty pos.List of positioned errors
// that wrap a sentinel.
func checkErr(t *testing.T, file string, err error) {
	var list pos.List
	if !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("error %T is not a non-empty pos.List: %v", err, err)
	}
	for _, e := range list {
		if !e.Pos.IsValid() || e.Pos.File != file || e.Pos.Col < 1 {
			t.Fatalf("error without a valid position: %q (%+v)", e.Error(), e.Pos)
		}
		if !wrapsSentinel(e) {
			t.Fatalf("error wraps no sentinel: %v", e)
		}
	}
}

// checkSQLExprs checks that each expression of a SQL job is the exact slice
// of the source at its position.
func checkSQLExprs(t *testing.T, src string, job *plan.Job) {
	s := newSource("", src)
	check := func(e plan.Expr) {
		if e.Text == "" {
			t.Fatalf("empty expression at %s", e.Pos)
		}
		off := s.lineStarts[e.Pos.Line-1] + e.Pos.Col - 1
		if !strings.HasPrefix(src[off:], e.Text) {
			t.Fatalf("expression %q is not at %d:%d", e.Text, e.Pos.Line, e.Pos.Col)
		}
	}
	if job.Filter != nil {
		check(*job.Filter)
	}
	for _, it := range job.Select {
		check(it.Expr)
	}
	if m := job.Sink.Merge; m != nil {
		for _, c := range m.Clauses {
			if c.Cond != nil {
				check(*c.Cond)
			}
			for _, a := range c.Set {
				check(a.Value)
			}
			for _, v := range c.InsertValues {
				check(v)
			}
		}
	}
}

// hostileSeeds are inputs of the shapes that once killed the process:
// deep nesting, long operator chains, invalid UTF-8, in a YAML job, a SQL
// job and a script.
func hostileSeeds(yaml bool) [][]byte {
	chain := strings.Repeat("id = 1 OR ", 3000) + "id = 2"
	deep := strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300)
	if yaml {
		return [][]byte{
			[]byte("name: j\nsource: s\nsink: {table: t}\nfilter: \"" + chain + "\"\n"),
			[]byte("name: j\nsource: s\nsink: {table: t}\nfilter: \"" + deep + "\"\n"),
			[]byte("name: j\nx: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n"),
			[]byte("name: j\nx: " + strings.Repeat("{a: ", 200) + "1" + strings.Repeat("}", 200) + "\n"),
			[]byte("name: j\nsource: s\nsink: {table: t\xffutf}\n"),
			[]byte("name: j\nsource: s\nsink: {table: t}\nfilter: \"v = 'a\xc3'\"\n"),
		}
	}
	return [][]byte{
		[]byte("-- name: j\nINSERT INTO t SELECT * FROM s WHERE " + chain),
		[]byte("-- name: j\nINSERT INTO t SELECT * FROM s WHERE " + deep + " = 1"),
		[]byte("DELETE FROM x WHERE " + chain + ";\nINSERT INTO t SELECT * FROM s"),
		[]byte("SELECT " + deep + ";\nINSERT INTO t SELECT * FROM s"),
		[]byte("-- name: j\xff\nINSERT INTO t\xfe SELECT * FROM s WHERE v = 'a\xc3'"),
	}
}

func FuzzParseYAML(f *testing.F) {
	addSeeds(f, ".yaml", ".yml")
	for _, s := range hostileSeeds(true) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		job, err := ParseJob("f.yaml", src)
		if err != nil {
			checkErr(t, "f.yaml", err)
			return
		}
		if job.Source.Stream == "" || (job.Sink.Table == "" && !job.Sink.Stdout) || job.Name == "" {
			t.Fatalf("incomplete job without error: %s", renderJob(job))
		}
		if job.Sink.Mode == plan.ModeMerge && len(job.Sink.Keys) == 0 {
			t.Fatal("merge without keys")
		}
	})
}

func FuzzParseSQL(f *testing.F) {
	addSeeds(f, ".sql")
	for _, s := range hostileSeeds(false) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		job, err := ParseJob("f.sql", src)
		if err != nil {
			checkErr(t, "f.sql", err)
			return
		}
		if job.Source.Stream == "" || job.Sink.Table == "" || job.Name == "" {
			t.Fatalf("incomplete job without error: %s", renderJob(job))
		}
		if job.Sink.Mode == plan.ModeMerge && (len(job.Sink.Keys) == 0 || job.Sink.Merge == nil) {
			t.Fatal("merge without keys")
		}
		checkSQLExprs(t, string(src), job)
	})
}

func FuzzParseStatements(f *testing.F) {
	addSeeds(f, ".sql")
	for _, s := range hostileSeeds(false) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		sts, err := ParseStatements("f.sql", string(src))
		if err != nil {
			checkErr(t, "f.sql", err)
			return
		}
		for _, st := range sts {
			p := st.Position()
			if !p.IsValid() || st.SQL() == "" {
				t.Fatalf("statement %q at %v", st.SQL(), p)
			}
			s := newSource("", string(src))
			off := s.lineStarts[p.Line-1] + p.Col - 1
			if !strings.HasPrefix(string(src)[off:], st.SQL()) {
				t.Fatalf("statement %q is not at %s", st.SQL(), p)
			}
		}
	})
}
