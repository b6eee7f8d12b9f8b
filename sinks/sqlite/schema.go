package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
)

// Querier is what the sink needs from a connection: *sql.DB, *sql.Conn,
// *sql.Tx and *sqlitex.Tx all satisfy it.
type Querier = sqlitex.Querier

// readTarget returns the schema of table (sqlitex.TableSchema) and whether
// it exists.
func readTarget(ctx context.Context, q Querier, table string) (cdc.Schema, bool, error) {
	s, ok, err := sqlitex.TableSchema(ctx, q, table)
	if err != nil {
		return cdc.Schema{}, false, fmt.Errorf("sqlite sink: %w", err)
	}
	return s, ok, nil
}

// hasUniqueKey reports whether table has a primary key or a non-partial
// unique index on exactly the columns keys (in any order), as INSERT … ON
// CONFLICT(keys) requires.
func hasUniqueKey(ctx context.Context, q Querier, table string, target cdc.Schema, keys []string) (bool, error) {
	if sameSet(target.Key, keys) {
		return true, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT l.name, i.name FROM pragma_index_list(?) AS l JOIN pragma_index_info(l.name) AS i WHERE l."unique" = 1 AND l.partial = 0 ORDER BY l.name, i.seqno`, table)
	if err != nil {
		return false, fmt.Errorf("sqlite sink: list indexes of %q: %w", table, err)
	}
	defer rows.Close()
	idx := map[string][]string{}
	for rows.Next() {
		var ix string
		var col sql.NullString // NULL for expression indexes
		if err := rows.Scan(&ix, &col); err != nil {
			return false, err
		}
		idx[ix] = append(idx[ix], col.String)
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	for _, cols := range idx {
		if sameSet(cols, keys) {
			return true, nil
		}
	}
	return false, nil
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y string) bool { return strings.EqualFold(x, y) }) {
			return false
		}
	}
	return true
}

// createTableSQL is the CREATE TABLE of a missing target: the projected
// columns with the declared types of the conventions, NOT NULL on key
// columns and PRIMARY KEY(keys) when keys are given (merge targets).
func createTableSQL(table string, s cdc.Schema, keys []string) string {
	return sqlitex.CreateTableSQL(table, cdc.Schema{Columns: s.Columns, Key: keys}, false)
}

// compatible reports whether values of type from can be stored in a column
// of type to, possibly failing per value at run time (text into INT, a
// DECIMAL that overflows): numbers and booleans among themselves, anything
// into text, text into anything, DATE and TIMESTAMP into each other, BINARY
// and text into each other.
func compatible(from, to cdc.Type) bool {
	f, t := from.Kind, to.Kind
	num := func(k cdc.Kind) bool { return k.IsNumeric() || k == cdc.KindBoolean }
	tm := func(k cdc.Kind) bool { return k == cdc.KindDate || k == cdc.KindTimestamp }
	switch {
	case f == t, f == cdc.KindInvalid:
		return true
	case t.IsText(), f.IsText():
		return true
	case num(f) && num(t):
		return true
	case tm(f) && tm(t):
		return true
	}
	return false
}

// checkTarget verifies that an existing target can receive the projected
// columns: each exists (by name, case-insensitively) with a compatible type.
// It returns the target's type for each projected column.
func checkTarget(table string, target, projected cdc.Schema) ([]cdc.Type, error) {
	types := make([]cdc.Type, len(projected.Columns))
	for i, c := range projected.Columns {
		tc, ok := target.Column(c.Name)
		if !ok {
			return nil, fmt.Errorf("sqlite sink: target table %q has no column %q (it has %s); add the column or change the projection", table, c.Name, strings.Join(target.Names(), ", "))
		}
		if !compatible(c.Type, tc.Type) {
			return nil, fmt.Errorf("sqlite sink: target table %q column %q is %s, which cannot hold the projected %s", table, tc.Name, tc.Type, c.Type)
		}
		types[i] = tc.Type
	}
	return types, nil
}
