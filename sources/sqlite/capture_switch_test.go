package sqlite_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
)

// pyOut runs script with Python's sqlite3 module on path, as the
// application does (commit at the end), and returns what it printed. It
// skips the test when python3 is not installed.
func pyOut(t *testing.T, path, script string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed: the Python sqlite3 client cannot be exercised")
	}
	prog := "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], timeout=10)\n" + script + "\nc.commit()\nc.close()\n"
	out, err := exec.Command(py, "-c", prog, path).Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func pyInt(t *testing.T, path, query string) int {
	t.Helper()
	n, err := strconv.Atoi(pyOut(t, path, fmt.Sprintf("print(c.execute(%q).fetchone()[0])", query)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// pyState is the (id, v) rows of cs as Python's sqlite3 reads them.
func pyState(t *testing.T, path string) map[int]string {
	t.Helper()
	m := map[int]string{}
	out := pyOut(t, path, "for r in c.execute('SELECT id, v FROM cs'): print('%d|%s' % r)")
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		id, v, _ := strings.Cut(line, "|")
		n, err := strconv.Atoi(id)
		if err != nil {
			t.Fatal(err)
		}
		m[n] = v
	}
	return m
}

// netAfter is the STANDARD net change between two states of cs, one row
// per key without UPDATE_BEFORE, sorted, from the states alone.
func netAfter(before, after map[int]string) []string {
	var out []string
	for k, v := range after {
		if old, ok := before[k]; !ok {
			out = append(out, fmt.Sprintf("INSERT %d %s", k, v))
		} else if old != v {
			out = append(out, fmt.Sprintf("UPDATE_AFTER %d %s", k, v))
		}
	}
	for k, v := range before {
		if _, ok := after[k]; !ok {
			out = append(out, fmt.Sprintf("DELETE %d %s", k, v))
		}
	}
	slices.Sort(out)
	return out
}

// afterImages renders a read's changes as netAfter does.
func afterImages(changes []cdc.Change, s cdc.Schema) []string {
	var out []string
	for _, c := range changes {
		if c.Op == cdc.OpUpdateBefore {
			continue
		}
		parts := []string{c.Op.String()}
		for i, v := range c.Row {
			parts = append(parts, cdc.FormatValue(v, s.Columns[i].Type))
		}
		out = append(out, strings.Join(parts, " "))
	}
	slices.Sort(out)
	return out
}

// TestCaptureFollowsStreams: capture is on exactly while a stream is on
// the table, seen from the application's side (Python's sqlite3): with
// tracking on and no stream, writes leave no log row and the table has no
// trigger; creating a stream installs the six triggers, and a run reads
// exactly the changes written after it (the net difference of the table's
// rows as Python reads them before and after); a second stream and
// dropping one of two keep capture on; dropping the last stream drops the
// triggers and empties the log, and later writes log nothing; enabling
// tracking again without a stream keeps capture off; a SHOW_INITIAL_ROWS
// stream reads the rows at its first read as inserts.
func TestCaptureFollowsStreams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	f := newFixture(t, "sqlite:"+path)
	f.run(`CREATE TABLE cs (id INT, v STRING, PRIMARY KEY (id))`)
	f.run(`ALTER TABLE cs SET PROPERTIES ('change_tracking' = 'true')`)
	triggers := func() int {
		return pyInt(t, path, `SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'sluice_capture_%'`)
	}
	logRows := func() int { return pyInt(t, path, `SELECT count(*) FROM sluice_changes_cs`) }
	// both counts in one Python process (each costs a start-up)
	counts := func() (int, int) {
		n := pyInt(t, path, `SELECT (SELECT count(*) FROM sluice_changes_cs) * 1000 + (SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'sluice_capture_%')`)
		return n / 1000, n % 1000
	}
	writes := func(base int) {
		pyOut(t, path, fmt.Sprintf(`c.executemany("INSERT INTO cs VALUES (?, 'n')", [(i,) for i in range(%d, %d)])
c.execute("UPDATE cs SET v = v || 'u' WHERE id %% 7 = 0")
c.execute("DELETE FROM cs WHERE id %% 10 = 0")`, base+1, base+21))
	}
	consume := func(stream string) []string {
		t.Helper()
		info := f.info(stream)
		changes, to := f.read(info)
		if err := f.b.Advance(t.Context(), info, info.Offset, to); err != nil {
			t.Fatal(err)
		}
		return afterImages(changes, info.TableSchema)
	}

	writes(0)
	if n, tr := counts(); n != 0 || tr != 0 {
		t.Fatalf("tracking on, no stream, 20 inserts, updates and deletes: %d log rows and %d triggers, want 0 and 0", n, tr)
	}

	before := pyState(t, path)
	f.run(`CREATE TABLE STREAM cs_a ON TABLE cs`)
	if tr := triggers(); tr != 6 {
		t.Fatalf("after CREATE TABLE STREAM: %d capture triggers, want 6", tr)
	}
	writes(100)
	check(t, "the stream's first run", consume("cs_a"), netAfter(before, pyState(t, path)))

	f.run(`CREATE TABLE STREAM cs_b ON TABLE cs`)
	f.run(`DROP TABLE STREAM cs_a`)
	before = pyState(t, path)
	writes(200)
	if tr := triggers(); tr != 6 {
		t.Errorf("after dropping one of two streams: %d triggers, want 6", tr)
	}
	check(t, "the remaining stream", consume("cs_b"), netAfter(before, pyState(t, path)))

	f.run(`ALTER TABLE cs SET PROPERTIES ('change_tracking' = 'true')`)
	if tr := triggers(); tr != 6 {
		t.Errorf("after enabling tracking again with a stream: %d triggers, want 6", tr)
	}

	writes(300)
	if n := logRows(); n == 0 {
		t.Fatal("no log rows to purge before dropping the last stream: the test proves nothing")
	}
	f.run(`DROP TABLE STREAM cs_b`)
	if n, tr := counts(); n != 0 || tr != 0 {
		t.Errorf("after dropping the last stream: %d log rows, %d triggers; want 0 and 0", n, tr)
	}
	writes(400)
	if n := logRows(); n != 0 {
		t.Errorf("writes after the last stream was dropped: %d log rows, want 0", n)
	}

	f.run(`ALTER TABLE cs SET PROPERTIES ('change_tracking' = 'true')`)
	writes(500)
	if n, tr := counts(); n != 0 || tr != 0 {
		t.Errorf("after enabling tracking again without a stream: %d log rows, %d triggers; want 0 and 0", n, tr)
	}

	f.run(`CREATE TABLE STREAM cs_i ON TABLE cs WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'true')`)
	writes(600)
	check(t, "SHOW_INITIAL_ROWS first read", consume("cs_i"), netAfter(map[int]string{}, pyState(t, path)))
	before = pyState(t, path)
	writes(700)
	check(t, "SHOW_INITIAL_ROWS second read", consume("cs_i"), netAfter(before, pyState(t, path)))
}

func check(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}
