package changerel

import (
	"strings"

	"github.com/sluicedata/sluice/cdc"
)

// RowText renders the row of ch for an error: its key as "(k1=v1, k2=v2)"
// (keyIdx: the key columns' positions in s, names: their names), or, with
// no key columns, all its values as "(c1=v1, c2=v2, …)", each value cut
// to 40 characters.
func RowText(ch *cdc.Change, s cdc.Schema, keyIdx []int, names []string) string {
	var parts []string
	if len(keyIdx) > 0 {
		for j, i := range keyIdx {
			parts = append(parts, names[j]+"="+cdc.FormatValue(ch.Row[i], s.Columns[i].Type))
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	for i, c := range s.Columns {
		if i >= len(ch.Row) || !ch.Has(i) {
			continue
		}
		v := cdc.FormatValue(ch.Row[i], c.Type)
		if r := []rune(v); len(r) > 40 {
			v = string(r[:40]) + "…"
		}
		parts = append(parts, c.Name+"="+v)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// RowLabel is RowText for an error message: "row with key (k1=v1)", or
// "row (c1=v1, c2=v2)" for a row without key columns.
func RowLabel(ch *cdc.Change, s cdc.Schema, keyIdx []int, names []string) string {
	if len(keyIdx) > 0 {
		return "row with key " + RowText(ch, s, keyIdx, names)
	}
	return "row " + RowText(ch, s, keyIdx, names)
}
