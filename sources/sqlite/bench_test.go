package sqlite_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/conformance"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sources/sqlite"
)

// BenchmarkChanges reads the net changes of 100,000 inserts followed by
// 100,000 updates over 50,000 keys (b.N reads of the same pending changes).
func BenchmarkChanges(b *testing.B) {
	bk, err := sqlite.Open(b.Context(), "sqlite:"+b.TempDir()+"/bench.db", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bk.Close()
	f := &fixture{b: bk}
	ctx := b.Context()
	for _, st := range []dsl.Statement{
		&dsl.CreateTable{Table: "orders", Schema: conformance.Orders.Schema},
		&dsl.SetChangeTracking{Table: "orders", Enabled: true},
		&dsl.CreateStream{Stream: "s", Table: "orders"},
	} {
		if _, err := f.b.Exec(ctx, st); err != nil {
			b.Fatal(err)
		}
	}
	db := f.b.DB()
	if _, err := db.ExecContext(ctx, `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < 100000)
		INSERT INTO orders SELECT i, 'n' || i, printf('%d.00', i), 'a' FROM c`); err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE orders SET amount = printf('%d.50', id) WHERE id % 2 = 0`); err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM orders WHERE id % 7 = 0`); err != nil {
		b.Fatal(err)
	}
	info, err := f.b.Stream(ctx, runnerSource("s"))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		r, err := f.b.Changes(ctx, info, info.Offset, runner.ReadOptions{BatchSize: 1000})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			batch, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n += len(batch)
		}
		r.Close()
		b.ReportMetric(float64(n), "changes/op")
	}
}

func runnerSource(name string) plan.Source { return plan.Source{Stream: name} }

// BenchmarkStreamEachAfterDDL describes each of 300 tracked tables'
// streams once after an unrelated DDL (a new schema version: nothing of
// the capture checks is remembered), as serve's first runs do after a
// start or a DDL (issue #19). The checks read sqlite_schema, which has no
// index and grows with the tables: per table that is N scans of an
// O(N) schema; the result of each Stream (its table and columns) is
// checked.
func BenchmarkStreamEachAfterDDL(b *testing.B) {
	const n = 300
	ctx := b.Context()
	bk, err := sqlite.Open(ctx, "sqlite:"+b.TempDir()+"/bench.db", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bk.Close()
	db := bk.DB()
	for i := range n {
		t := fmt.Sprintf("t%d", i)
		if _, err := db.ExecContext(ctx, `CREATE TABLE `+t+` (id INTEGER PRIMARY KEY, v TEXT)`); err != nil {
			b.Fatal(err)
		}
		for _, st := range []dsl.Statement{&dsl.SetChangeTracking{Table: t, Enabled: true}, &dsl.CreateStream{Stream: "s_" + t, Table: t}} {
			if _, err := bk.Exec(ctx, st); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE other%d (x)`, i)); err != nil {
			b.Fatal(err)
		}
		for j := range n {
			info, err := bk.Stream(ctx, plan.Source{Stream: fmt.Sprintf("s_t%d", j)})
			if err != nil {
				b.Fatal(err)
			}
			if info.Table != fmt.Sprintf("t%d", j) || len(info.TableSchema.Columns) != 2 {
				b.Fatalf("stream s_t%d: table %s, columns %v", j, info.Table, info.TableSchema.Names())
			}
		}
	}
}
