package postgres

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/pgtest"
)

// psqlApp runs SQL as the application does, through psql on u (no sluice
// code between the write and the check), and returns its unaligned,
// tuples-only output.
func psqlApp(t *testing.T, u, sql string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), pgtest.Tool(t, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", u, "-c", sql)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("psql %q: %v\n%s", sql, err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

func psqlInt(t *testing.T, u, sql string) int {
	t.Helper()
	n, err := strconv.Atoi(psqlApp(t, u, sql))
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// psqlState is the (id, v) rows of table as psql reads them.
func psqlState(t *testing.T, u, table string) map[int]string {
	t.Helper()
	m := map[int]string{}
	for _, line := range strings.Split(psqlApp(t, u, `SELECT id || '|' || v FROM `+table), "\n") {
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

// afterImages is a read's changes without UPDATE_BEFORE, sorted: the
// form of netDiff.
func afterImages(changes []string) []string {
	var out []string
	for _, c := range changes {
		if !strings.HasPrefix(c, "UPDATE_BEFORE ") {
			out = append(out, c)
		}
	}
	return sorted(out)
}

// TestCaptureFollowsStreams: capture is on exactly while a stream is on
// the table, seen from the application's side (psql): with tracking on and
// no stream, writes leave no log row and the table has no trigger;
// creating a stream installs the four triggers, and a run reads exactly
// the changes written after it (the net difference of the table's rows as
// psql reads them before and after); a second stream and dropping one of
// two keep capture on; dropping the last stream drops the triggers and
// empties the log, and later writes log nothing; enabling tracking again
// without a stream keeps capture off, and with one keeps it on; a
// SHOW_INITIAL_ROWS stream created on a table without capture reads the
// rows at its first read as inserts.
func TestCaptureFollowsStreams(t *testing.T) {
	b, u := openDB(t)
	ctx := t.Context()
	triggers := func() int {
		return psqlInt(t, u, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'cs'::regclass AND tgname LIKE 'sluice_capture_%' AND tgenabled = 'A'`)
	}
	logRows := func() int { return psqlInt(t, u, `SELECT count(*) FROM sluice.log_cs`) }
	writes := func(base int) {
		psqlApp(t, u, strings.ReplaceAll(`INSERT INTO cs SELECT g, 'n' FROM generate_series(B + 1, B + 20) g;
			UPDATE cs SET v = v || 'u' WHERE id % 7 = 0;
			DELETE FROM cs WHERE id % 10 = 0;
			TRUNCATE cs_other`, "B", strconv.Itoa(base)))
	}
	psqlApp(t, u, `CREATE TABLE cs (id int PRIMARY KEY, v text NOT NULL); CREATE TABLE cs_other (id int)`)
	track(t, b, "cs")

	writes(0)
	if n, tr := logRows(), triggers(); n != 0 || tr != 0 {
		t.Fatalf("tracking on, no stream, 20 inserts, updates and deletes: %d log rows and %d triggers, want 0 and 0", n, tr)
	}

	before := psqlState(t, u, "cs")
	mkStream(t, b, "cs_a", "cs", "", false)
	if tr := triggers(); tr != 4 {
		t.Fatalf("after CREATE TABLE STREAM: %d enabled capture triggers, want 4", tr)
	}
	writes(100)
	_, got := read(t, b, "cs_a", true)
	check(t, "the stream's first run", afterImages(got), netDiff(before, psqlState(t, u, "cs")))

	// A second stream, then dropping one of two: capture stays on.
	mkStream(t, b, "cs_b", "cs", "", false)
	if err := b.DropStream(ctx, "cs_a", false); err != nil {
		t.Fatal(err)
	}
	before = psqlState(t, u, "cs")
	writes(200)
	if tr := triggers(); tr != 4 {
		t.Errorf("after dropping one of two streams: %d triggers, want 4", tr)
	}
	_, got = read(t, b, "cs_b", true)
	check(t, "the remaining stream", afterImages(got), netDiff(before, psqlState(t, u, "cs")))

	// Enabling tracking again with a stream keeps capture on.
	track(t, b, "cs")
	if tr := triggers(); tr != 4 {
		t.Errorf("after enabling tracking again with a stream: %d triggers, want 4", tr)
	}

	// Dropping the last stream: no trigger, empty log, nothing logged.
	writes(300)
	if n := logRows(); n == 0 {
		t.Fatal("no log rows to purge before dropping the last stream: the test proves nothing")
	}
	if err := b.DropStream(ctx, "cs_b", false); err != nil {
		t.Fatal(err)
	}
	if n, tr := logRows(), triggers(); n != 0 || tr != 0 {
		t.Errorf("after dropping the last stream: %d log rows, %d triggers; want 0 and 0", n, tr)
	}
	if n := psqlInt(t, u, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'cs'::regclass AND tgname LIKE 'sluice_capture_%'`); n != 0 {
		t.Errorf("after dropping the last stream: %d capture triggers (enabled or not), want 0", n)
	}
	writes(400)
	if n := logRows(); n != 0 {
		t.Errorf("writes after the last stream was dropped: %d log rows, want 0", n)
	}

	// Enabling tracking again without a stream keeps capture off.
	track(t, b, "cs")
	writes(500)
	if n, tr := logRows(), triggers(); n != 0 || tr != 0 {
		t.Errorf("after enabling tracking again without a stream: %d log rows, %d triggers; want 0 and 0", n, tr)
	}

	// SHOW_INITIAL_ROWS: the rows at the first read, as inserts.
	if err := b.CreateStream(ctx, &dsl.CreateStream{Stream: "cs_i", Table: "cs", ShowInitialRows: true}); err != nil {
		t.Fatal(err)
	}
	writes(600)
	_, got = read(t, b, "cs_i", true)
	check(t, "SHOW_INITIAL_ROWS first read", afterImages(got), netDiff(map[int]string{}, psqlState(t, u, "cs")))
	before = psqlState(t, u, "cs")
	writes(700)
	_, got = read(t, b, "cs_i", true)
	check(t, "SHOW_INITIAL_ROWS second read", afterImages(got), netDiff(before, psqlState(t, u, "cs")))
}
