package sqlitex

import (
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/cdc"
)

// DeclaredType returns the column type sluice declares in CREATE TABLE for
// the logical type t (docs/architecture.md): the dialect's own name for
// integers, BOOLEAN, FLOAT, DOUBLE, VARCHAR(n), CHAR(n), DATE, TIMESTAMP and
// BINARY; TEXT for STRING; DECIMAL_TEXT(p,s) for DECIMAL(p,s), which has
// TEXT affinity so that decimals are stored exactly as fixed-scale text.
// LogicalType(DeclaredType(t)) == t for every valid t.
//
// Types of another database with no SQLite form (docs/types.md) are
// declared "TEXT:" and the PostgreSQL type ("TEXT:jsonb", "TEXT:uuid",
// "TEXT:integer[]"; written quoted)
// and store PostgreSQL's text of the value; a DECIMAL without precision is
// DECIMAL_TEXT.
func DeclaredType(t cdc.Type) string {
	if n := pgName(t); n != "" {
		return nativePrefix + n
	}
	switch t.Kind {
	case cdc.KindDecimal:
		if t.Precision == 0 {
			return "DECIMAL_TEXT"
		}
		return fmt.Sprintf("DECIMAL_TEXT(%d,%d)", t.Precision, t.Scale)
	case cdc.KindString:
		return "TEXT"
	}
	return t.String()
}

// LogicalType recovers the logical type from a declared column type as
// PRAGMA table_info reports it. Types sluice declares (DeclaredType) map
// back exactly; DECIMAL(p,s)/NUMERIC(p,s) are taken as written, NUMERIC
// and DECIMAL without them as DECIMAL without precision; DATETIME… as
// TIMESTAMP_NTZ, TIMESTAMP… as TIMESTAMP, TIME… as STRING; anything
// else follows SQLite's affinity rules: a name containing INT → BIGINT;
// CHAR, CLOB or TEXT → STRING; BLOB or no type → BINARY; REAL, FLOA or DOUB
// → DOUBLE; otherwise (NUMERIC affinity: NUMERIC, MONEY, …) → DECIMAL
// without precision (cdc.TypeNumeric), whose values keep their own digits:
// such a column declares no scale, so none is imposed (a REAL it holds
// arrives as its shortest exact decimal text, 0.123456789012345 and 1.5 as
// such, not rounded to 10 places or padded to 1.5000000000).
func LogicalType(declared string) cdc.Type {
	if n, ok := strings.CutPrefix(strings.TrimSpace(declared), nativePrefix); ok {
		return fromPGName(n)
	}
	d := strings.ToUpper(strings.TrimSpace(declared))
	if d == "DECIMAL_TEXT" {
		return cdc.TypeNumeric
	}
	if rest, ok := strings.CutPrefix(d, "DECIMAL_TEXT"); ok {
		if t, err := cdc.ParseType("DECIMAL" + rest); err == nil {
			return t
		}
		return cdc.Decimal(38, 10)
	}
	switch d {
	case "INTEGER":
		return cdc.TypeBigInt
	case "REAL":
		return cdc.TypeDouble
	case "NUMERIC", "DECIMAL":
		return cdc.TypeNumeric
	case "BLOB", "":
		return cdc.TypeBinary
	}
	if t, err := cdc.ParseType(d); err == nil {
		return t
	}
	switch {
	case strings.HasPrefix(d, "DATETIME"):
		// Django's datetime, Rails' datetime(6): a wall clock without a
		// zone (TIMESTAMP_NTZ keeps it as written).
		return cdc.Type{Kind: cdc.KindTimestamp, Native: cdc.TimestampNTZ}
	case strings.HasPrefix(d, "TIMESTAMP"):
		return cdc.TypeTimestamp
	case d == "TIME", strings.HasPrefix(d, "TIME("), strings.HasPrefix(d, "TIME "):
		return cdc.TypeString // a time of day has no logical type: its text
	case strings.Contains(d, "INT"):
		return cdc.TypeBigInt
	case strings.Contains(d, "CHAR"), strings.Contains(d, "CLOB"), strings.Contains(d, "TEXT"):
		return cdc.TypeString
	case strings.Contains(d, "BLOB"):
		return cdc.TypeBinary
	case strings.Contains(d, "REAL"), strings.Contains(d, "FLOA"), strings.Contains(d, "DOUB"):
		return cdc.TypeDouble
	}
	return cdc.TypeNumeric
}

// Quote returns ident as a double-quoted SQLite identifier, doubling any
// '"' inside: order → "order", a"b → "a""b".
func Quote(ident string) string {
	return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"`
}

// QuoteString returns s as a single-quoted SQL string literal.
func QuoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// nativePrefix starts the declared type of a column that stores another
// database's type as text.
const nativePrefix = "TEXT:"

// pgName is the PostgreSQL type of t that DeclaredType records, "" for
// the types SQLite declares by their dialect name.
func pgName(t cdc.Type) string {
	switch t.Kind {
	case cdc.KindJSON:
		if t.Native != "" {
			return t.Native
		}
		return "jsonb"
	case cdc.KindUUID:
		return "uuid"
	case cdc.KindNative:
		return t.Native
	}
	return ""
}

// fromPGName inverts pgName.
func fromPGName(n string) cdc.Type {
	switch n {
	case "jsonb":
		return cdc.TypeJSON
	case "json":
		return cdc.Type{Kind: cdc.KindJSON, Native: "json"}
	case "uuid":
		return cdc.TypeUUID
	}
	return cdc.NativeType(n)
}

// DeclareSQL is DeclaredType as CREATE TABLE writes it: quoted when it is not
// a plain type name ("TEXT:integer[]").
func DeclareSQL(t cdc.Type) string {
	d := DeclaredType(t)
	if strings.HasPrefix(d, nativePrefix) {
		return Quote(d)
	}
	return d
}

// DeclaredTypeSQL writes a column's declared type as SQLite read it back
// (pragma_table_info's type) so that CREATE TABLE takes it again: as it
// is when it is a plain type name ("INTEGER", "DECIMAL(10,2)", "VARYING
// CHARACTER(5)"), else quoted ("TEXT:jsonb", "TEXT:integer[]", which
// DeclareSQL wrote quoted).
func DeclaredTypeSQL(typ string) string {
	if plainTypeName(typ) {
		return typ
	}
	return Quote(typ)
}

// plainTypeName reports whether typ is SQLite's type-name: words of
// letters, digits and underscores, optionally followed by one or two
// signed numbers in parentheses.
func plainTypeName(typ string) bool {
	name, args, paren := strings.Cut(typ, "(")
	name = strings.TrimSpace(name)
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_' || r == ' ' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z'):
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	if !paren {
		return true
	}
	args, ok := strings.CutSuffix(strings.TrimSpace(args), ")")
	if !ok {
		return false
	}
	for _, a := range strings.Split(args, ",") {
		a = strings.TrimSpace(a)
		a = strings.TrimLeft(a, "+-")
		if a == "" {
			return false
		}
		for _, r := range a {
			if (r < '0' || r > '9') && r != '.' {
				return false
			}
		}
	}
	return strings.Count(args, ",") <= 1
}
