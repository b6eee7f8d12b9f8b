package sqlite

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/sluicedata/sluice/cdc"
	"modernc.org/sqlite"
)

// Naming the row of a NOT NULL violation: SQLite's error
// (SQLITE_CONSTRAINT_NOTNULL) names the table and column but not the row,
// so the rows staged are noted as they come (changerel.NullSuspects).

// sqliteConstraintNotNull is SQLITE_CONSTRAINT_NOTNULL
// (https://www.sqlite.org/rescode.html#constraint_notnull).
const sqliteConstraintNotNull = 1299

// notNullColumn matches SQLite's message "NOT NULL constraint failed:
// <table>.<column>".
var notNullColumn = regexp.MustCompile(`NOT NULL constraint failed: (.+)`)

// notNullError returns err (a failed merge of the staged rows) with the
// row named when it is a NOT NULL violation of a column a suspect writes
// NULL into: "row with key (id=2), column "name": cannot store NULL as
// STRING: the target column is NOT NULL". Other errors are returned as
// they are.
func (t *Tx) notNullError(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) || se.Code() != sqliteConstraintNotNull {
		return err
	}
	m := notNullColumn.FindStringSubmatch(se.Error())
	if m == nil {
		return err
	}
	for i, name := range t.c.columns {
		if !t.c.notNull[i] || !hasSuffixColumn(m[1], t.p.st.Table, name) {
			continue
		}
		if k, ok := t.nulls.First(i); ok {
			ve := &cdc.ValueError{Key: k.Key, Column: name, Type: t.c.types[i], Value: nil, Reason: "the target column is NOT NULL"}
			return fmt.Errorf("sqlite sink: write %q: %w (%w)", t.p.st.Table, ve, err)
		}
	}
	return err
}

// hasSuffixColumn reports whether msg (after "NOT NULL constraint failed:
// ") names table.column.
func hasSuffixColumn(msg, table, column string) bool {
	want := table + "." + column
	return len(msg) >= len(want) && msg[:len(want)] == want && (len(msg) == len(want) || msg[len(want)] == ' ')
}

// keyOf renders ch's key for changerel.NullSuspects.
func (t *Tx) keyOf(ch *cdc.Change) (string, []any) {
	key := make([]any, len(t.keyIdx))
	for j, i := range t.keyIdx {
		key[j] = rawText(t.keyName[j] + "=" + cdc.FormatValue(ch.Row[i], t.p.st.Schema.Columns[i].Type))
	}
	return t.keyText(ch), key
}
