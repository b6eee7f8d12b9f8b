package sqlite

import (
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
)

// widenTemp is the temporary name of a column being widened.
const widenTemp = "__sluice_widen"

// evolve returns the statements that make the existing target (named
// table, described as target) follow ch (plan.SinkStage.Evolve:
// on_schema_change evolve), and the target's schema after them; none when
// target already has every change. A new column is added with the
// declared type of the projected type (sqlitex.DeclareSQL), and the rows
// the target holds get what the source's rows that predate the column
// hold (plan.Fill): NULL; one value (FillValue), as the ADD COLUMN's
// DEFAULT, which SQLite gives every existing row without rewriting one
// (SQLite cannot drop a DEFAULT again; sluice writes every column, so it
// never supplies a value); or each row's value by key from the source
// table in this file (FillReread, an UPDATE … FROM after the ALTER).
// SQLite cannot change a column's declared
// type, which sluice reads back as the column's type and checks values
// against (an INT's range, a DECIMAL's digits): a widened column is
// added under a temporary name with the wider declared type, the values
// are copied (the stored values are the same: INTEGER for every integer
// type, the fixed-scale text for DECIMAL(p,s) and DECIMAL(p',s)), the old
// column is dropped and the new one renamed to its name. The column
// moves to the end of the table; a column that is part of the primary
// key, an index, a constraint, a view or a trigger cannot be dropped, and
// the run fails with SQLite's error (evolveError). All of it runs in the
// run's write transaction.
func evolve(table string, target cdc.Schema, ch []plan.ColumnChange, keys []string) ([]string, cdc.Schema, error) {
	if len(ch) == 0 {
		return nil, target, nil
	}
	out := target
	out.Columns = slices.Clone(target.Columns)
	q := sqlitex.Quote(table)
	var stmts []string
	for _, c := range ch {
		i := out.Index(c.Column)
		decl := sqlitex.DeclareSQL(c.Type)
		switch {
		case i < 0:
			add := fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", q, sqlitex.Quote(c.Column), decl)
			var fill string
			switch c.Fill.Kind {
			case plan.FillValue:
				lit, err := fillLiteral(c.Fill.Value, c.Type)
				if err != nil {
					return nil, target, fmt.Errorf("sqlite sink: the value %s of the new column %s of %q (the source's %s): %w", cdc.FormatValue(c.Fill.Value, c.Type), c.Column, table, c.Fill.Why, err)
				}
				add += " DEFAULT " + lit
			case plan.FillReread:
				if c.Fill.Table == "" {
					break // filled by the run (runner.ColumnFiller, FillColumns)
				}
				on := make([]string, len(keys))
				for k, key := range keys {
					on[k] = fmt.Sprintf("d.%s = s.%s", sqlitex.Quote(key), sqlitex.Quote(key))
				}
				fill = fmt.Sprintf("UPDATE %s AS d SET %s = s.%s FROM %s AS s WHERE %s",
					q, sqlitex.Quote(c.Column), sqlitex.Quote(c.Column), c.Fill.Table, strings.Join(on, " AND "))
			}
			stmts = append(stmts, add)
			if fill != "" {
				stmts = append(stmts, fill)
			}
			out.Columns = append(out.Columns, cdc.Column{Name: c.Column, Type: c.Type})
		case c.Widen && cdc.Widens(out.Columns[i].Type, c.Type):
			name := sqlitex.Quote(out.Columns[i].Name)
			stmts = append(stmts,
				fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", q, sqlitex.Quote(widenTemp), decl),
				fmt.Sprintf("UPDATE %s SET %s = %s", q, sqlitex.Quote(widenTemp), name),
				fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", q, name),
				fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", q, sqlitex.Quote(widenTemp), name))
			col := out.Columns[i]
			col.Type = c.Type
			out.Columns = append(slices.Delete(out.Columns, i, i+1), col)
		}
	}
	return stmts, out, nil
}

// fillLiteral returns v (canonical, of logical type t) as the SQLite
// literal of the value the sink stores for it (sqlitex.Encode): an
// integer, a REAL written so that it reads back as the same float64, a
// quoted string, or a blob X'…'.
func fillLiteral(v any, t cdc.Type) (string, error) {
	e, err := sqlitex.Encode(v, t)
	if err != nil {
		return "", err
	}
	switch x := e.(type) {
	case nil:
		return "NULL", nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		switch {
		case math.IsInf(x, 1):
			return "9e999", nil
		case math.IsInf(x, -1):
			return "-9e999", nil
		}
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s, nil
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'", nil
	case []byte:
		return "X'" + hex.EncodeToString(x) + "'", nil
	}
	return "", fmt.Errorf("no SQLite literal for %s", cdc.FormatValue(v, t))
}

// evolveError is the error of a failed evolve statement q on table.
func evolveError(table, q string, err error) error {
	if strings.Contains(q, " DROP COLUMN ") {
		return fmt.Errorf("sqlite sink: widen a column of %q (on_schema_change evolve): SQLite changes a column's type by adding a new column and dropping the old one, and the drop failed: %w; nothing was written and the offset did not move. Rebuild %q with the wider type by hand, or set on_schema_change: ignore (values are checked against the target's narrower type)", table, err, table)
	}
	return fmt.Errorf("sqlite sink: follow the source's columns in %q (on_schema_change evolve): %s: %w", table, q, err)
}

// describeEvolve lists ch in words ("add column c BIGINT; widen …").
func describeEvolve(ch []plan.ColumnChange) string {
	out := make([]string, len(ch))
	for i, c := range ch {
		out[i] = c.String()
	}
	return strings.Join(out, "; ")
}
