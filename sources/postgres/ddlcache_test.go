package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
)

// TestSelectAfterDDL: `sluice sql` on one connection pool selects the same
// text before and after DDL changes the table's columns, from another
// session: the second SELECT returns the new columns (pgx's cached
// statement would fail with "cached plan must not change result type",
// SQLSTATE 0A000).
func TestSelectAfterDDL(t *testing.T) {
	ctx := context.Background()
	b, u := openDB(t)
	sqlExec(t, b, `CREATE TABLE t (id int PRIMARY KEY, v text)`, `INSERT INTO t VALUES (1, 'a')`)
	other := connect(ctx, t, u)
	sel := func(q string) *runner.ResultSet {
		t.Helper()
		st, err := dsl.ParseStatements("<test>", q)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := b.Exec(ctx, st[0])
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return rs
	}
	names := func(rs *runner.ResultSet) string {
		var n []string
		for _, c := range rs.Columns {
			n = append(n, c.Name)
		}
		return strings.Join(n, ",")
	}
	for _, round := range []struct{ ddl, table string }{
		{"", "id,v"},
		{`ALTER TABLE t ADD COLUMN x int`, "id,v,x"},
		{`ALTER TABLE t DROP COLUMN v`, "id,x"},
		{`ALTER TABLE t ALTER COLUMN x TYPE text`, "id,x"},
	} {
		if round.ddl != "" {
			if _, err := other.Exec(ctx, round.ddl); err != nil {
				t.Fatal(err)
			}
		}
		if got := names(sel("SELECT * FROM t")); got != round.table {
			t.Errorf("after %q: SELECT * FROM t has columns %s, want %s", round.ddl, got, round.table)
		}
		if got := names(sel("SELECT * FROM t")); got != round.table {
			t.Errorf("after %q, again: SELECT * FROM t has columns %s, want %s", round.ddl, got, round.table)
		}
	}
}
