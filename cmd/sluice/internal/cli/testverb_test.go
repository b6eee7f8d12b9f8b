package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTestJobFile: `sluice test JOB.yaml` runs JOB.test.yaml beside it;
// a job without a test file is a usage error naming the file to write.
func TestTestJobFile(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"orders_append.yaml", "orders_append.test.yaml", "orders_merge.sql", "setup.sql"} {
		b, err := os.ReadFile(repoPath("examples/orders/" + n))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, n, string(b))
	}
	direct := mustSluice(t, "test", filepath.Join(dir, "orders_append.test.yaml")).stdout
	viaJob := mustSluice(t, "test", filepath.Join(dir, "orders_append.yaml")).stdout
	summary := func(s string) string { // "ok 3 passed, … in 1 file" without the duration
		s, _, _ = strings.Cut(s, " (")
		return s
	}
	if !strings.HasPrefix(viaJob, "ok ") || !strings.Contains(viaJob, " in 1 file (") || summary(viaJob) != summary(direct) {
		t.Errorf("sluice test JOB.yaml printed %q; the test file itself %q", viaJob, direct)
	}
	r := sluice(t, "test", filepath.Join(dir, "orders_merge.sql"))
	if r.code != 2 || !strings.Contains(r.stderr, "orders_merge.sql is a job, not a test file: its tests go in orders_merge.test.yaml beside it") {
		t.Errorf("sluice test of a job without tests: want exit 2 naming orders_merge.test.yaml; %v", r)
	}
}

// TestRunRecordsHistory: a `sluice run` that read changes is in the run
// history, so `sluice status` shows it as the job's last run (not
// "never"); a --state database that does not exist is not created for it.
func TestRunRecordsHistory(t *testing.T) {
	d := seededDB(t)
	job := repoPath("examples/orders/orders_append.yaml")
	none := filepath.Join(d.dir, "none.db")
	mustSluice(t, "run", "--conn", d.conn, "--state", "sqlite:"+none, job)
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("sluice run created the state database %s (stat: %v)", none, err)
	}
	// The stream's 4 changes are consumed by the first run; make one more.
	mustSluice(t, "sql", "--conn", d.conn, "INSERT INTO orders VALUES (9, 'Eve', 10.00, 'active')")
	mustSluice(t, "run", "--conn", d.conn, job)
	var st struct {
		Jobs []struct {
			Job     string `json:"job"`
			LastRun *struct {
				Status string         `json:"status"`
				Read   map[string]int `json:"read"`
			} `json:"last_run"`
		} `json:"jobs"`
	}
	out := mustSluice(t, "status", "--conn", d.conn, "--format", "json", job).stdout
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(st.Jobs) != 1 || st.Jobs[0].LastRun == nil || st.Jobs[0].LastRun.Status != "committed" || st.Jobs[0].LastRun.Read["INSERT"] != 1 {
		t.Errorf("status after sluice run: want last_run committed with INSERT 1 read; got %s", out)
	}
	if tb := parseTable(t, mustSluice(t, "status", "--conn", d.conn, job).stdout); strings.Contains(tb.rows[0][tb.col(t, "last run")], "never") {
		t.Errorf("status table says never: %q", tb.rows[0])
	}
	// The history table puts each value under its header: the last run
	// read and wrote the one INSERT, and moved the offset (a fresh user
	// found the read cell missing and every later cell one column left).
	tb := parseTable(t, mustSluice(t, "history", "--state", d.conn, "orders_append").stdout)
	last := tb.rows[0]
	if got := last[tb.col(t, "read")]; got != "1 (INSERT 1)" {
		t.Errorf("history read cell %q, want %q (row %q)", got, "1 (INSERT 1)", last)
	}
	if got := last[tb.col(t, "written")]; got != "1 (INSERT 1)" {
		t.Errorf("history written cell %q, want %q (row %q)", got, "1 (INSERT 1)", last)
	}
	if got := last[tb.col(t, "offset")]; !strings.Contains(got, " -> ") {
		t.Errorf("history offset cell %q, want FROM -> TO (row %q)", got, last)
	}
	if got := last[tb.col(t, "error")]; got != "" && got != "NULL" {
		t.Errorf("history error cell %q, want empty (row %q)", got, last)
	}
}

// TestRunRecordsNetZero: a `sluice run` that reads nothing but moves its
// offset (an insert and a delete of one key cancel out in a STANDARD
// stream) is recorded in the history, as serve records it; a run that
// found nothing pending (offset unchanged) is not (README, history).
func TestRunRecordsNetZero(t *testing.T) {
	d := seededDB(t)
	job := writeFile(t, d.dir, "nz.yaml", "name: nz\nsource: orders_stream\nsink: {table: nz_copy, mode: merge, keys: [id]}\n")
	mustSluice(t, "run", "--conn", d.conn, job) // consumes the seeded changes
	history := func() int {
		var h struct {
			Runs []json.RawMessage `json:"runs"`
		}
		if err := json.Unmarshal([]byte(mustSluice(t, "history", "--state", d.conn, "--format", "json", "nz").stdout), &h); err != nil {
			t.Fatal(err)
		}
		return len(h.Runs)
	}
	before := history()
	mustSluice(t, "run", "--conn", d.conn, job) // nothing pending
	if n := history(); n != before {
		t.Errorf("a run that found nothing pending was recorded: %d runs, want %d", n, before)
	}
	mustSluice(t, "sql", "--conn", d.conn, "INSERT INTO orders VALUES (77, 'Zed', 1.00, 'new'); DELETE FROM orders WHERE id = 77")
	mustSluice(t, "run", "--conn", d.conn, job)
	if n := history(); n != before+1 {
		t.Errorf("a run that read nothing but moved its offset: %d runs in the history, want %d", n, before+1)
	}
}

// TestStatusExitCode: `sluice status` exits 0 while every job is healthy
// and 1 (after printing the table) when one is failing — its stream does
// not exist, so its next run fails — so a monitoring check can use it.
func TestStatusExitCode(t *testing.T) {
	d := seededDB(t)
	good := repoPath("examples/orders/orders_append.yaml")
	if r := sluice(t, "status", "--conn", d.conn, good); r.code != 0 {
		t.Errorf("status of a healthy job: want exit 0; %v", r)
	}
	bad := writeFile(t, d.dir, "gone.yaml", "name: gone\nsource: no_such_stream\nsink: {table: gone_copy}\n")
	for _, format := range []string{"table", "json"} {
		r := sluice(t, "status", "--conn", d.conn, "--format", format, good, bad)
		if r.code != 1 || !strings.Contains(r.stdout, "failing") || !strings.Contains(r.stdout, "orders_append") || !strings.Contains(r.stderr, "1 of 2 jobs unhealthy") {
			t.Errorf("status --format %s with a failing job: want exit 1, both jobs listed, one failing, and the count on stderr; %v", format, r)
		}
	}
}

// TestRunRecordsFailure: a `sluice run` that fails is in the run history
// with status "error" and its error, so `sluice status` shows the job as
// failing (exit 1) with the error instead of "never run" or the last
// success; the run after the cause is fixed is recorded as committed and
// status is healthy again. The offset did not move: that run reads the
// stream's changes the failed one could not write.
func TestRunRecordsFailure(t *testing.T) {
	d := seededDB(t)
	mustSluice(t, "sql", "--conn", d.conn, "CREATE TABLE picky (id INTEGER, name TEXT, amount DECIMAL(10,2), status TEXT, note TEXT NOT NULL)")
	pending := mustSluice(t, "sql", "--conn", d.conn, "SELECT id, name, amount, status FROM orders_stream WHERE __change_type IN ('INSERT', 'UPDATE_AFTER') ORDER BY id").stdout
	job := writeFile(t, d.dir, "picky.yaml", "name: picky\nsource: orders_stream\nfilter: \"`__change_type` IN ('INSERT', 'UPDATE_AFTER')\"\nselect: [id, name, amount, status]\nsink: {table: picky, mode: append}\n")
	if r := sluice(t, "run", "--conn", d.conn, job); r.code != 1 || !strings.Contains(r.stderr, "note") {
		t.Fatalf("run into a target with a NOT NULL column the job does not fill: want exit 1 naming the NOT NULL column; %v", r)
	}
	tb := parseTable(t, mustSluice(t, "history", "--state", d.conn, "picky").stdout)
	if len(tb.rows) != 1 {
		t.Fatalf("history after one failed run: want 1 row, got %q", tb.rows)
	}
	if got := tb.rows[0][tb.col(t, "status")]; got != "error" {
		t.Errorf("history status %q, want error (row %q)", got, tb.rows[0])
	}
	if got := tb.rows[0][tb.col(t, "error")]; !strings.Contains(got, "note") {
		t.Errorf("history error cell %q, want the NOT NULL column (row %q)", got, tb.rows[0])
	}
	r := sluice(t, "status", "--conn", d.conn, "--format", "json", job)
	var st struct {
		Jobs []struct {
			Health    string `json:"health"`
			LastError string `json:"last_error"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("%v in %v", err, r)
	}
	if r.code != 1 || len(st.Jobs) != 1 || st.Jobs[0].Health != "failing" || !strings.Contains(st.Jobs[0].LastError, "note") {
		t.Errorf("status after a failed run: want exit 1, health failing, last_error naming the NOT NULL column; %v", r)
	}
	// Fix the cause: the next run writes what the failed one could not.
	mustSluice(t, "sql", "--conn", d.conn, "DROP TABLE picky; CREATE TABLE picky (id INTEGER, name TEXT, amount DECIMAL(10,2), status TEXT)")
	mustSluice(t, "run", "--conn", d.conn, job)
	if got := mustSluice(t, "sql", "--conn", d.conn, "SELECT id, name, amount, status FROM picky ORDER BY id").stdout; got != pending {
		t.Errorf("after the fix, the target holds\n%s\nwant the changes pending before the failed run\n%s", got, pending)
	}
	tb = parseTable(t, mustSluice(t, "history", "--state", d.conn, "picky").stdout)
	if got := tb.rows[0][tb.col(t, "status")]; len(tb.rows) != 2 || got != "committed" {
		t.Errorf("history after the fixed run: want 2 rows, the newest committed; got %q", tb.rows)
	}
	if r := sluice(t, "status", "--conn", d.conn, job); r.code != 0 {
		t.Errorf("status after the fixed run: want exit 0; %v", r)
	}
}

// TestShowStreamsWithStale: SHOW TABLE STREAMS lists every stream when one
// is stale (past its STALE_AFTER): that one shows stale true and no
// pending count, with a warning on stderr naming it; the listing failed as
// a whole before (fresh-user trial), hiding every other stream.
func TestShowStreamsWithStale(t *testing.T) {
	d := seededDB(t)
	mustSluice(t, "sql", "--conn", d.conn, "CREATE TABLE STREAM short_s ON TABLE orders WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'STALE_AFTER' = '1s')")
	mustSluice(t, "sql", "--conn", d.conn, "INSERT INTO orders VALUES (9, 'Eve', 10.00, 'active')")
	time.Sleep(1500 * time.Millisecond)
	// Consuming orders_stream purges the log, which marks short_s stale.
	mustSluice(t, "run", "--conn", d.conn, repoPath("examples/orders/orders_append.yaml"))
	r := sluice(t, "sql", "--conn", d.conn, "--format", "jsonl", "SHOW TABLE STREAMS")
	if r.code != 0 {
		t.Fatalf("SHOW TABLE STREAMS with a stale stream: %v", r)
	}
	got := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%v in %s", err, r.stdout)
		}
		got[fmt.Sprint(row["name"])] = row
	}
	if s, ok := got["short_s"]; !ok || s["stale"] != true || s["pending_changes"] != nil {
		t.Errorf("short_s: %v; want it listed, stale, pending NULL (all: %s)", s, r.stdout)
	}
	if s, ok := got["orders_stream"]; !ok || s["stale"] != false || s["pending_changes"] == nil {
		t.Errorf("orders_stream: %v; want it listed, not stale, with a pending count (all: %s)", s, r.stdout)
	}
	if !strings.Contains(r.stderr, "pending changes of short_s") {
		t.Errorf("stderr does not name the stale stream: %v", r)
	}
}

// TestTestMalformedExpect: expected rows that name different columns are
// the test file's mistake, found as its case runs: exit 2 with the
// error at file:line:col on stderr, as docs/testing.md says of a
// malformed test file, not a failed case (exit 1).
func TestTestMalformedExpect(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"orders_append.yaml", "setup.sql"} {
		b, err := os.ReadFile(repoPath("examples/orders/" + n))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, n, string(b))
	}
	tf := writeFile(t, dir, "orders_append.test.yaml", `setup_files: [setup.sql]
cases:
  - name: mixed columns
    changes:
      - INSERT INTO orders VALUES (4, 'Dave', 3000.00, 'active')
      - INSERT INTO orders VALUES (5, 'Eve', 1.00, 'active')
    expect:
      - {id: 4, name: Dave}
      - {id: 5, amount: 1.00}
`)
	r := sluice(t, "test", tf)
	if r.code != 2 || !strings.Contains(r.stderr, "orders_append.test.yaml:9:9:") || !strings.Contains(r.stderr, "every expected row names the same columns") {
		t.Errorf("a test file whose expected rows name different columns: want exit 2 and the error at its line; %v", r)
	}
}
