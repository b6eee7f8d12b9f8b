package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
)

// FillsColumns marks the SQLite sink as one whose transactions fill
// columns by key (runner.ColumnFiller).
func (s *Sink) FillsColumns() bool { return true }

// FillColumns implements runner.ColumnFiller: the rows (keys then cols,
// canonical values) go into a TEMP table, each value as the sink stores
// it in the target's column (sqlitex.Encode of the column's type), and one
// UPDATE … FROM sets the target's columns cols of the rows whose keys
// match. Errors: a value the target column's type cannot hold (naming
// the column), or the database's.
func (t *Tx) FillColumns(ctx context.Context, keys, cols []cdc.Column, rows [][]any) error {
	all := append(slices.Clone(keys), cols...)
	names := make([]string, len(all))
	types := make([]cdc.Type, len(all))
	for i, c := range all {
		tc, ok := t.target.Column(c.Name)
		if !ok {
			return fmt.Errorf("sqlite sink: fill column %s of %q: the target has no such column", c.Name, t.c.table)
		}
		names[i], types[i] = sqlitex.Quote(tc.Name), tc.Type
	}
	fail := func(err error) error {
		return fmt.Errorf("sqlite sink: fill the new columns of %q: %w", t.c.table, err)
	}
	if _, err := t.q.ExecContext(ctx, "DROP TABLE IF EXISTS temp.sluice_fill"); err != nil {
		return fail(err)
	}
	if _, err := t.q.ExecContext(ctx, "CREATE TEMP TABLE sluice_fill ("+strings.Join(names, ", ")+")"); err != nil {
		return fail(err)
	}
	ins := "INSERT INTO temp.sluice_fill VALUES (" + strings.TrimSuffix(strings.Repeat("?, ", len(all)), ", ") + ")"
	args := make([]any, len(all))
	for _, row := range rows {
		for i, v := range row {
			e, err := sqlitex.Encode(v, types[i])
			if err != nil {
				return fail(fmt.Errorf("column %s: %w", all[i].Name, err))
			}
			args[i] = e
		}
		if _, err := t.q.ExecContext(ctx, ins, args...); err != nil {
			return fail(err)
		}
	}
	set := make([]string, len(cols))
	for i := range cols {
		n := names[len(keys)+i]
		set[i] = n + " = f." + n
	}
	on := make([]string, len(keys))
	for i := range keys {
		on[i] = "d." + names[i] + " = f." + names[i]
	}
	if _, err := t.q.ExecContext(ctx, fmt.Sprintf("UPDATE %s AS d SET %s FROM temp.sluice_fill AS f WHERE %s",
		sqlitex.Quote(t.c.table), strings.Join(set, ", "), strings.Join(on, " AND "))); err != nil {
		return fail(err)
	}
	if _, err := t.q.ExecContext(ctx, "DROP TABLE temp.sluice_fill"); err != nil {
		return fail(err)
	}
	return nil
}
