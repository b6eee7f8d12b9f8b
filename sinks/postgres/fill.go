package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
)

// fillTable is the TEMP table FillColumns stages a chunk's rows in.
const fillTable = "sluice_fill"

// FillColumns implements runner.ColumnFiller: the rows (keys then cols,
// canonical values) go into a TEMP table by COPY, each column in the
// target column's type (as text where pgx cannot COPY the type's binary
// form: json, uuid, arrays, …, cast back by the UPDATE), and one UPDATE …
// FROM sets the target's columns cols of the rows whose keys match. The
// TEMP table is dropped at commit. Errors name the target and wrap the
// database's.
func (t *Tx) FillColumns(ctx context.Context, keys, cols []cdc.Column, rows [][]any) error {
	all := append(slices.Clone(keys), cols...)
	defs := make([]string, len(all))
	names := make([]string, len(all))
	casts := make([]string, len(all))
	native := make([]bool, len(all))
	for i, c := range all {
		tc, ok := t.targetColumn(c.Name)
		if !ok {
			return fmt.Errorf("postgres sink: fill column %s of %s: the target has no such column", c.Name, Quote(t.c.table))
		}
		names[i] = tc.Name
		native[i] = tc.Native
		if tc.Native {
			defs[i] = Quote(tc.Name) + " " + tc.PGType
			casts[i] = "f." + Quote(tc.Name)
		} else {
			defs[i] = Quote(tc.Name) + " text"
			casts[i] = "f." + Quote(tc.Name) + "::" + tc.PGType
		}
	}
	if _, err := t.tx.Exec(ctx, "DROP TABLE IF EXISTS pg_temp."+fillTable); err != nil {
		return fmt.Errorf("postgres sink: fill the new columns of %s: %w", Quote(t.c.table), err)
	}
	if _, err := t.tx.Exec(ctx, "CREATE TEMP TABLE "+fillTable+" ("+strings.Join(defs, ", ")+") ON COMMIT DROP"); err != nil {
		return fmt.Errorf("postgres sink: fill the new columns of %s: %w", Quote(t.c.table), err)
	}
	enc := make([][]any, len(rows))
	for r, row := range rows {
		out := make([]any, len(row))
		for i, v := range row {
			switch {
			case v == nil:
			case native[i]:
				out[i] = Encode(v, all[i].Type)
			default:
				out[i] = cdc.FormatValue(v, all[i].Type)
			}
		}
		enc[r] = out
	}
	if _, err := t.tx.CopyFrom(ctx, pgx.Identifier{fillTable}, names, pgx.CopyFromRows(enc)); err != nil {
		return fmt.Errorf("postgres sink: fill the new columns of %s: %w", Quote(t.c.table), err)
	}
	set := make([]string, len(cols))
	for i := range cols {
		j := len(keys) + i
		set[i] = Quote(names[j]) + " = " + casts[j]
	}
	on := make([]string, len(keys))
	for i := range keys {
		on[i] = "d." + Quote(names[i]) + " = " + casts[i]
	}
	if _, err := t.tx.Exec(ctx, fmt.Sprintf("UPDATE %s d SET %s FROM pg_temp.%s f WHERE %s",
		Quote(t.c.table), strings.Join(set, ", "), fillTable, strings.Join(on, " AND "))); err != nil {
		return fmt.Errorf("postgres sink: fill the new columns of %s: %w", Quote(t.c.table), err)
	}
	return nil
}

// targetColumn returns the target's column named name (cdc.Schema.Index:
// exact, else case-insensitive).
func (t *Tx) targetColumn(name string) (Column, bool) {
	if i := t.c.target.Schema().Index(name); i >= 0 {
		return t.c.target.Columns[i], true
	}
	return Column{}, false
}
