package cli_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cmd/sluice/internal/cli"
)

// itemsDB is a database with a table items of 30 rows (id 1…30, amount
// id*100 + id/100), change tracking and a STANDARD stream items_s.
func itemsDB(t *testing.T) db {
	t.Helper()
	d := newDB(t)
	var b strings.Builder
	b.WriteString(`CREATE TABLE items (id INT, name STRING, amount DECIMAL(10,2), PRIMARY KEY (id));
ALTER TABLE items SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM items_s ON TABLE items WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
`)
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "INSERT INTO items VALUES (%d, 'n%d', %d.%02d);\n", i, i, i*100, i)
	}
	if r := sluiceIn(t, b.String(), "sql", "--conn", d.conn, "-f", "-"); r.code != 0 {
		t.Fatalf("setup: %v", r)
	}
	return d
}

// TestBackfillCLI: --dry-run counts the rows and copies nothing; a run
// copies them in chunks, prints a summary, and logs progress lines on a
// stderr that is not a terminal.
func TestBackfillCLI(t *testing.T) {
	d := itemsDB(t)
	sink := "sqlite:" + filepath.Join(d.dir, "sink.db")
	path := writeFile(t, d.dir, "job.yaml", "source: items_s\nsink: {table: copy2, mode: merge, keys: [id], connection: "+sink+"}\n")

	r := mustSluice(t, "backfill", "--conn", d.conn, "--dry-run", "--chunk", "7", path)
	if !strings.Contains(r.stdout, "backfill: 30 rows in the snapshot, in chunks of 7 (about 5 chunks)") {
		t.Errorf("dry run output:\n%s", r.stdout)
	}
	if r := sluice(t, "sql", "--conn", sink, "SELECT count(*) FROM copy2"); r.code == 0 {
		t.Errorf("dry run created the target:\n%v", r)
	}

	r = mustSluice(t, "backfill", "--conn", d.conn, "--chunk", "7", path)
	if !strings.Contains(r.stdout, "job: backfilled 30 rows in 5 chunks") || !strings.Contains(r.stdout, "hand-off offset") {
		t.Errorf("summary:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "phase=done") {
		t.Errorf("no progress lines on a non-terminal stderr:\n%s", r.stderr)
	}
	r = mustSluice(t, "sql", "--conn", sink, "--format", "jsonl", "SELECT count(*) AS n, sum(amount) AS s FROM copy2")
	// 30 rows; amounts i*100 + i/100 for i in 1..30: 46500 + 4.65.
	if !strings.Contains(r.stdout, `"n":30`) || !strings.Contains(r.stdout, "46504.65") {
		t.Errorf("target after backfill: %s", r.stdout)
	}
	// The run history (the default connection's database, which exists)
	// records the backfill: status shows it as the job's last run, not
	// "never run" (a fresh user's report).
	tb := parseTable(t, mustSluice(t, "history", "--state", d.conn, "job").stdout)
	if len(tb.rows) != 1 || tb.rows[0][tb.col(t, "status")] != "committed" {
		t.Fatalf("history after the backfill: %q", tb.rows)
	}
	if st := mustSluice(t, "status", "--conn", d.conn, path).stdout; strings.Contains(st, "never") || !strings.Contains(st, "committed") {
		t.Errorf("status after the backfill:\n%s", st)
	}
}

// cancelOn is standard error that cancels a context when a line containing
// mark is written.
type cancelOn struct {
	strings.Builder
	mark   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.mark) {
		c.cancel()
	}
	return c.Builder.Write(p)
}

// TestBackfillInterrupted: a backfill cancelled as it starts to copy (as
// by Ctrl-C; the first progress line is logged before the first chunk)
// says it was interrupted and how to resume, not a row's "context
// canceled"; running it again finishes the copy.
func TestBackfillInterrupted(t *testing.T) {
	d := itemsDB(t)
	sink := "sqlite:" + filepath.Join(d.dir, "sink.db")
	path := writeFile(t, d.dir, "job.yaml", "source: items_s\nsink: {table: copy, mode: merge, keys: [id], connection: "+sink+"}\n")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &cancelOn{mark: "phase=start", cancel: cancel}
	var stdout strings.Builder
	code := cli.Main(ctx, []string{"backfill", "--conn", d.conn, "--chunk", "2", path}, strings.NewReader(""), &stdout, stderr)
	errText := stderr.String()
	if code != 1 || !strings.Contains(errText, "interrupted after 0 rows were committed; resume with sluice backfill "+path) {
		t.Fatalf("cancelled backfill: exit %d, want 1 and the resume hint\n%s", code, errText)
	}
	if strings.Contains(errText, "context canceled") || strings.Contains(errText, "key (") {
		t.Errorf("the interruption reads like a data error:\n%s", errText)
	}
	r := mustSluice(t, "backfill", "--conn", d.conn, "--chunk", "2", path)
	if !strings.Contains(r.stdout, "30 rows in all") && !strings.Contains(r.stdout, "backfilled 30 rows") {
		t.Errorf("second backfill did not copy the rest:\n%v", r)
	}
	r = mustSluice(t, "sql", "--conn", sink, "--format", "jsonl", "SELECT count(*) AS n FROM copy")
	if !strings.Contains(r.stdout, `"n":30`) {
		t.Errorf("target after the resumed backfill: %s", r.stdout)
	}
}
