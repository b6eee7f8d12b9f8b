package pgit

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/runner"
	_ "github.com/sluicedata/sluice/sources/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// sluiceBinary builds cmd/sluice into a temporary directory of t (without
// -race: it is the process under test, not the test) and returns its
// path. It skips t when there is no go tool to build with.
func sluiceBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH to build cmd/sluice")
	}
	out := filepath.Join(t.TempDir(), "sluice")
	cmd := exec.CommandContext(t.Context(), goTool, "build", "-o", out, "github.com/sluicedata/sluice/cmd/sluice")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sluice: %v: %s", err, b)
	}
	return out
}

// connect opens a pgx connection closed at the end of the test.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.WithoutCancel(t.Context())) })
	return c
}

// mustExec runs plain SQL statements on c.
func mustExec(t *testing.T, c *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := c.Exec(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// sluiceSQL runs statements of sluice's dialect (ALTER TABLE … SET
// PROPERTIES, CREATE TABLE STREAM …) on url, in process.
func sluiceSQL(t *testing.T, url, text string) {
	t.Helper()
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler)}
	defer r.Close()
	if err := r.ExecScript(t.Context(), url, "setup.sql", text, nil); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
}

// writeJob writes a job file into dir and returns its path.
func writeJob(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// queryText returns the rows of a query as text, for comparisons.
func queryText(t *testing.T, c *pgx.Conn, q string, args ...any) [][]string {
	t.Helper()
	rows, err := c.Query(t.Context(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		r := make([]string, len(vals))
		for i, v := range vals {
			switch x := v.(type) {
			case nil:
				r[i] = "<NULL>"
			case string:
				r[i] = x
			default:
				t.Fatalf("%s: column %d is %T; cast it to text", q, i, v)
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
