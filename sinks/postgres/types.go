package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
)

// Querier is what the SQL helpers of this package need: a pgx.Tx, a
// *pgx.Conn or a *pgxpool.Pool.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Quote returns name as a double-quoted PostgreSQL identifier ("order",
// "user", "naïve ""x""").
func Quote(name string) string { return pgx.Identifier{name}.Sanitize() }

// QuoteList quotes each name and joins them with ", ", each prefixed with
// prefix (an alias and a dot, or "").
func QuoteList(prefix string, names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(prefix)
		b.WriteString(Quote(n))
	}
	return b.String()
}

// Literal returns s as a PostgreSQL string literal.
func Literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// ColumnType returns the PostgreSQL type that stores a logical type:
// TINYINT/SMALLINT → smallint, INT → integer, BIGINT → bigint, BOOLEAN →
// boolean, FLOAT → real, DOUBLE → double precision, DECIMAL(p,s) →
// numeric(p,s), STRING → text, VARCHAR(n) → varchar(n), CHAR(n) →
// char(n), DATE → date, TIMESTAMP → timestamptz, BINARY → bytea.
func ColumnType(t cdc.Type) string {
	switch t.Kind {
	case cdc.KindVarchar:
		if t.Length > 0 {
			return fmt.Sprintf("varchar(%d)", t.Length)
		}
		return "varchar"
	case cdc.KindChar:
		if t.Length > 0 {
			return fmt.Sprintf("char(%d)", t.Length)
		}
		return "char"
	}
	// Every other type is stored as the type expressions CAST to.
	return expr.PGType(t)
}

var typmod = regexp.MustCompile(`^([a-z ]+)(?:\((\d+)(?:,(\d+))?\))?(\[\])?$`)

// LogicalType maps a PostgreSQL type as format_type() prints it
// ("numeric(10,2)", "character varying(20)", "timestamp with time zone",
// "jsonb", "integer[]", "public.mood") to a logical type (docs/types.md).
// native is false for the types read through a ::text cast, whose values
// travel as PostgreSQL's own text: json and jsonb (JSON; json keeps
// Native "json"), uuid (UUID), and every type the dialect has no name for
// (arrays, interval, inet, enums, domains, …: cdc.NativeType). numeric
// without precision is DECIMAL without precision (cdc.TypeNumeric: its
// values keep their own digits); timestamp without time zone is TIMESTAMP
// with Native cdc.TimestampNTZ.
func LogicalType(pgType string) (t cdc.Type, native bool) {
	switch pgType {
	case "jsonb":
		return cdc.TypeJSON, false
	case "json":
		return cdc.Type{Kind: cdc.KindJSON, Native: "json"}, false
	case "uuid":
		return cdc.TypeUUID, false
	}
	m := typmod.FindStringSubmatch(pgType)
	if m == nil || m[4] != "" {
		return cdc.NativeType(pgType), false
	}
	// The short names ColumnType writes.
	switch m[1] {
	case "timestamptz":
		m[1] = "timestamp with time zone"
	case "varchar":
		m[1] = "character varying"
	case "char":
		m[1] = "character"
	}
	n1, _ := strconv.Atoi(m[2])
	n2, _ := strconv.Atoi(m[3])
	switch m[1] {
	case "smallint":
		return cdc.Type{Kind: cdc.KindSmallInt}, true
	case "integer":
		return cdc.TypeInt, true
	case "bigint":
		return cdc.TypeBigInt, true
	case "boolean":
		return cdc.TypeBoolean, true
	case "real":
		return cdc.Type{Kind: cdc.KindFloat}, true
	case "double precision":
		return cdc.TypeDouble, true
	case "numeric":
		if m[2] == "" {
			return cdc.TypeNumeric, true
		}
		return cdc.Decimal(n1, n2), true
	case "text":
		return cdc.TypeString, true
	case "character varying":
		if m[2] == "" {
			return cdc.TypeString, true
		}
		return cdc.Type{Kind: cdc.KindVarchar, Length: n1}, true
	case "character":
		return cdc.Type{Kind: cdc.KindChar, Length: max(n1, 1)}, true
	case "date":
		return cdc.TypeDate, true
	case "timestamp with time zone":
		if m[2] != "" {
			break // timestamptz(p) rounds: keep its own type
		}
		return cdc.TypeTimestamp, true
	case "timestamp without time zone":
		if m[2] != "" {
			break
		}
		return cdc.Type{Kind: cdc.KindTimestamp, Native: cdc.TimestampNTZ}, true
	case "bytea":
		return cdc.TypeBinary, true
	}
	return cdc.NativeType(pgType), false
}

// Column is a column of an existing PostgreSQL table.
type Column struct {
	cdc.Column
	PGType string // format_type() text, e.g. "numeric(10,2)"
	Native bool   // false: read through a ::text cast (see LogicalType)
}

// Select returns the expression that reads the column with the given
// qualifier ("t." or ""), as text when the type is not native: the
// type's output text, as psql prints it — a ::text cast, except for inet,
// whose cast to text adds the netmask of a host address ("::1/128" for
// '::1') and is read through abbrev() instead, which writes inet's output
// text.
func (c Column) Select(qual string) string {
	switch {
	case c.Native:
		return qual + Quote(c.Name)
	case c.PGType == "inet":
		return "abbrev(" + qual + Quote(c.Name) + ")"
	}
	return qual + Quote(c.Name) + "::text"
}

// Table is an existing table's columns and primary key.
type Table struct {
	Name    string
	Columns []Column
	Key     []string
	// KeyConstraint is the primary key constraint's name ("" without one).
	KeyConstraint string
	// KeyDeferred is true when the primary key is DEFERRABLE INITIALLY
	// DEFERRED: every transaction then checks it only at commit and may
	// hold two rows of one key between its statements. (A key that is
	// DEFERRABLE INITIALLY IMMEDIATE is checked after each statement
	// unless a transaction runs SET CONSTRAINTS … DEFERRED.)
	KeyDeferred bool
}

// Schema returns the table's logical schema.
func (t *Table) Schema() cdc.Schema {
	s := cdc.Schema{Key: t.Key}
	for _, c := range t.Columns {
		s.Columns = append(s.Columns, c.Column)
	}
	return s
}

// DescribeTable reads a table's columns (in order) and primary key (its
// columns, constraint name and whether it is initially deferred) from the
// catalog. name is a single
// identifier resolved through search_path.
// ok is false when there is no such table.
func DescribeTable(ctx context.Context, q Querier, name string) (tab *Table, ok bool, err error) {
	return DescribeQualified(ctx, q, "", name)
}

// DescribeQualified is DescribeTable for a table in schema ("" resolves
// through search_path). It is one statement (describeSQL): a run
// describes its tables about a dozen times, and the lookup, the columns
// and the key in three statements were a quarter of a run's statements
// (issue #19).
func DescribeQualified(ctx context.Context, q Querier, schema, name string) (tab *Table, ok bool, err error) {
	ref := Quote(name)
	if schema != "" {
		ref = Quote(schema) + "." + ref
	}
	rows, err := q.Query(ctx, describeSQL, ref)
	if err != nil {
		return nil, false, fmt.Errorf("describe table %s: %w", Quote(name), err)
	}
	defer rows.Close()
	tab = &Table{Name: name}
	for rows.Next() {
		var part, ord int64
		var c Column
		var base, constraint string
		var deferred bool
		if err := rows.Scan(&part, &ord, &c.Name, &c.PGType, &c.NotNull, &base, &constraint, &deferred); err != nil {
			return nil, false, fmt.Errorf("describe table %s: %w", Quote(name), err)
		}
		switch part {
		case 0:
			ok = true
		case 1:
			c.Type, c.Native = LogicalType(c.PGType)
			if base != "" {
				// A domain: its base type's logical type, named by the
				// domain (a PostgreSQL target keeps it), read as text (pgx
				// knows no domain).
				c.Type, _ = LogicalType(base)
				c.Type.Native = c.PGType
			}
			tab.Columns = append(tab.Columns, c)
		case 2:
			tab.Key = append(tab.Key, c.Name)
			tab.KeyConstraint, tab.KeyDeferred = constraint, deferred
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("describe table %s: %w", Quote(name), err)
	}
	if !ok {
		return nil, false, nil
	}
	return tab, true, nil
}

// describeSQL describes the relation $1 (resolved by to_regclass): a row
// of part 0 when it exists, its columns in order (part 1: name, type,
// NOT NULL, the base type of a domain), then its primary key's columns in
// key order (part 2: name, constraint name, initially deferred).
const describeSQL = `WITH r AS (SELECT to_regclass($1)::oid AS oid)
SELECT 0 AS part, 0 AS ord, ''::text, ''::text, false, ''::text, ''::text, false FROM r WHERE r.oid IS NOT NULL
UNION ALL
SELECT 1, a.attnum, a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull,
	CASE WHEN t.typtype = 'd' THEN format_type(t.typbasetype, t.typtypmod) ELSE '' END, '', false
FROM r JOIN pg_attribute a ON a.attrelid = r.oid JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 2, k.ord, a.attname::text, '', false, '', coalesce(c.conname::text, ''), coalesce(c.condeferred, false)
FROM r JOIN pg_index i ON i.indrelid = r.oid AND i.indisprimary
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid AND c.contype = 'p'
ORDER BY 1, 2`

// Encode converts a canonical value of logical type t (package cdc) to
// what pgx sends for a column of that type: DECIMAL as pgtype.Numeric
// (exact), a cdc.Special as the pgtype value of t with its NaN or
// infinity, everything else unchanged.
func Encode(v any, t cdc.Type) any {
	switch x := v.(type) {
	case decimal.Decimal:
		return pgtype.Numeric{Int: x.Coefficient(), Exp: x.Exponent(), Valid: true}
	case cdc.Special:
		inf := pgtype.Infinity
		if x == cdc.NegInfinity {
			inf = pgtype.NegativeInfinity
		}
		switch {
		case t.Kind == cdc.KindDecimal && x == cdc.NaN:
			return pgtype.Numeric{NaN: true, Valid: true}
		case t.Kind == cdc.KindDecimal:
			return pgtype.Numeric{InfinityModifier: inf, Valid: true}
		case t.Kind == cdc.KindDate:
			return pgtype.Date{InfinityModifier: inf, Valid: true}
		case t.Kind == cdc.KindTimestamp && t.Native == cdc.TimestampNTZ:
			return pgtype.Timestamp{InfinityModifier: inf, Valid: true}
		case t.Kind == cdc.KindTimestamp:
			return pgtype.Timestamptz{InfinityModifier: inf, Valid: true}
		}
		return x.Text(t)
	}
	return v
}

// Decode converts a value as pgx returns it (rows.Values) for a column of
// logical type t to its canonical form: integers int64, real via its
// shortest float32 text (0.1 stays 0.1), numeric → decimal.Decimal exactly
// (NaN and infinities are errors), timestamptz → time.Time in UTC, date →
// UTC midnight; numeric NaN and the infinities of numeric, date and
// timestamp → cdc.Special (cdc.Coerce to t).
func Decode(v any, t cdc.Type) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case float32:
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
		return f, nil
	case pgtype.InfinityModifier:
		sp := cdc.PosInfinity
		if x == pgtype.NegativeInfinity {
			sp = cdc.NegInfinity
		}
		return cdc.Coerce(sp, t)
	case pgtype.Numeric:
		if x.NaN {
			return cdc.Coerce(cdc.NaN, t)
		}
		if x.InfinityModifier == pgtype.Infinity {
			return cdc.Coerce(cdc.PosInfinity, t)
		}
		if x.InfinityModifier == pgtype.NegativeInfinity {
			return cdc.Coerce(cdc.NegInfinity, t)
		}
		d, err := NumericToDecimal(x)
		if err != nil {
			return nil, &cdc.ValueError{Type: t, Value: v, Reason: err.Error()}
		}
		if t.Kind == cdc.KindDecimal {
			return d, nil
		}
		return cdc.Coerce(d, t)
	case time.Time:
		if t.Kind == cdc.KindDate {
			y, m, d := x.Date()
			return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), nil
		}
		if t.Kind.IsText() {
			return cdc.Coerce(x, t)
		}
		return x.UTC(), nil
	case pgtype.Time, pgtype.Interval, [16]byte:
		return cdc.Coerce(fmt.Sprint(x), t)
	}
	return cdc.Coerce(v, t)
}

// Text renders a canonical value of logical type t as PostgreSQL reads it
// back with a cast from text: cdc.FormatValue, except bytea's hex form
// ("\x00ff") and a date or timestamp before 1 AD ("4713-01-01 BC",
// cdc.FormatBC).
func Text(v any, t cdc.Type) string {
	switch x := v.(type) {
	case []byte:
		return `\x` + hex.EncodeToString(x)
	case time.Time:
		return cdc.FormatBC(x, t)
	}
	return cdc.FormatValue(v, t)
}

// NumericToDecimal converts a pgtype.Numeric exactly.
func NumericToDecimal(n pgtype.Numeric) (decimal.Decimal, error) {
	switch {
	case !n.Valid:
		return decimal.Decimal{}, fmt.Errorf("NULL numeric")
	case n.NaN:
		return decimal.Decimal{}, fmt.Errorf("NaN has no DECIMAL value")
	case n.InfinityModifier != pgtype.Finite:
		return decimal.Decimal{}, fmt.Errorf("infinity has no DECIMAL value")
	}
	i := n.Int
	if i == nil {
		i = new(big.Int)
	}
	return decimal.NewFromBigInt(i, n.Exp), nil
}
