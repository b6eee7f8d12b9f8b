package sqlite

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

func init() {
	// The sqlite backend registers expr's functions; these tests open the
	// database themselves.
	fs := make([]sqlitex.Function, len(expr.SQLiteFunctions))
	for i, f := range expr.SQLiteFunctions {
		fs[i] = sqlitex.Function{Name: f.Name, NArgs: int32(f.NArgs), Fn: f.Func}
	}
	if err := sqlitex.RegisterFunctions(fs); err != nil {
		panic(err)
	}
}

func e(text string) *plan.Expr { return &plan.Expr{Text: text, Pos: pos.Pos{Line: 1, Col: 1}} }

// seedMerge is the seed's MERGE INTO orders_target AS t USING … AS s.
func seedMerge() *plan.Merge {
	return &plan.Merge{TargetAlias: "t", SourceAlias: "s", On: []plan.KeyPair{{Target: "id", Source: "id"}},
		Clauses: []plan.WhenClause{
			{Matched: true, Action: plan.ActionUpdate, Set: []plan.Assignment{
				{Column: "t.name", Value: *e("s.name")}, {Column: "t.amount", Value: *e("s.amount")}, {Column: "t.status", Value: *e("s.status")}}},
			{Matched: false, Action: plan.ActionInsert, InsertColumns: []string{"id", "name", "amount", "status"},
				InsertValues: []plan.Expr{*e("s.id"), *e("s.name"), *e("s.amount"), *e("s.status")}},
		}}
}

// The seed's target (no primary key, as the seed creates it) holding Alice
// and Carol.
var seedTarget = []string{
	`CREATE TABLE orders_target (id INT, name TEXT, amount DECIMAL_TEXT(10,2), status TEXT)`,
	`INSERT INTO orders_target VALUES (1, 'Alice', '1000.00', 'active'), (3, 'Carol', '500.00', 'active')`,
}

func mergeStage(m *plan.Merge) *plan.SinkStage {
	st := stage("orders_target", plan.ModeMerge, nil, orders)
	st.Merge = m
	return st
}

func TestMergeInto(t *testing.T) {
	const I, UB, UA, D = cdc.OpInsert, cdc.OpUpdateBefore, cdc.OpUpdateAfter, cdc.OpDelete
	// The seed's stream filtered on INSERT/UPDATE_AFTER.
	filtered := []cdc.Change{
		ch(I, 4, int64(4), "Dave", dec("3000"), "active"),
		ch(UA, 5, int64(1), "Alice", dec("1500"), "active"),
	}
	withDelete := func() *plan.Merge {
		m := seedMerge()
		m.Clauses = append([]plan.WhenClause{
			{Matched: true, Cond: e("s.status = 'gone'"), Action: plan.ActionDelete},
		}, m.Clauses...)
		return m
	}
	tests := []struct {
		name    string
		merge   *plan.Merge
		batch   []cdc.Change
		want    []string
		written map[cdc.Op]int64
		wantErr []string
	}{
		{name: "the seed's MERGE over the filtered stream", merge: seedMerge(), batch: filtered,
			want:    []string{"1|Alice|1500.00|active", "3|Carol|500.00|active", "4|Dave|3000.00|active"},
			written: map[cdc.Op]int64{I: 1, UA: 1}},
		{name: "first applicable clause wins", merge: withDelete(),
			batch: []cdc.Change{ch(UA, 5, int64(1), "Alice", dec("1"), "gone"), ch(UA, 5, int64(3), "Carol", dec("2"), "kept")},
			want:  []string{"3|Carol|2.00|kept"}, written: map[cdc.Op]int64{UA: 2}},
		{name: "condition false falls through to no action",
			merge: func() *plan.Merge {
				m := seedMerge()
				m.Clauses[0].Cond = e("s.amount > t.amount")
				return m
			}(),
			batch:   []cdc.Change{ch(UA, 5, int64(1), "Alice", dec("999.99"), "x"), ch(UA, 5, int64(3), "Carol", dec("500.01"), "y")},
			want:    []string{"1|Alice|1000.00|active", "3|Carol|500.01|y"},
			written: map[cdc.Op]int64{UA: 1}},
		{name: "matched-ness is evaluated before the merge",
			// Key 9 is new: inserted once; the WHEN MATCHED clause does not
			// see the row inserted by the same MERGE.
			merge:   seedMerge(),
			batch:   []cdc.Change{ch(I, 6, int64(9), "Ivy", dec("9"), "new")},
			want:    []string{"1|Alice|1000.00|active", "3|Carol|500.00|active", "9|Ivy|9.00|new"},
			written: map[cdc.Op]int64{I: 1}},
		{name: "expressions in SET and VALUES",
			merge: func() *plan.Merge {
				m := seedMerge()
				m.Clauses[0].Set = []plan.Assignment{{Column: "amount", Value: *e("t.amount + s.amount")}, {Column: "name", Value: *e("upper(s.name)")}}
				m.Clauses[1].InsertValues[2] = *e("s.amount * 2")
				return m
			}(),
			batch:   []cdc.Change{ch(UA, 5, int64(1), "alice", dec("0.5"), "x"), ch(I, 6, int64(5), "Eve", dec("1.25"), "new")},
			want:    []string{"1|ALICE|1000.50|active", "3|Carol|500.00|active", "5|Eve|2.50|new"},
			written: map[cdc.Op]int64{UA: 1, I: 1}},
		{name: "an unfiltered UPDATE pair is a cardinality error", merge: seedMerge(),
			batch: []cdc.Change{ch(UB, 5, int64(1), "Alice", dec("1000"), "active"), ch(UA, 5, int64(1), "Alice", dec("1500"), "active")},
			want:  []string{"1|Alice|1000.00|active", "3|Carol|500.00|active"},
			wantErr: []string{"key (id=1) is touched by 2 source rows (UPDATE_BEFORE, UPDATE_AFTER)",
				"`__change_type` IN ('INSERT', 'UPDATE_AFTER')"}},
		{name: "one new key inserted twice is a cardinality error", merge: seedMerge(),
			batch:   []cdc.Change{ch(I, 5, int64(8), "A", dec("1"), "x"), ch(I, 6, int64(8), "B", dec("2"), "x")},
			want:    []string{"1|Alice|1000.00|active", "3|Carol|500.00|active"},
			wantErr: []string{"key (id=8) is touched by 2 source rows (INSERT, INSERT)"}},
		{name: "value that does not fit names key and column", merge: seedMerge(),
			batch:   []cdc.Change{ch(UA, 5, int64(3), "Carol", dec("123456789"), "x")},
			want:    []string{"1|Alice|1000.00|active", "3|Carol|500.00|active"},
			wantErr: []string{"id=3", `column "amount"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			exec(t, db, seedTarget...)
			st := mergeStage(tc.merge)
			if tc.name == "value that does not fit names key and column" {
				st.Schema = cdc.Schema{Columns: append(append([]cdc.Column(nil), orders.Columns...)[:2], cdc.Column{Name: "amount", Type: cdc.Decimal(20, 2)}, orders.Columns[3])}
			}
			stats, err := runBatches(t, db, st, cpAt("5"), tc.batch)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if strings.Contains(tc.name, "cardinality") && !errors.Is(err, ErrMergeCardinality) {
					t.Errorf("error does not wrap ErrMergeCardinality")
				}
				if tc.want != nil {
					checkRows(t, dump(t, db, "orders_target", "id"), tc.want)
				}
				if off := storedOffset(t, db, "job1"); off != "" {
					t.Errorf("checkpoint stored after a failed MERGE: %q", off)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, dump(t, db, "orders_target", "id"), tc.want)
			if len(stats.Written) != len(tc.written) {
				t.Errorf("written = %v, want %v", stats.Written, tc.written)
			}
			for op, n := range tc.written {
				if stats.Written[op] != n {
					t.Errorf("written = %v, want %v", stats.Written, tc.written)
				}
			}
		})
	}
}

func TestMergeIntoConditionalClausesFilterTheUpdatePair(t *testing.T) {
	// Instead of filtering the stream, clauses may pick the change types:
	// the UPDATE_BEFORE takes no clause, so key 1 is touched once.
	db := openDB(t)
	exec(t, db, seedTarget...)
	s := cdc.Schema{Columns: append([]cdc.Column{{Name: "op", Type: cdc.TypeString}}, orders.Columns...)}
	m := seedMerge()
	m.Clauses[0].Cond = e("s.op = 'UPDATE_AFTER'")
	m.Clauses = append(m.Clauses[:1], plan.WhenClause{Matched: true, Cond: e("s.op = 'DELETE'"), Action: plan.ActionDelete}, m.Clauses[1])
	m.Clauses[2].Cond = e("s.op <> 'DELETE'")
	st := stage("orders_target", plan.ModeMerge, nil, s)
	st.Merge = m
	row := func(op cdc.Op, ver int64, r ...any) cdc.Change {
		return ch(op, ver, append([]any{op.String()}, r...)...)
	}
	_, err := runBatches(t, db, st, cpAt("6"), []cdc.Change{
		row(cdc.OpUpdateBefore, 3, int64(1), "Alice", dec("1000"), "active"),
		row(cdc.OpDelete, 3, int64(3), "Carol", dec("500"), "active"),
		row(cdc.OpInsert, 4, int64(4), "Dave", dec("3000"), "active"),
		row(cdc.OpUpdateAfter, 5, int64(1), "Alice", dec("1500"), "active"),
	})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, dump(t, db, "orders_target", "id"), []string{"1|Alice|1500.00|active", "4|Dave|3000.00|active"})
}

func TestMergeIntoNeedsTarget(t *testing.T) {
	db := openDB(t)
	_, err := runBatches(t, db, mergeStage(seedMerge()), cpAt("1"))
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err = %v", err)
	}
}
