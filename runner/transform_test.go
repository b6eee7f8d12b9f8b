package runner

import (
	"fmt"
	"maps"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/pos"
)

// TestTransformProjections: a projection of every table column in order
// (no select list) hands each change on as it is, a column a partial row
// does not carry as NULL; reordered, renamed-by-expression and filtered
// projections evaluate. Each case's rows are written out by hand.
func TestTransformProjections(t *testing.T) {
	table := cdc.Schema{Columns: []cdc.Column{
		{Name: "id", Type: cdc.Type{Kind: cdc.KindBigInt}},
		{Name: "user", Type: cdc.Type{Kind: cdc.KindString}},
		{Name: "qty", Type: cdc.Type{Kind: cdc.KindBigInt}},
	}, Key: []string{"id"}}
	scope := expr.Scope{{Schema: cdc.StreamSchema(table)}}
	bind := func(src string) *expr.Bound {
		t.Helper()
		e, err := expr.Parse(src, pos.Pos{Line: 1, Col: 1})
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.Bind(scope)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	batch := func() []cdc.Change {
		return []cdc.Change{
			{Op: cdc.OpInsert, CommitVersion: 1, Row: []any{int64(1), "a", int64(10)}},
			// A partial row: qty not carried (a stale value the source left
			// in Row must not leak), user set to NULL.
			{Op: cdc.OpUpdateAfter, CommitVersion: 2, Row: []any{int64(2), nil, int64(99)}, Present: []bool{true, true, false}},
			{Op: cdc.OpDelete, CommitVersion: 3, Row: []any{int64(3), nil, nil}, Present: []bool{true, false, false}},
		}
	}
	render := func(chs []cdc.Change) []string {
		var out []string
		for _, c := range chs {
			out = append(out, fmt.Sprintf("%s %d %v %v", c.Op, c.CommitVersion, c.Row, c.Present))
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		project []string
		filter  string
		pass    bool
		want    []string
	}{
		{"every column in order", []string{"id", "user", "qty"}, "", true, []string{
			"INSERT 1 [1 a 10] []",
			"UPDATE_AFTER 2 [2 <nil> <nil>] [true true false]",
			"DELETE 3 [3 <nil> <nil>] [true false false]",
		}},
		{"filtered, every column", []string{"id", "user", "qty"}, "id <> 1", true, []string{
			"UPDATE_AFTER 2 [2 <nil> <nil>] [true true false]",
			"DELETE 3 [3 <nil> <nil>] [true false false]",
		}},
		{"reordered", []string{"qty", "id"}, "", false, []string{
			"INSERT 1 [10 1] []",
			"UPDATE_AFTER 2 [<nil> 2] [false true]",
			"DELETE 3 [<nil> 3] [false true]",
		}},
		{"an expression", []string{"id", "user", "qty + 1"}, "", false, []string{
			"INSERT 1 [1 a 11] []",
			"UPDATE_AFTER 2 [2 <nil> <nil>] [true true false]",
			"DELETE 3 [3 <nil> <nil>] [true false false]",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prep := &Prepared{stream: &StreamInfo{TableSchema: table}}
			for _, p := range tc.project {
				b := bind(p)
				var reads []int
				for _, ref := range b.Columns() {
					if ref.Col >= len(cdc.MetadataColumns) {
						reads = append(reads, ref.Col-len(cdc.MetadataColumns))
					}
				}
				prep.project = append(prep.project, b)
				prep.present = append(prep.present, reads)
			}
			if tc.filter != "" {
				prep.filter = bind(tc.filter)
			}
			if got := prep.passThrough(len(cdc.MetadataColumns)); got != tc.pass {
				t.Errorf("passThrough = %v, want %v", got, tc.pass)
			}
			read := map[cdc.Op]int64{}
			out, err := prep.transform(batch(), read)
			if err != nil {
				t.Fatal(err)
			}
			if got := render(out); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("projected\n got %q\nwant %q", got, tc.want)
			}
			if want := map[cdc.Op]int64{cdc.OpInsert: 1, cdc.OpUpdateAfter: 1, cdc.OpDelete: 1}; !maps.Equal(read, want) {
				t.Errorf("read %v, want %v", read, want)
			}
		})
	}
}
