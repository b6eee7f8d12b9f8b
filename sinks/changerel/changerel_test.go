package changerel

import (
	"testing"

	"github.com/sluicedata/sluice/cdc"
)

// TestNullSuspects: the first standing suspect of a NOT NULL column is the
// first key whose latest staged change writes NULL there; a later value or
// a DELETE of the key clears it, a partial row that does not carry the
// column leaves it, and Reset forgets all.
func TestNullSuspects(t *testing.T) {
	row := func(op cdc.Op, id int64, v any, present ...bool) cdc.Change {
		c := cdc.Change{Op: op, Row: []any{id, v}}
		if len(present) > 0 {
			c.Present = present
		}
		return c
	}
	s := cdc.Schema{Columns: []cdc.Column{{Name: "id", Type: cdc.TypeBigInt}, {Name: "v", Type: cdc.TypeString}}}
	keyOf := func(ch *cdc.Change) (string, []any) {
		txt := cdc.RowText(ch, s, []int{0}, []string{"id"})
		return txt, []any{txt}
	}
	notNull := []bool{false, true}
	for _, tc := range []struct {
		name    string
		changes []cdc.Change
		want    string // "" = no suspect
	}{
		{"none", []cdc.Change{row(cdc.OpInsert, 1, "a")}, ""},
		{"one", []cdc.Change{row(cdc.OpInsert, 1, "a"), row(cdc.OpInsert, 2, nil)}, "(id=2)"},
		{"cleared by a value", []cdc.Change{row(cdc.OpInsert, 1, nil), row(cdc.OpInsert, 2, nil), row(cdc.OpUpdateAfter, 1, "a")}, "(id=2)"},
		{"cleared by a delete", []cdc.Change{row(cdc.OpInsert, 1, nil), row(cdc.OpDelete, 1, nil)}, ""},
		{"kept by a partial row not carrying it", []cdc.Change{row(cdc.OpInsert, 1, nil), row(cdc.OpUpdateAfter, 1, "x", true, false)}, "(id=1)"},
		{"noted again after a clear", []cdc.Change{row(cdc.OpInsert, 1, nil), row(cdc.OpUpdateAfter, 1, "a"), row(cdc.OpUpdateAfter, 1, nil)}, "(id=1)"},
		{"UPDATE_BEFORE writes nothing", []cdc.Change{row(cdc.OpUpdateBefore, 1, nil)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ns NullSuspects
			for i := range tc.changes {
				ns.Note(&tc.changes[i], notNull, keyOf)
			}
			got, ok := ns.First(1)
			if (tc.want == "") == ok || (ok && got.Text != tc.want) {
				t.Errorf("First = %q, %v; want %q", got.Text, ok, tc.want)
			}
			ns.Reset()
			if _, ok := ns.First(1); ok {
				t.Error("a suspect after Reset")
			}
		})
	}
}
