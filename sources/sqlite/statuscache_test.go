package sqlite_test

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/sources/sqlite"
)

// TestCaptureCheckSeesDDLOfAnotherConnection: a Backend that has described
// a stream (and so remembers what sqlite_schema said about its capture)
// still sees each DDL an application runs on its own connection before
// the next Stream: a dropped capture trigger is re-installed, an added
// column is captured, and triggers all gone are ErrCaptureLost. The
// triggers and the logged values are read back from the file.
func TestCaptureCheckSeesDDLOfAnotherConnection(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "c.db")
	f := newFixture(t, "sqlite:"+path)
	loc, err := sqlitex.ParseURL("sqlite:" + path)
	if err != nil {
		t.Fatal(err)
	}
	app, err := sqlitex.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	appSQL := func(q string) {
		t.Helper()
		if _, err := app.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	triggers := func() int {
		t.Helper()
		var n int
		if err := app.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'orders'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	f.orders()
	want := triggers()
	if want == 0 {
		t.Fatal("no capture triggers after CREATE TABLE STREAM")
	}

	// Each step reads the stream first (the Backend remembers the capture).
	f.info("s")
	appSQL(`DROP TRIGGER sluice_capture_ins_orders`)
	f.info("s")
	if got := triggers(); got != want {
		t.Fatalf("after DROP TRIGGER and a Stream: %d capture triggers, want %d (re-installed)", got, want)
	}

	f.info("s")
	appSQL(`ALTER TABLE orders ADD COLUMN note TEXT`)
	info := f.info("s")
	if !slices.Contains(info.TableSchema.Names(), "note") {
		t.Fatalf("after ADD COLUMN: stream columns %v, want note among them", info.TableSchema.Names())
	}
	appSQL(`INSERT INTO orders (id, name, amount, status, note) VALUES (7, 'n', '1.00', 'new', 'written after ADD COLUMN')`)
	changes, _ := f.read(info)
	i := info.TableSchema.Index("note")
	if len(changes) != 1 || changes[0].Row[i] != "written after ADD COLUMN" {
		t.Fatalf("after ADD COLUMN: read %v, want one insert whose note is the written text (capture re-installed with the column)", changes)
	}

	f.info("s")
	appSQL(`DROP TRIGGER sluice_capture_bins_orders; DROP TRIGGER sluice_capture_ins_orders; DROP TRIGGER sluice_capture_bupd_orders;
DROP TRIGGER sluice_capture_upd_orders; DROP TRIGGER sluice_capture_bdel_orders; DROP TRIGGER sluice_capture_del_orders`)
	if _, err := f.b.Stream(ctx, runnerSource("s")); !errors.Is(err, sqlite.ErrCaptureLost) {
		t.Fatalf("after dropping every capture trigger: Stream: %v, want ErrCaptureLost", err)
	}
}

// TestCaptureCheckPerTableFromOneRead: the capture check reads every
// tracked table's triggers and definition at once (one scan per schema
// version) and answers each table from it: after a stream on one table is
// described, DDL an application runs on another tracked table is seen by
// the next Stream of that table's stream (a dropped trigger re-installed,
// an added column captured), and the first table's stream is unaffected;
// describing fresh captures changes no schema. Triggers, values and
// PRAGMA schema_version are read back from the file.
func TestCaptureCheckPerTableFromOneRead(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "m.db")
	f := newFixture(t, "sqlite:"+path)
	loc, err := sqlitex.ParseURL("sqlite:" + path)
	if err != nil {
		t.Fatal(err)
	}
	app, err := sqlitex.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	appSQL := func(q string) {
		t.Helper()
		if _, err := app.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	triggersOn := func(table string) int {
		t.Helper()
		var n int
		if err := app.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ?`, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tables := []string{"t1", "t2", "t3"}
	for _, tb := range tables {
		appSQL(`CREATE TABLE ` + tb + ` (id INTEGER PRIMARY KEY, v TEXT)`)
		f.exec(&dsl.SetChangeTracking{Table: tb, Enabled: true})
		f.exec(&dsl.CreateStream{Stream: "s_" + tb, Table: tb})
	}
	want := triggersOn("t1")
	if want == 0 {
		t.Fatal("no capture triggers after CREATE TABLE STREAM")
	}
	schemaVersion := func() int64 {
		t.Helper()
		var v int64
		if err := app.QueryRowContext(ctx, `PRAGMA schema_version`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tb := range tables {
		f.info("s_" + tb)
	}
	// Fresh captures are described without re-installing anything.
	v := schemaVersion()
	for range 2 {
		for _, tb := range tables {
			f.info("s_" + tb)
		}
	}
	if got := schemaVersion(); got != v {
		t.Fatalf("describing fresh streams changed the schema: schema_version %d -> %d (capture re-installed)", v, got)
	}

	appSQL(`DROP TRIGGER sluice_capture_del_t2`)
	f.info("s_t1")
	if got := triggersOn("t2"); got != want-1 {
		t.Fatalf("Stream of t1's stream changed t2's triggers: %d, want %d", got, want-1)
	}
	f.info("s_t2")
	if got := triggersOn("t2"); got != want {
		t.Fatalf("after DROP TRIGGER on t2 and a Stream of its stream: %d capture triggers, want %d (re-installed)", got, want)
	}

	f.info("s_t1")
	appSQL(`ALTER TABLE t3 ADD COLUMN note TEXT`)
	if info := f.info("s_t1"); slices.Contains(info.TableSchema.Names(), "note") {
		t.Fatalf("t1's stream has t3's new column: %v", info.TableSchema.Names())
	}
	info := f.info("s_t3")
	if !slices.Contains(info.TableSchema.Names(), "note") {
		t.Fatalf("after ADD COLUMN on t3: stream columns %v, want note among them", info.TableSchema.Names())
	}
	appSQL(`INSERT INTO t3 (id, v, note) VALUES (1, 'a', 'after ADD COLUMN')`)
	changes, _ := f.read(info)
	i := info.TableSchema.Index("note")
	if len(changes) != 1 || changes[0].Row[i] != "after ADD COLUMN" {
		t.Fatalf("after ADD COLUMN on t3: read %v, want one insert whose note is the written text", changes)
	}
}
