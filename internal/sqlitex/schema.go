package sqlitex

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/sluicedata/sluice/cdc"
)

// Querier is what *sql.DB, *sql.Tx and *sql.Conn have in common.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// TableSchema reads table's columns (in order, logical types via
// LogicalType, NotNull from the declaration) and primary key (in key order)
// with PRAGMA table_info of schema main (never a TEMP table or one of an
// attached database of the same name). ok is false, with a zero Schema,
// when there is no such table (names compare as SQLite does: ASCII
// case-insensitively).
func TableSchema(ctx context.Context, q Querier, table string) (s cdc.Schema, ok bool, err error) {
	rows, err := q.QueryContext(ctx, `SELECT name, type, "notnull", pk FROM pragma_table_info(?, 'main') ORDER BY cid`, table)
	if err != nil {
		return cdc.Schema{}, false, fmt.Errorf("read schema of table %s: %w", table, err)
	}
	defer rows.Close()
	type keyCol struct {
		name string
		pk   int
	}
	var keys []keyCol
	for rows.Next() {
		var name, typ string
		var notNull bool
		var pk int
		if err := rows.Scan(&name, &typ, &notNull, &pk); err != nil {
			return cdc.Schema{}, false, fmt.Errorf("read schema of table %s: %w", table, err)
		}
		s.Columns = append(s.Columns, cdc.Column{Name: name, Type: LogicalType(typ), NotNull: notNull || pk > 0})
		if pk > 0 {
			keys = append(keys, keyCol{name, pk})
		}
	}
	if err := rows.Err(); err != nil {
		return cdc.Schema{}, false, fmt.Errorf("read schema of table %s: %w", table, err)
	}
	if len(s.Columns) == 0 {
		return cdc.Schema{}, false, nil
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].pk < keys[j].pk })
	for _, k := range keys {
		s.Key = append(s.Key, k.name)
	}
	return s, true, nil
}

// TableName returns the name of table as stored in the schema (SQLite
// compares table names ASCII case-insensitively), and whether it exists.
// Views are not tables.
func TableName(ctx context.Context, q Querier, table string) (string, bool, error) {
	var name string
	err := q.QueryRowContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE`, table).Scan(&name)
	if err == sql.ErrNoRows {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("look up table %s: %w", table, err)
	}
	return name, true, nil
}

// DecimalCheckSQL is the constraint CreateTableSQL gives a DECIMAL column:
// its text is a number (digits, '.', 'e', 'E', '+', '-' and at least one
// digit) or PostgreSQL's NaN or ±Infinity.
func DecimalCheckSQL(column string) string {
	q := Quote(column)
	return fmt.Sprintf("CONSTRAINT %s CHECK (%s IS NULL OR (%s NOT GLOB '*[^0-9.eE+-]*' AND %s GLOB '*[0-9]*') OR %s IN ('NaN', 'Infinity', '-Infinity'))",
		Quote(column+" is a number"), q, q, q, q)
}

// CreateTableSQL returns the CREATE TABLE statement for schema s with the
// declared types of DeclaredType, NOT NULL where a column says so and on key
// columns, and PRIMARY KEY (s.Key) when the key is not empty.
func CreateTableSQL(table string, s cdc.Schema, ifNotExists bool) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE ")
	if ifNotExists {
		b.WriteString("IF NOT EXISTS ")
	}
	b.WriteString(Quote(table) + " (")
	key := map[string]bool{}
	for _, k := range s.Key {
		key[strings.ToLower(k)] = true
	}
	for i, c := range s.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(Quote(c.Name) + " " + DeclareSQL(c.Type))
		if c.NotNull || key[strings.ToLower(c.Name)] {
			b.WriteString(" NOT NULL")
		}
		if c.Type.Kind == cdc.KindDecimal {
			// DECIMAL is stored as text (see the package doc): refuse text
			// that is not a number, whoever writes the row, so that a bad
			// INSERT fails at once instead of every later read of the
			// table and its streams. PostgreSQL's NaN and ±Infinity are
			// numbers too (cdc.Special).
			b.WriteString(" " + DecimalCheckSQL(c.Name))
		}
	}
	if len(s.Key) > 0 {
		b.WriteString(", PRIMARY KEY (")
		for i, k := range s.Key {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(Quote(k))
		}
		b.WriteString(")")
	}
	b.WriteString(")")
	return b.String()
}
