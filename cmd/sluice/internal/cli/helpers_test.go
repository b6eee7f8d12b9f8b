package cli_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cmd/sluice/internal/cli"
	"github.com/sluicedata/sluice/internal/pgtest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// repoRoot is the repository's root directory (absolute).
var repoRoot = func() string {
	p, err := filepath.Abs(filepath.Join("..", "..", "..", ".."))
	if err != nil {
		panic(err)
	}
	return p
}()

// repoPath returns the absolute path of a file of the repository.
func repoPath(rel string) string { return filepath.Join(repoRoot, filepath.FromSlash(rel)) }

// result is one in-process `sluice` invocation.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout ---\n%s--- stderr ---\n%s", r.code, r.stdout, r.stderr)
}

// sluice runs the command line in-process with empty standard input.
func sluice(t *testing.T, args ...string) result {
	t.Helper()
	return sluiceIn(t, "", args...)
}

func sluiceIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(t.Context(), args, strings.NewReader(stdin), &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// mustSluice runs the command line and fails the test unless it exits 0.
func mustSluice(t *testing.T, args ...string) result {
	t.Helper()
	r := sluice(t, args...)
	if r.code != 0 {
		t.Fatalf("sluice %s: %v", strings.Join(args, " "), r)
	}
	return r
}

// db is a fresh SQLite database in the test's temporary directory.
type db struct {
	dir  string
	conn string // sqlite:<dir>/x.db
}

func newDB(t *testing.T) db {
	t.Helper()
	dir := t.TempDir()
	return db{dir: dir, conn: "sqlite:" + filepath.Join(dir, "x.db")}
}

// seededDB is a fresh database with the orders walkthrough's setup and its
// three changes applied (examples/orders/setup.sql and changes.sql).
func seededDB(t *testing.T) db {
	t.Helper()
	d := newDB(t)
	mustSluice(t, "sql", "--conn", d.conn, "-f", repoPath("examples/orders/setup.sql"))
	mustSluice(t, "sql", "--conn", d.conn, "-f", repoPath("examples/orders/changes.sql"))
	return d
}

// writeFile writes a file in dir and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// table is an aligned table as sluice prints result sets and previews.
type table struct {
	header []string
	rows   [][]string
	footer []string // lines after the table
}

// parseTable parses the first table in out: border lines start with '+',
// row lines with '|'; cells are trimmed.
func parseTable(t *testing.T, out string) table {
	t.Helper()
	var tb table
	borders := 0
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		switch {
		case borders >= 3:
			tb.footer = append(tb.footer, line)
		case strings.HasPrefix(line, "+"):
			borders++
		case strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			if tb.header == nil {
				tb.header = cells
			} else {
				tb.rows = append(tb.rows, cells)
			}
		default:
			t.Fatalf("unexpected line %q in table output:\n%s", line, out)
		}
	}
	if tb.header == nil {
		t.Fatalf("no table in output:\n%s", out)
	}
	return tb
}

// col returns the index of a column of the table.
func (tb table) col(t *testing.T, name string) int {
	t.Helper()
	for i, h := range tb.header {
		if h == name {
			return i
		}
	}
	t.Fatalf("no column %q in %q", name, tb.header)
	return -1
}

// project returns the named columns of every row, joined by " ".
func (tb table) project(t *testing.T, names ...string) []string {
	t.Helper()
	idx := make([]int, len(names))
	for i, n := range names {
		idx[i] = tb.col(t, n)
	}
	out := make([]string, len(tb.rows))
	for r, row := range tb.rows {
		parts := make([]string, len(idx))
		for i, c := range idx {
			parts[i] = row[c]
		}
		out[r] = strings.Join(parts, " ")
	}
	return out
}

// checkGolden compares got with the golden file path, or rewrites it with
// -update.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/sluice/internal/cli/ -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test ./cmd/sluice/internal/cli/ -update and review the diff)\n--- got ---\n%s--- want ---\n%s", path, got, want)
	}
}

// asSluice, set in the environment, makes the test binary act as the
// sluice command (for tests that run it from a shell, as completion does).
const asSluice = "SLUICE_TEST_AS_SLUICE"

func TestMain(m *testing.M) {
	if os.Getenv(asSluice) == "1" {
		os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	pgtest.Main(m) // runs the tests; stops a throw-away PostgreSQL cluster if one was started
}

// sluiceOnPath returns a directory holding a `sluice` command that is this
// test binary acting as sluice, for PATH; the caller sets asSluice=1.
func sluiceOnPath(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(dir, "sluice")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mustSluiceIn runs the command line with stdin and fails the test unless
// it exits 0.
func mustSluiceIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := sluiceIn(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("sluice %s: %v", strings.Join(args, " "), r)
	}
	return r
}
