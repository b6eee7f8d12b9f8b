package sqlite_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
	"github.com/sluicedata/sluice/runner"
)

// pushPlan builds the plan of "filter; select items → table (mode, keys)"
// on stream s by hand (package runner builds it in production).
func pushPlan(t *testing.T, info *runner.StreamInfo, filter string, items []string, table string, mode plan.Mode, keys []string) *plan.Plan {
	t.Helper()
	ss := cdc.StreamSchema(info.TableSchema)
	scope := expr.Scope{{Schema: ss}}
	p := &plan.Plan{
		Job:    &plan.Job{Name: "job"},
		Source: plan.SourceStage{Backend: "sqlite", Stream: info.Name, Table: info.Table, Mode: info.Mode, Schema: ss, TableSchema: info.TableSchema},
		Sink:   plan.SinkStage{Backend: "sqlite", Table: table, Mode: mode, Keys: keys},
	}
	if filter != "" {
		e, err := expr.Parse(filter, pos.Pos{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.BindPredicate(scope)
		if err != nil {
			t.Fatal(err)
		}
		p.Filter = &plan.FilterStage{Text: filter, Expr: b}
		keep := expr.PossibleOps(b, 0, 0) // as the runner's planning does
		for _, op := range []cdc.Op{cdc.OpInsert, cdc.OpUpdateBefore, cdc.OpUpdateAfter, cdc.OpDelete} {
			if !slices.Contains(keep, op) {
				p.Filter.Dropped = append(p.Filter.Dropped, op)
			}
		}
	}
	for _, it := range items {
		e, name, err := expr.ParseSelectItem(it, pos.Pos{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.Bind(scope)
		if err != nil {
			t.Fatal(err)
		}
		p.Project = append(p.Project, plan.ProjectItem{Name: name, Text: it, Type: b.Type(), Expr: b})
		p.Sink.Schema.Columns = append(p.Sink.Schema.Columns, cdc.Column{Name: name, Type: b.Type()})
	}
	p.Sink.Schema.Key = keys
	return p
}

func (f *fixture) rows(q string) []string {
	f.t.Helper()
	rs, err := f.b.DB().QueryContext(f.t.Context(), q)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	var out []string
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			f.t.Fatal(err)
		}
		var s []string
		for _, v := range vals {
			s = append(s, cdc.FormatValue(v, cdc.Type{}))
		}
		out = append(out, strings.Join(s, " "))
	}
	return out
}

func TestPushdownAppendAndMerge(t *testing.T) {
	f := newFixture(t, "")
	f.script(`
CREATE TABLE orders (id INT, name STRING, amount DECIMAL(10,2), status STRING, PRIMARY KEY (id));
ALTER TABLE orders SET PROPERTIES ('change_tracking' = 'true');
INSERT INTO orders VALUES (1, 'Alice', 1000.00, 'active'), (2, 'Bob', 2000.00, 'active'), (3, 'Carol', 500.00, 'active');
CREATE TABLE orders_merge (id INT, name STRING, amount DECIMAL(10,2), status STRING, PRIMARY KEY (id));
INSERT INTO orders_merge SELECT * FROM orders;
CREATE TABLE STREAM s ON TABLE orders WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
CREATE TABLE STREAM m ON TABLE orders WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
INSERT INTO orders VALUES (4, 'Dave', 3000.00, 'active');
UPDATE orders SET amount = 1500.00 WHERE id = 1;
DELETE FROM orders WHERE id = 3;
`)
	ctx := t.Context()
	info := f.info("s")
	p := pushPlan(t, info, "`__change_type` IN ('INSERT', 'UPDATE_AFTER')", []string{"id", "name", "amount", "upper(status) AS status"}, "orders_target", plan.ModeAppend, nil)
	pp, err := f.b.Pushdown(ctx, p, info)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range pp.Steps() {
		t.Logf("%s: %s\n%s", s.Where, s.What, s.SQL)
	}
	stats, from, to, err := pp.Run(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if stats.Read[cdc.OpDelete] != 1 || stats.Read[cdc.OpUpdateBefore] != 1 || stats.Read[cdc.OpInsert] != 1 {
		t.Errorf("read stats %v", stats.Read)
	}
	if !from.Equal(info.Offset) || to.Equal(from) {
		t.Errorf("offsets %s → %s", from, to)
	}
	got := f.rows(`SELECT * FROM orders_target ORDER BY id`)
	want := []string{"1 Alice 1500.00 ACTIVE", "4 Dave 3000.00 ACTIVE"}
	if !equal(got, want) {
		t.Errorf("target %q, want %q", got, want)
	}
	if f.info("s").Offset.String() != to.String() {
		t.Errorf("stream offset %s, want %s", f.info("s").Offset, to)
	}
	// A second run consumes nothing.
	if _, _, _, err := pp.Run(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	if got := f.rows(`SELECT count(*) FROM orders_target`); got[0] != "2" {
		t.Errorf("second run wrote rows: %v", got)
	}

	mi := f.info("m")
	mp := pushPlan(t, mi, "", []string{"id", "name", "amount", "status"}, "orders_merge", plan.ModeMerge, []string{"id"})
	mpp, err := f.b.Pushdown(ctx, mp, mi)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := mpp.Run(ctx, "merge_job"); err != nil {
		t.Fatal(err)
	}
	got = f.rows(`SELECT * FROM orders_merge ORDER BY id`)
	want = []string{"1 Alice 1500.00 active", "2 Bob 2000.00 active", "4 Dave 3000.00 active"}
	if !equal(got, want) {
		t.Errorf("merge target %q, want %q", got, want)
	}
	if n := f.rows(`SELECT count(*) FROM sluice_changes_orders`); n[0] != "0" {
		t.Errorf("change log not purged after both streams consumed: %v", n)
	}
}
