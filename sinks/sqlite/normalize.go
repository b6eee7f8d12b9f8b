package sqlite

import (
	"fmt"
	"math"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
)

// NormalizeSQL wraps x, a SQL expression over a stored value of a column
// of logical type t, so that it yields the value in exactly the form
// sluice itself writes for t (internal/sqlitex.Encode of the decoded
// value): SQLite stores what it is given, so a DECIMAL(12,2) column may
// hold '2', 2.5 or '2.50', a TIMESTAMP one '2024-01-01T00:00:00Z'. A
// value whose storage class and shape are those of that form — checked
// in SQL with a few cheap functions (typeof, length, instr, substr; a
// full check with printf and GLOB cost more than the copy itself) — is
// used as stored; any other goes through sluice_sink_fit, which decodes
// and encodes it as a copy through sluice does, and fails the statement
// with a *cdc.ValueError naming keyText (a SQL expression rendering the
// row's key) and column when it is not a value of t. So a value of the
// right shape but not canonical ('+1.00', '2024-01-01 00:00:00.500+00:00'
// with its trailing zero) is copied as stored, as the pushdown of a run
// copies every value. NULL stays NULL.
func NormalizeSQL(x string, t cdc.Type, column, keyText string) string {
	fit := fitSQL(x, t, column, keyText)
	if class := classOnly(t); class != "" {
		return classCase(x, class, fit)
	}
	cond := canonicalSQL(x, t)
	if cond == "" {
		return fit
	}
	return fmt.Sprintf("CASE WHEN %s IS NULL OR %s THEN %s ELSE %s END", x, cond, x, fit)
}

func fitSQL(x string, t cdc.Type, column, keyText string) string {
	return fmt.Sprintf("%s(%s, %s, %s, %s, %s)", fitFunc, x, sqlitex.QuoteString(t.String()), sqlitex.QuoteString(t.String()), sqlitex.QuoteString(column), keyText)
}

// classCase is the normalization of x when its form is right exactly when
// its storage class is class (typeof's name) or NULL: one typeof per value
// compared with the class, then with 'null'. It is the same test as
// "x IS NULL OR typeof(x) = class" in fewer steps of SQLite's VDBE (for a
// value of the class: no NULL test, x read twice instead of three times),
// which a bulk copy runs for every value: 0.45 against 0.49 CPU s for
// 300,000 rows of five checked columns in modernc (docs/benchmarks.md).
func classCase(x, class, fit string) string {
	return fmt.Sprintf("CASE typeof(%s) WHEN '%s' THEN %s WHEN 'null' THEN NULL ELSE %s END", x, class, x, fit)
}

// classOnly returns the storage class (typeof's name) of sqlitex.Encode's
// form for type t when that class is all canonicalSQL checks (every
// value of that class is in the form), or "".
func classOnly(t cdc.Type) string {
	switch {
	case t.Kind == cdc.KindBigInt:
		return "integer"
	case t.Kind == cdc.KindFloat || t.Kind == cdc.KindDouble:
		return "real"
	case t.Kind == cdc.KindBinary:
		return "blob"
	case t.Kind.IsPlainText():
		return "text"
	}
	return ""
}

// NormalizeClassSQL is NormalizeSQL for a value of a column declared as
// sluice declares t (sqlitex.DeclaredType), whose stored form the target
// column sluice creates for t takes as it is: only the storage class is
// checked (text for DECIMAL, DATE and TIMESTAMP; the integer, real and
// blob checks of NormalizeSQL are class checks already), not the text's
// shape, so a DECIMAL stored with another scale ('5' for 5.0000000000) or
// a TIMESTAMP written with 'T' and 'Z' is copied as stored — as the
// pushdown of a run copies the values its change log captured — and reads
// back as the same value. A value of another class (the text 'false' in
// a BOOLEAN, a REAL in a DECIMAL) goes through sluice_sink_fit as in
// NormalizeSQL. The shape checks cost more than the copy's own
// INSERT … SELECT (docs/benchmarks.md).
func NormalizeClassSQL(x string, t cdc.Type, column, keyText string) string {
	switch {
	case t.Kind == cdc.KindDecimal && t.Native == "",
		t.Kind == cdc.KindDate && t.Native == "",
		t.Kind == cdc.KindTimestamp && (t.Native == "" || t.Native == cdc.TimestampNTZ):
		return classCase(x, "text", fitSQL(x, t, column, keyText))
	}
	return NormalizeSQL(x, t, column, keyText)
}

// canonicalSQL returns a SQL condition true when the non-NULL value x has
// the storage class and shape of sqlitex.Encode's form for type t, or ""
// when there is no cheap test (the value is then always re-encoded). Types
// whose form is their storage class alone (classOnly) are not its: they
// take classCase.
func canonicalSQL(x string, t cdc.Type) string {
	switch {
	case t.Kind.IsInteger():
		lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
		switch t.Kind {
		case cdc.KindTinyInt:
			lo, hi = math.MinInt8, math.MaxInt8
		case cdc.KindSmallInt:
			lo, hi = math.MinInt16, math.MaxInt16
		case cdc.KindInt:
		default:
			return ""
		}
		return fmt.Sprintf("typeof(%[1]s) = 'integer' AND %[1]s BETWEEN %d AND %d", x, lo, hi)
	case t.Kind == cdc.KindBoolean:
		return fmt.Sprintf("typeof(%[1]s) = 'integer' AND %[1]s IN (0, 1)", x)
	case t.Kind == cdc.KindDecimal:
		// Text with exactly Scale digits after its only '.' (none for
		// scale 0) and no longer than Precision digits, a sign and a
		// point allow: '2', '2.5', 2.5 (a REAL under NUMERIC affinity)
		// and '1e3' are re-encoded.
		if t.Precision <= 0 || t.Scale < 0 || t.Scale > t.Precision {
			return ""
		}
		if t.Scale == 0 {
			return fmt.Sprintf("typeof(%[1]s) = 'text' AND instr(%[1]s, '.') = 0 AND length(%[1]s) <= %[2]d", x, t.Precision+1)
		}
		return fmt.Sprintf("typeof(%[1]s) = 'text' AND instr(%[1]s, '.') = length(%[1]s) - %[2]d AND length(%[1]s) <= %[3]d", x, t.Scale, t.Precision+2)
	case t.Kind == cdc.KindDate && t.Native == "":
		return fmt.Sprintf("typeof(%[1]s) = 'text' AND length(%[1]s) = 10", x)
	case t.Kind == cdc.KindTimestamp && t.Native == cdc.TimestampNTZ:
		// "2006-01-02 15:04:05.999999"
		return fmt.Sprintf("typeof(%[1]s) = 'text' AND length(%[1]s) BETWEEN 19 AND 26 AND substr(%[1]s, 11, 1) = ' '", x)
	case t.Kind == cdc.KindTimestamp && t.Native == "":
		// "2006-01-02 15:04:05.999999999-07:00": a 'T', a 'Z' or a
		// missing zone is re-encoded.
		return fmt.Sprintf("typeof(%[1]s) = 'text' AND length(%[1]s) BETWEEN 25 AND 35 AND substr(%[1]s, 11, 1) = ' ' AND substr(%[1]s, -6, 1) IN ('+', '-')", x)
	}
	return ""
}

// KeyTextSQL renders a SQL expression producing "k1=v1, k2=v2" from the
// key columns keys over alias (for NormalizeSQL's keyText); "NULL"
// without keys.
func KeyTextSQL(keys []string, alias string) string {
	return keyTextSQL(cdc.Schema{}, keys, alias)
}
