package sqlite_test

import (
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sources/sqlite"
)

// TestCheckedColumns: a backfill inside SQLite lets the target skip its
// DECIMAL CHECK only for a column copied as stored from a source column
// that carries the same CHECK: sluice's own table (CREATE TABLE of the
// dialect), a bare reference, renamed or not; not a computed value, and
// not a column of a table created without the CHECK, even declared as
// sluice declares DECIMAL.
func TestCheckedColumns(t *testing.T) {
	url := "sqlite:" + filepath.Join(t.TempDir(), "c.db")
	f := newFixture(t, url)
	f.orders()
	f.sql(`CREATE TABLE plain (id BIGINT NOT NULL, amount DECIMAL_TEXT(10,2), PRIMARY KEY (id))`)
	f.exec(&dsl.SetChangeTracking{Table: "plain", Enabled: true})
	f.exec(&dsl.CreateStream{Stream: "p", Table: "plain"})
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: url}
	t.Cleanup(func() { r.Close() })
	for _, tc := range []struct {
		name, job, table string
		want             []string
	}{
		{"sluice's table", "source: s\nsink: {table: t1, mode: append}\n", "orders", []string{"amount"}},
		{"renamed", "source: s\nselect: [id, amount AS amt]\nsink: {table: t2, mode: append}\n", "orders", []string{"amt"}},
		{"computed", "source: s\nselect: [id, amount + amount AS amount]\nsink: {table: t3, mode: append}\n", "orders", nil},
		{"a table without the CHECK", "source: p\nsink: {table: t4, mode: append}\n", "plain", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := dsl.ParseJob("j.yaml", []byte("name: j\n"+tc.job))
			if err != nil {
				t.Fatal(err)
			}
			prep, err := r.Plan(t.Context(), j)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sqlite.CheckedColumnsOf(t.Context(), f.b, prep.Plan, tc.table)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("checked columns %q, want %q", got, tc.want)
			}
		})
	}
}
