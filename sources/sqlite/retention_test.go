package sqlite_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/conformance"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// logRows counts the change-log rows of table directly.
func (f *fixture) logRows(table string) int64 {
	f.t.Helper()
	var log string
	if err := f.b.DB().QueryRowContext(f.t.Context(), `SELECT log FROM sluice_tracking WHERE tbl = ?`, table).Scan(&log); err != nil {
		f.t.Fatal(err)
	}
	var n int64
	if err := f.b.DB().QueryRowContext(f.t.Context(), `SELECT count(*) FROM "`+log+`"`).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// consumeAll reads stream name and advances it to the read point, as a run
// does.
func (f *fixture) consumeAll(name string) int {
	f.t.Helper()
	info := f.info(name)
	changes, to := f.read(info)
	if err := f.b.Advance(f.t.Context(), info, info.Offset, to); err != nil {
		f.t.Fatal(err)
	}
	return len(changes)
}

func (f *fixture) insertOrders(table string, from, n int) {
	f.t.Helper()
	for i := from; i < from+n; i++ {
		f.sql(fmt.Sprintf(`INSERT INTO %s VALUES (?, ?, '1.50', 'new')`, table), i, strings.Repeat("x", 200))
	}
}

// TestLogBoundedWithoutStreams: a tracked table without a stream logs
// nothing and keeps no change past the next purge (a stream's CREATE or
// DROP, TrimLogs); dropping the last stream purges; a new
// stream's first consuming run leaves nothing behind.
func TestLogBoundedWithoutStreams(t *testing.T) {
	f := newFixture(t, "")
	f.orders() // stream s on orders
	f.exec(&dsl.CreateTable{Table: "audit", Schema: conformance.Orders.Schema})
	f.exec(&dsl.SetChangeTracking{Table: "audit", Enabled: true})

	f.insertOrders("audit", 1, 100)
	f.insertOrders("orders", 1, 10)
	if n := f.logRows("audit"); n != 0 {
		t.Fatalf("audit log without a stream: %d rows, want 0 (capture is off while no stream is on the table)", n)
	}
	if n := f.consumeAll("s"); n != 10 {
		t.Fatalf("consumed %d changes, want 10", n)
	}
	for _, tab := range []string{"audit", "orders"} {
		if n := f.logRows(tab); n != 0 {
			t.Errorf("after a consuming run of s: %s log has %d rows, want 0", tab, n)
		}
	}

	f.insertOrders("audit", 101, 50)
	sizes, err := f.b.TrimLogs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := f.logRows("audit"); n != 0 {
		t.Errorf("after TrimLogs: audit log has %d rows, want 0 (no stream)", n)
	}
	if got := sizeOf(sizes, "audit"); got.Rows != 0 {
		t.Errorf("TrimLogs reports %+v for audit, want 0 rows", got)
	}

	// A stream keeps what it has not consumed; its size is reported.
	f.exec(&dsl.CreateStream{Stream: "a", Table: "audit"})
	f.insertOrders("audit", 201, 30)
	if sizes, err = f.b.TrimLogs(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := sizeOf(sizes, "audit"), f.logRows("audit"); got.Rows != want || want != 30 || got.Bytes <= 0 {
		t.Errorf("TrimLogs reports %+v for audit; the log has %d rows (want 30 and bytes > 0)", got, want)
	}
	// The bytes are the pages of the log table alone, as dbstat counts
	// them page by page (its 30 rows take more than one page).
	var pages, pageSize int64
	if err := f.b.DB().QueryRowContext(t.Context(), `SELECT count(*) FROM dbstat WHERE name = 'sluice_changes_audit'`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if err := f.b.DB().QueryRowContext(t.Context(), `PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	if got := sizeOf(sizes, "audit"); got.Bytes != pages*pageSize || pages < 2 {
		t.Errorf("TrimLogs reports %d bytes for audit's log; it has %d pages of %d bytes", got.Bytes, pages, pageSize)
	}
	f.exec(&dsl.DropStream{Stream: "a"})
	if n := f.logRows("audit"); n != 0 {
		t.Errorf("after dropping the last stream: audit log has %d rows, want 0", n)
	}

	// Dropped, written, then a new stream: its CREATE and first run leave
	// no older rows.
	f.exec(&dsl.DropStream{Stream: "s"})
	f.insertOrders("orders", 11, 20)
	if n := f.logRows("orders"); n != 0 {
		t.Fatalf("orders log after its last stream was dropped: %d rows, want 0 (capture is off)", n)
	}
	f.exec(&dsl.CreateStream{Stream: "n", Table: "orders"})
	f.insertOrders("orders", 31, 5)
	if n := f.consumeAll("n"); n != 5 {
		t.Errorf("the new stream read %d changes, want the 5 after it", n)
	}
	if n := f.logRows("orders"); n != 0 {
		t.Errorf("after the new stream's first run: orders log has %d rows, want 0", n)
	}
}

func sizeOf(sizes []runner.LogSize, table string) runner.LogSize {
	for _, s := range sizes {
		if s.Table == table {
			return s
		}
	}
	return runner.LogSize{Table: table, Rows: -1}
}

// TestStaleStream: a stream whose oldest unconsumed change is older than
// its STALE_AFTER goes stale at the next purge; the log stops keeping its
// changes, reading it fails with a recovery hint, SHOW says so, and
// CREATE OR REPLACE gives a readable stream again. The changes' age is
// made by moving their commit times back, not by waiting.
func TestStaleStream(t *testing.T) {
	f := newFixture(t, "")
	f.orders() // s, default retention
	f.exec(&dsl.CreateStream{Stream: "quick", Table: "orders", StaleAfter: time.Hour})
	f.insertOrders("orders", 1, 3)
	var log string
	if err := f.b.DB().QueryRowContext(t.Context(), `SELECT log FROM sluice_tracking WHERE tbl = 'orders'`).Scan(&log); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.TrimLogs(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Stream(t.Context(), plan.Source{Stream: "quick"}); err != nil {
		t.Fatalf("a stream within its retention: %v", err)
	}
	old := time.Now().UTC().Add(-2*time.Hour).Format("2006-01-02 15:04:05.000") + "+00:00"
	f.sql(`UPDATE "`+log+`" SET ts = ?`, old)
	if _, err := f.b.TrimLogs(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err := f.b.Stream(t.Context(), plan.Source{Stream: "quick"})
	if !errors.Is(err, runner.ErrStreamStale) || !strings.Contains(err.Error(), "sluice backfill") || !strings.Contains(err.Error(), "STALE_AFTER 1h0m0s") {
		t.Fatalf("reading a stale stream: %v; want ErrStreamStale with the retention and how to recover", err)
	}
	if n := f.consumeAll("s"); n != 3 {
		t.Errorf("s (14d retention) read %d changes, want 3", n)
	}
	if n := f.logRows("orders"); n != 0 {
		t.Errorf("orders log keeps %d rows for the stale stream, want 0", n)
	}
	show := f.exec(&dsl.ShowStreams{})
	col := map[string]int{}
	for i, c := range show.Columns {
		col[c.Name] = i
	}
	for _, row := range show.Rows {
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
	f.exec(&dsl.CreateStream{Stream: "quick", Table: "orders", OrReplace: true, StaleAfter: time.Hour})
	f.insertOrders("orders", 4, 2)
	if n := f.consumeAll("quick"); n != 2 {
		t.Errorf("the re-created stream read %d changes, want 2", n)
	}
}

// TestLogPurgedAtOnce: writes to a tracked table without a stream are not
// logged, before or after enabling tracking again (dropping the last
// stream empties the log: TestLogBoundedWithoutStreams).
func TestLogPurgedAtOnce(t *testing.T) {
	f := newFixture(t, "")
	f.exec(&dsl.CreateTable{Table: "audit", Schema: conformance.Orders.Schema})
	f.exec(&dsl.SetChangeTracking{Table: "audit", Enabled: true})
	f.insertOrders("audit", 1, 40)
	if n := f.logRows("audit"); n != 0 {
		t.Fatalf("audit log without a stream: %d rows, want 0", n)
	}
	f.exec(&dsl.SetChangeTracking{Table: "audit", Enabled: true})
	f.insertOrders("audit", 41, 40)
	if n := f.logRows("audit"); n != 0 {
		t.Errorf("after enabling tracking again with no stream: audit log has %d rows, want 0", n)
	}
}

// TestStreamWithoutChangesNeverStale: staleness is measured from the
// oldest unconsumed change (README, "STALE_AFTER"), not from the offset's
// age as Snowflake does: a stream with nothing pending holds no log row, so
// it stays readable however long ago it was created or last consumed; its
// first change then starts the clock.
func TestStreamWithoutChangesNeverStale(t *testing.T) {
	f := newFixture(t, "")
	f.orders()
	f.exec(&dsl.CreateStream{Stream: "quick", Table: "orders", StaleAfter: time.Hour})
	f.sql(`UPDATE sluice_streams SET created = ? WHERE name = 'quick'`, time.Now().UTC().Add(-72*time.Hour).Format("2006-01-02 15:04:05.000")+"+00:00")
	if _, err := f.b.TrimLogs(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Stream(t.Context(), plan.Source{Stream: "quick"}); err != nil {
		t.Fatalf("a stream with no change, its offset 3 days old (STALE_AFTER 1h): %v; want readable", err)
	}
	f.insertOrders("orders", 1, 1)
	var log string
	if err := f.b.DB().QueryRowContext(t.Context(), `SELECT log FROM sluice_tracking WHERE tbl = 'orders'`).Scan(&log); err != nil {
		t.Fatal(err)
	}
	f.sql(`UPDATE "`+log+`" SET ts = ?`, time.Now().UTC().Add(-2*time.Hour).Format("2006-01-02 15:04:05.000")+"+00:00")
	if _, err := f.b.TrimLogs(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Stream(t.Context(), plan.Source{Stream: "quick"}); !errors.Is(err, runner.ErrStreamStale) {
		t.Fatalf("a change unconsumed for 2 h (STALE_AFTER 1h): %v; want ErrStreamStale", err)
	}
}
