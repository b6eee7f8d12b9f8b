package postgres

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sluicedata/sluice/cdc"
)

// Naming the row of a NOT NULL violation: PostgreSQL's not_null_violation
// (23502) names the column but not the row, and leaves the transaction
// unusable for a query that would find it, so the rows staged are noted as
// they come (changerel.NullSuspects): by a merge, and by an append whose
// rows are staged to be cast (jsonb, uuid, arrays…; an append COPYed
// straight into its target is named by the COPY's line, copyError).

// notNullError returns err (a failed merge of the staged rows) with the
// row named when it is a not_null_violation of a column a suspect writes
// NULL into: "row with key (id=2), column "name": cannot store NULL as
// STRING: the target column is NOT NULL". Other errors are returned as
// they are.
func (t *Tx) notNullError(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23502" || pe.ColumnName == "" {
		return err
	}
	for i, name := range t.c.columns {
		if name != pe.ColumnName {
			continue
		}
		if k, ok := t.nulls.First(i); ok {
			ve := &cdc.ValueError{Key: k.Key, Column: name, Type: t.c.types[i], Value: nil, Reason: "the target column is NOT NULL"}
			if len(k.Key) == 0 { // a row without key columns (append): "row (INSERT of commit version 12)"
				return fmt.Errorf("postgres sink: write %s: row %s: %w (%w)", Quote(t.p.st.Table), k.Text, ve, err)
			}
			return fmt.Errorf("postgres sink: write %s: %w (%w)", Quote(t.p.st.Table), ve, err)
		}
	}
	return err
}

// keyOf renders ch's key for changerel.NullSuspects.
func (t *Tx) keyOf(ch *cdc.Change) (string, []any) {
	key := make([]any, len(t.keyIdx))
	for j, i := range t.keyIdx {
		key[j] = rawText(t.keyName[j] + "=" + cdc.FormatValue(ch.Row[i], t.p.st.Schema.Columns[i].Type))
	}
	return t.keyText(ch), key
}
