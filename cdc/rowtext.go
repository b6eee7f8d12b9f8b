package cdc

import (
	"fmt"
	"strings"
)

// RowText renders the identity of ch's row for an error: its key as
// "(k1=v1, k2=v2)" (keyIdx: the key columns' positions in s, names: their
// names), or, with no key columns, its change type and commit version as
// "(INSERT of commit version 12)". Other values of the row never appear: an
// error may be logged, stored in the run history and shown by status.
func RowText(ch *Change, s Schema, keyIdx []int, names []string) string {
	if len(keyIdx) == 0 {
		return fmt.Sprintf("(%s of commit version %d)", ch.Op, ch.CommitVersion)
	}
	parts := make([]string, 0, len(keyIdx))
	for j, i := range keyIdx {
		parts = append(parts, names[j]+"="+FormatValue(ch.Row[i], s.Columns[i].Type))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// RowLabel is RowText for an error message: "row with key (k1=v1)", or
// "row (INSERT of commit version 12)" for a row without key columns.
func RowLabel(ch *Change, s Schema, keyIdx []int, names []string) string {
	if len(keyIdx) > 0 {
		return "row with key " + RowText(ch, s, keyIdx, names)
	}
	return "row " + RowText(ch, s, keyIdx, names)
}
