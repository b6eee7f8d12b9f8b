package sqlite_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/conformance"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sources/sqlite"
)

type fixture struct {
	t *testing.T
	b *sqlite.Backend
}

func newFixture(t *testing.T, url string) *fixture {
	t.Helper()
	if url == "" {
		return &fixture{t, openTemp(t).(*sqlite.Backend)}
	}
	b, err := runner.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &fixture{t, b.(*sqlite.Backend)}
}

func (f *fixture) exec(st dsl.Statement) *runner.ResultSet {
	f.t.Helper()
	rs, err := f.b.Exec(f.t.Context(), st)
	if err != nil {
		f.t.Fatalf("%T: %v", st, err)
	}
	return rs
}

func (f *fixture) sql(q string, args ...any) {
	f.t.Helper()
	if _, err := f.b.DB().ExecContext(f.t.Context(), q, args...); err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
}

// orders creates the seed's table with tracking and a STANDARD stream s.
func (f *fixture) orders() *runner.StreamInfo {
	f.exec(&dsl.CreateTable{Table: "orders", Schema: conformance.Orders.Schema})
	f.exec(&dsl.SetChangeTracking{Table: "orders", Enabled: true})
	f.exec(&dsl.CreateStream{Stream: "s", Table: "orders"})
	return f.info("s")
}

func (f *fixture) info(name string) *runner.StreamInfo {
	f.t.Helper()
	info, err := f.b.Stream(f.t.Context(), plan.Source{Stream: name})
	if err != nil {
		f.t.Fatal(err)
	}
	return info
}

func (f *fixture) read(info *runner.StreamInfo) ([]cdc.Change, cdc.Offset) {
	f.t.Helper()
	r, err := f.b.Changes(f.t.Context(), info, info.Offset, runner.ReadOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	defer r.Close()
	var out []cdc.Change
	for {
		b, err := r.Next(f.t.Context())
		if errors.Is(err, io.EOF) {
			return out, r.ReadPoint()
		}
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, b...)
	}
}

func ops(cs []cdc.Change) []string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Op.String())
	}
	return s
}

func TestLateTransactionAppearsInNextRead(t *testing.T) {
	f := newFixture(t, "")
	info := f.orders()
	ctx := t.Context()
	tx, err := sqlitex.BeginImmediate(ctx, f.b.DB())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders VALUES (1, 'Alice', '1.00', 'x')`); err != nil {
		t.Fatal(err)
	}
	got, rp := f.read(info)
	if len(got) != 0 {
		t.Fatalf("uncommitted change visible: %v", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// The consumer of the first read commits its offset after the late
	// transaction did: the late change is above that read point.
	if err := f.b.Advance(ctx, info, info.Offset, rp); err != nil {
		t.Fatal(err)
	}
	got, _ = f.read(f.info("s"))
	if len(got) != 1 || got[0].Op != cdc.OpInsert {
		t.Fatalf("late commit lost: %v", got)
	}
}

func TestReplaceIsAnUpdate(t *testing.T) {
	f := newFixture(t, "")
	f.exec(&dsl.CreateTable{Table: "orders", Schema: conformance.Orders.Schema})
	f.sql(`INSERT INTO orders VALUES (1, 'Alice', '1.00', 'x')`)
	f.exec(&dsl.SetChangeTracking{Table: "orders", Enabled: true})
	f.exec(&dsl.CreateStream{Stream: "s", Table: "orders"})
	f.sql(`INSERT OR REPLACE INTO orders VALUES (1, 'Alice', '2.00', 'x')`)
	f.sql(`INSERT INTO orders VALUES (2, 'Bob', '1.00', 'x') ON CONFLICT (id) DO UPDATE SET amount = excluded.amount`)
	got, _ := f.read(f.info("s"))
	if want := []string{"UPDATE_BEFORE", "UPDATE_AFTER", "INSERT"}; !equal(ops(got), want) {
		t.Fatalf("ops %v, want %v", ops(got), want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestChangesQueryIsWhatChangesReads(t *testing.T) {
	f := newFixture(t, "")
	info := f.orders()
	f.sql(`INSERT INTO orders VALUES (1, 'Alice', '1.00', 'x'), (2, 'Bob', '2.00', 'y')`)
	f.sql(`UPDATE orders SET amount = '3.00' WHERE id = 2`)
	got, rp := f.read(info)
	q, args := f.b.ChangesQuery(info, info.Offset, rp)
	rows, err := f.b.DB().QueryContext(t.Context(), q, args...)
	if err != nil {
		t.Fatalf("%s\n%v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	want := []string{cdc.ColChangeType, cdc.ColCommitVersion, cdc.ColCommitTimestamp, "id", "name", "amount", "status"}
	if !equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	var n int
	for rows.Next() {
		var typ string
		var ver int64
		var ts, id, name, amount, status any
		if err := rows.Scan(&typ, &ver, &ts, &id, &name, &amount, &status); err != nil {
			t.Fatal(err)
		}
		if typ != got[n].Op.String() || ver != got[n].CommitVersion {
			t.Errorf("row %d: %s %d, Changes gave %s %d", n, typ, ver, got[n].Op, got[n].CommitVersion)
		}
		n++
	}
	if n != len(got) || n != 2 {
		t.Errorf("query returned %d rows, Changes %d, want 2", n, len(got))
	}
	_, bad := f.b.ChangesQuery(info, rp, info.Offset)
	if bad != nil {
		t.Errorf("bad range: args %v", bad)
	}
}

func TestDescribeShowDrop(t *testing.T) {
	f := newFixture(t, "sqlite::memory:")
	f.orders()
	f.sql(`INSERT INTO orders VALUES (1, 'Alice', '1.00', 'x'), (2, 'Bob', '2.00', 'y')`)
	rs := f.exec(&dsl.DescribeStream{Stream: "S"})
	row := map[string]any{}
	for i, c := range rs.Columns {
		row[c.Name] = rs.Rows[0][i]
	}
	if row["pending_changes"] != int64(2) || row["table_name"] != "orders" || row["mode"] != "STANDARD" {
		t.Errorf("DESCRIBE = %v", row)
	}
	rs = f.exec(&dsl.ShowStreams{})
	if len(rs.Rows) != 1 || rs.Rows[0][0] != "s" {
		t.Errorf("SHOW = %v", rs.Rows)
	}
	_, err := f.b.Exec(t.Context(), &dsl.DropTable{Table: "orders"})
	if !errors.Is(err, sqlite.ErrStreamsExist) {
		t.Errorf("DROP TABLE with a stream: %v", err)
	}
	f.exec(&dsl.DropStream{Stream: "s"})
	f.exec(&dsl.SetChangeTracking{Table: "orders", Enabled: false})
	f.sql(`INSERT INTO orders VALUES (3, 'C', '1.00', 'x')`) // no triggers left
	f.exec(&dsl.SetChangeTracking{Table: "orders", Enabled: true})
	f.exec(&dsl.DropTable{Table: "orders"})
	var n int
	if err := f.b.DB().QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema WHERE name LIKE 'sluice_changes_%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("change log left after DROP TABLE: %d %v", n, err)
	}
	_, err = f.b.Exec(t.Context(), &dsl.SetChangeTracking{Table: "orders", Enabled: true})
	if !errors.Is(err, sqlite.ErrNoTable) {
		t.Errorf("tracking on a dropped table: %v", err)
	}
}

func TestIdentity(t *testing.T) {
	dir := t.TempDir()
	a := newFixture(t, "sqlite:"+dir+"/x.db")
	b := newFixture(t, "sqlite://"+dir+"/x.db")
	if a.b.Identity() != b.b.Identity() || a.b.Identity() != dir+"/x.db" {
		t.Errorf("identities %q %q", a.b.Identity(), b.b.Identity())
	}
	m1 := newFixture(t, "sqlite::memory:")
	m2 := newFixture(t, "sqlite::memory:")
	if m1.b.Identity() == m2.b.Identity() {
		t.Errorf("two in-memory databases share identity %q", m1.b.Identity())
	}
}

// TestDecimalSameNumberIsNoChange: a DECIMAL is stored as text whose form
// depends on the writer ('2', '2.00', 2); an update to the same number is
// no change in a STANDARD stream (DESIGN.md), as on PostgreSQL, while an
// update to another number is one.
func TestDecimalSameNumberIsNoChange(t *testing.T) {
	f := newFixture(t, "")
	f.exec(&dsl.CreateTable{Table: "orders", Schema: conformance.Orders.Schema})
	f.sql(`INSERT INTO orders VALUES (1, 'Alice', '2', 'x'), (2, 'Bob', '2.00', 'x'), (3, 'Carol', 2, 'x'), (4, 'Dave', '2.5', 'x')`)
	f.exec(&dsl.SetChangeTracking{Table: "orders", Enabled: true})
	f.exec(&dsl.CreateStream{Stream: "s", Table: "orders"})
	f.sql(`UPDATE orders SET amount = '2.00' WHERE id = 1`)
	f.sql(`UPDATE orders SET amount = '9' WHERE id = 2`)
	f.sql(`UPDATE orders SET amount = 2 WHERE id = 2`)
	f.sql(`UPDATE orders SET amount = '2.0' WHERE id = 3`)
	f.sql(`UPDATE orders SET amount = '2.51' WHERE id = 4`)
	got, _ := f.read(f.info("s"))
	var ids []string
	for _, c := range got {
		ids = append(ids, fmt.Sprint(c.Op, " ", c.Row[0]))
	}
	if want := []string{"UPDATE_BEFORE 4", "UPDATE_AFTER 4"}; !equal(ids, want) {
		t.Fatalf("changes %v, want %v", ids, want)
	}
}
