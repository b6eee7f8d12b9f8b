package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// logRows counts the rows of table's change log directly.
func logRows(t *testing.T, b *Backend, table string) int64 {
	t.Helper()
	var n int64
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM sluice.`+`"log_`+table+`"`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func logSize(sizes []runner.LogSize, table string) runner.LogSize {
	for _, s := range sizes {
		if s.Table == table {
			return s
		}
	}
	return runner.LogSize{Table: table, Rows: -1}
}

// TestLogBoundedWithoutStreams: with no stream on a tracked table its log
// keeps nothing past the next purge (a stream's advance, TrimLogs); dropping
// the last stream purges; a new stream's first consuming run leaves no
// older rows; the 10,000-insert, 10,000-update case of issue 16 keeps 0
// rows where it kept 30,000.
func TestLogBoundedWithoutStreams(t *testing.T) {
	b, _ := openDB(t)
	ctx := t.Context()
	sqlExec(t, b, `CREATE TABLE orders (id int PRIMARY KEY, note text)`, `CREATE TABLE audit (id int PRIMARY KEY, note text)`)
	track(t, b, "orders")
	track(t, b, "audit")
	mkStream(t, b, "s", "orders", "", false)

	sqlExec(t, b, `INSERT INTO audit SELECT g, 'n' FROM generate_series(1, 10000) g`, `UPDATE audit SET note = 'u'`,
		`INSERT INTO orders SELECT g, 'n' FROM generate_series(1, 10) g`)
	if n := logRows(t, b, "audit"); n != 0 {
		t.Fatalf("audit log without a stream: %d rows, want 0 (capture is off while no stream is on the table)", n)
	}
	if got, _ := read(t, b, "s", true); len(got) != 10 {
		t.Fatalf("s read %d changes, want 10", len(got))
	}
	for _, tab := range []string{"audit", "orders"} {
		if n := logRows(t, b, tab); n != 0 {
			t.Errorf("after a consuming run of s: %s log has %d rows, want 0", tab, n)
		}
	}

	sqlExec(t, b, `UPDATE audit SET note = 'v' WHERE id <= 500`)
	sizes, err := b.TrimLogs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := logRows(t, b, "audit"); n != 0 || logSize(sizes, "audit").Rows != 0 {
		t.Errorf("after TrimLogs: audit log %d rows, reported %+v; want 0", n, logSize(sizes, "audit"))
	}

	mkStream(t, b, "a", "audit", "", false)
	sqlExec(t, b, `UPDATE audit SET note = 'w' WHERE id <= 30`)
	if sizes, err = b.TrimLogs(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := logSize(sizes, "audit"), logRows(t, b, "audit"); got.Rows != want || want != 60 || got.Bytes <= 0 {
		t.Errorf("TrimLogs reports %+v for audit; the log has %d rows (want 60 and bytes > 0)", got, want)
	}
	if err := b.DropStream(ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, b, `UPDATE audit SET note = 'x'`)
	if _, err := b.TrimLogs(ctx); err != nil {
		t.Fatal(err)
	}
	if n := logRows(t, b, "audit"); n != 0 {
		t.Errorf("after the last stream was dropped and 10,000 updates: audit log has %d rows, want 0", n)
	}

	if err := b.DropStream(ctx, "s", false); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, b, `UPDATE orders SET note = 'u'`)
	mkStream(t, b, "n", "orders", "", false)
	sqlExec(t, b, `INSERT INTO orders VALUES (11, 'new')`)
	if got, _ := read(t, b, "n", true); len(got) != 1 {
		t.Errorf("the new stream read %d changes, want the 1 after it", len(got))
	}
	if n := logRows(t, b, "orders"); n != 0 {
		t.Errorf("after the new stream's first run: orders log has %d rows, want 0", n)
	}
}

// TestStaleStream: a stream whose oldest unconsumed change is older than
// its STALE_AFTER goes stale at the next purge; the log stops keeping its
// changes, reading it fails with a recovery hint, SHOW says so, and CREATE
// OR REPLACE gives a readable stream again. The changes' age is made by
// moving their times back, not by waiting.
func TestStaleStream(t *testing.T) {
	b, _ := openDB(t)
	ctx := t.Context()
	sqlExec(t, b, `CREATE TABLE orders (id int PRIMARY KEY, note text)`)
	track(t, b, "orders")
	mkStream(t, b, "s", "orders", "", false)
	if err := b.CreateStream(ctx, &dsl.CreateStream{Stream: "quick", Table: "orders", StaleAfter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, b, `INSERT INTO orders SELECT g, 'n' FROM generate_series(1, 3) g`)
	if _, err := b.TrimLogs(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stream(ctx, plan.Source{Stream: "quick"}); err != nil {
		t.Fatalf("a stream within its retention: %v", err)
	}
	sqlExec(t, b, `UPDATE sluice."log_orders" SET __ts = now() - interval '2 hours'`)
	if _, err := b.TrimLogs(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := b.Stream(ctx, plan.Source{Stream: "quick"})
	if !errors.Is(err, runner.ErrStreamStale) || !strings.Contains(err.Error(), "sluice backfill") || !strings.Contains(err.Error(), "STALE_AFTER 1h0m0s") {
		t.Fatalf("reading a stale stream: %v; want ErrStreamStale with the retention and how to recover", err)
	}
	if got, _ := read(t, b, "s", true); len(got) != 3 {
		t.Errorf("s (14d retention) read %d changes, want 3", len(got))
	}
	if n := logRows(t, b, "orders"); n != 0 {
		t.Errorf("orders log keeps %d rows for the stale stream, want 0", n)
	}
	rs, err := b.showStreams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, c := range rs.Columns {
		col[c.Name] = i
	}
	for _, row := range rs.Rows {
		stale, after := row[col["stale"]], row[col["stale_after"]]
		switch row[0] {
		case "quick":
			if stale != true || after != "1h0m0s" {
				t.Errorf("SHOW quick: stale %v stale_after %v", stale, after)
			}
		case "s":
			if stale != false || after != "14d" || row[col["oldest_unconsumed"]] != nil {
				t.Errorf("SHOW s: stale %v stale_after %v oldest %v", stale, after, row[col["oldest_unconsumed"]])
			}
		}
	}
	if err := b.CreateStream(ctx, &dsl.CreateStream{Stream: "quick", Table: "orders", OrReplace: true, StaleAfter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, b, `INSERT INTO orders VALUES (4, 'n'), (5, 'n')`)
	if got, _ := read(t, b, "quick", true); len(got) != 2 {
		t.Errorf("the re-created stream read %d changes, want 2", len(got))
	}
}

// TestLogPurgedAtOnce: the purges that need no later run — dropping the
// last stream of a table empties its log in the DROP. Writes while a
// table has no stream are not logged at all (capture is off).
func TestLogPurgedAtOnce(t *testing.T) {
	b, _ := openDB(t)
	ctx := t.Context()
	sqlExec(t, b, `CREATE TABLE audit (id int PRIMARY KEY, note text)`)
	track(t, b, "audit")
	sqlExec(t, b, `INSERT INTO audit SELECT g, 'n' FROM generate_series(1, 1000) g`)
	if n := logRows(t, b, "audit"); n != 0 {
		t.Fatalf("audit log without a stream: %d rows, want 0", n)
	}
	track(t, b, "audit")
	if n := logRows(t, b, "audit"); n != 0 {
		t.Errorf("after enabling tracking again with no stream: audit log has %d rows, want 0", n)
	}
	mkStream(t, b, "a", "audit", "", false)
	mkStream(t, b, "b", "audit", "", false)
	sqlExec(t, b, `UPDATE audit SET note = 'u' WHERE id <= 100`)
	if err := b.DropStream(ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	if n := logRows(t, b, "audit"); n != 200 {
		t.Errorf("after dropping one of two streams: audit log has %d rows, want the 200 b has not read", n)
	}
	if err := b.DropStream(ctx, "b", false); err != nil {
		t.Fatal(err)
	}
	if n := logRows(t, b, "audit"); n != 0 {
		t.Errorf("after dropping the last stream: audit log has %d rows, want 0 (no TrimLogs, no run)", n)
	}
}

// TestStreamWithoutChangesNeverStale: staleness is measured from the
// oldest unconsumed change (README, "STALE_AFTER"), not from the offset's
// age as Snowflake does: a stream with nothing pending holds no log row, so
// it stays readable however long ago it was created or last consumed; its
// first change then starts the clock.
func TestStreamWithoutChangesNeverStale(t *testing.T) {
	b, _ := openDB(t)
	ctx := t.Context()
	sqlExec(t, b, `CREATE TABLE orders (id int PRIMARY KEY, note text)`)
	track(t, b, "orders")
	if err := b.CreateStream(ctx, &dsl.CreateStream{Stream: "quick", Table: "orders", StaleAfter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// The offset is days old: created (and never consumed) 3 days ago.
	sqlExec(t, b, `UPDATE sluice.streams SET created_at = now() - interval '3 days' WHERE name = 'quick'`)
	if _, err := b.TrimLogs(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stream(ctx, plan.Source{Stream: "quick"}); err != nil {
		t.Fatalf("a stream with no change, its offset 3 days old (STALE_AFTER 1h): %v; want readable", err)
	}
	sqlExec(t, b, `INSERT INTO orders VALUES (1, 'n')`)
	if _, err := b.TrimLogs(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := read(t, b, "quick", false); len(got) != 1 {
		t.Fatalf("quick read %d changes, want 1", len(got))
	}
	sqlExec(t, b, `UPDATE sluice."log_orders" SET __ts = now() - interval '2 hours'`)
	if _, err := b.TrimLogs(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stream(ctx, plan.Source{Stream: "quick"}); !errors.Is(err, runner.ErrStreamStale) {
		t.Fatalf("a change unconsumed for 2 h (STALE_AFTER 1h): %v; want ErrStreamStale", err)
	}
}

// TestTrimLogsMeasuresAllPurgesSome: TrimLogs reports every tracked
// table's log (rows counted here directly), leaves the logs that hold no
// row alone (not truncated again: the same relfilenode; issue #19, where
// 1,000 empty logs cost a TRUNCATE each per call), purges a log whose rows
// every stream has consumed, and keeps the rows a stream still needs.
func TestTrimLogsMeasuresAllPurgesSome(t *testing.T) {
	b, _ := openDB(t)
	ctx := t.Context()
	for _, tab := range []string{"e1", "e2", "used", "kept"} {
		sqlExec(t, b, `CREATE TABLE `+tab+` (id int PRIMARY KEY, v int)`)
		track(t, b, tab)
	}
	mkStream(t, b, "e1_s", "e1", "", false)
	mkStream(t, b, "e2_s", "e2", "", false)
	mkStream(t, b, "used_a", "used", "", false)
	mkStream(t, b, "used_b", "used", "", false)
	mkStream(t, b, "kept_s", "kept", "", false)
	sqlExec(t, b, `INSERT INTO e1 VALUES (1, 1)`, `INSERT INTO used SELECT g, g FROM generate_series(1, 5) g`,
		`INSERT INTO kept SELECT g, g FROM generate_series(1, 3) g`)
	if got, _ := read(t, b, "e1_s", true); len(got) != 1 {
		t.Fatalf("e1_s read %d changes, want 1", len(got))
	}
	// used_a consumes; used_b is then moved to the same offset without a
	// read, so the five rows are consumed by both and not yet purged.
	if got, _ := read(t, b, "used_a", true); len(got) != 5 {
		t.Fatalf("used_a read %d changes, want 5", len(got))
	}
	sqlExec(t, b, `UPDATE sluice.streams SET position = (SELECT position FROM sluice.streams WHERE name = 'used_a') WHERE name = 'used_b'`)
	if n := logRows(t, b, "used"); n != 5 {
		t.Fatalf("used log before TrimLogs: %d rows, want 5 (used_b had not read them when used_a's run purged)", n)
	}
	e1, _ := logState(t, b, "e1")
	e2, _ := logState(t, b, "e2")

	sizes, err := b.TrimLogs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for tab, want := range map[string]int64{"e1": 0, "e2": 0, "used": 0, "kept": 3} {
		if n := logRows(t, b, tab); n != want {
			t.Errorf("after TrimLogs the %s log has %d rows, want %d", tab, n, want)
		}
		if got := logSize(sizes, tab); got.Rows != logRows(t, b, tab) || got.Bytes <= 0 {
			t.Errorf("TrimLogs reports %+v for %s; the log has %d rows (want those, and bytes > 0)", got, tab, logRows(t, b, tab))
		}
	}
	if len(sizes) != 4 {
		t.Errorf("TrimLogs reported %d logs, want the 4 tracked tables': %+v", len(sizes), sizes)
	}
	if n, _ := logState(t, b, "e1"); n != e1 {
		t.Errorf("the empty e1 log was truncated again (relfilenode %d → %d)", e1, n)
	}
	if n, _ := logState(t, b, "e2"); n != e2 {
		t.Errorf("the empty e2 log was truncated again (relfilenode %d → %d)", e2, n)
	}
	if got, _ := read(t, b, "kept_s", true); len(got) != 3 {
		t.Errorf("kept_s read %d changes after TrimLogs, want its 3", len(got))
	}
}
