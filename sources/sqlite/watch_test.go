package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/conformance"
	"github.com/sluicedata/sluice/sources/sqlite"
)

// TestLogWatchPositions: a stream's position moves with every change logged
// for its table, an ALTER TABLE and the stream's re-creation, and with
// nothing else — not with writes to an untracked table or to another
// tracked table, nor with reads; a database without sluice's catalog, and
// a table without a stream, have no positions.
func TestLogWatchPositions(t *testing.T) {
	url := "sqlite:" + filepath.Join(t.TempDir(), "w.db")
	f := newFixture(t, url)
	w, err := sqlite.OpenLogWatch(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pos := func() map[string]string {
		t.Helper()
		p, err := w.Positions(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := pos(); len(p) != 0 {
		t.Fatalf("untracked database: positions %v, want none", p)
	}
	f.exec(&dsl.CreateTable{Table: "Orders", Schema: conformance.Orders.Schema})
	f.exec(&dsl.SetChangeTracking{Table: "Orders", Enabled: true})
	f.sql("CREATE TABLE other (x INTEGER)")
	if p := pos(); len(p) != 0 {
		t.Fatalf("no stream yet: positions %v, want none", p)
	}
	f.exec(&dsl.CreateStream{Stream: "S", Table: "Orders"})
	f.exec(&dsl.CreateTable{Table: "second", Schema: conformance.Orders.Schema})
	f.exec(&dsl.SetChangeTracking{Table: "second", Enabled: true})
	f.exec(&dsl.CreateStream{Stream: "s2", Table: "second"})
	if pos()[sqlite.WatchKey("S")] == "" {
		t.Fatalf("stream S has no position under key %q: %v", sqlite.WatchKey("S"), pos())
	}
	type step struct {
		name  string
		sql   string
		moves bool
	}
	for _, s := range []step{
		{"insert into an untracked table", "INSERT INTO other VALUES (1)", false},
		{"insert into another tracked table", "INSERT INTO second (id, name, amount, status) VALUES (1, 'a', '1.50', 'new')", false},
		{"a read", "SELECT count(*) FROM orders", false},
		{"insert", "INSERT INTO orders (id, name, amount, status) VALUES (1, 'a', '1.50', 'new')", true},
		{"update", "UPDATE orders SET status = 'paid' WHERE id = 1", true},
		{"an update that matches no row", "UPDATE orders SET status = 'x' WHERE id = 99", false},
		{"delete", "DELETE FROM orders WHERE id = 1", true},
		{"add column", "ALTER TABLE orders ADD COLUMN note TEXT", true},
	} {
		before := pos()["s"]
		f.sql(s.sql)
		after := pos()["s"]
		if (after != before) != s.moves {
			t.Errorf("%s: position %q → %q, want moved=%v", s.name, before, after, s.moves)
		}
	}
	before := pos()["s"]
	f.exec(&dsl.DropStream{Stream: "s"})
	if _, ok := pos()["s"]; ok {
		t.Errorf("dropped stream s still has a position")
	}
	f.exec(&dsl.CreateStream{Stream: "s", Table: "Orders"})
	if after := pos()["s"]; after == before || after == "" {
		t.Errorf("stream s dropped and created again: position %q → %q, want a new one", before, after)
	}
}
