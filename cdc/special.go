package cdc

import "strings"

// Special is a value outside a type's ordinary range that PostgreSQL
// stores and the Go forms of DECIMAL, DATE and TIMESTAMP cannot hold:
// the infinities of date, timestamp and numeric, and numeric's NaN
// (PostgreSQL manual, "Numeric Types" and "Date/Time Types"). It is the
// canonical value of such a value in a DECIMAL, DATE or TIMESTAMP column.
// (FLOAT and DOUBLE hold theirs as float64.)
type Special string

// The special values, as PostgreSQL writes them for date and timestamp
// ("infinity", "-infinity"); numeric writes "NaN", "Infinity" and
// "-Infinity" (Special.Text).
const (
	PosInfinity Special = "infinity"
	NegInfinity Special = "-infinity"
	NaN         Special = "NaN"
)

// Text returns the special value as PostgreSQL prints it in a column of
// type t: numeric "Infinity", "-Infinity", "NaN"; date and timestamp
// "infinity", "-infinity".
func (s Special) Text(t Type) string {
	if t.Kind == KindDecimal || t.Kind.IsInteger() || t.Kind == KindFloat || t.Kind == KindDouble {
		switch s {
		case PosInfinity:
			return "Infinity"
		case NegInfinity:
			return "-Infinity"
		}
	}
	return string(s)
}

// ParseSpecial recognizes the text of a special value (case-insensitive,
// surrounding space ignored; "inf" and "+infinity" as PostgreSQL accepts
// them). ok is false for anything else.
func ParseSpecial(s string) (Special, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "infinity", "+infinity", "inf", "+inf":
		return PosInfinity, true
	case "-infinity", "-inf":
		return NegInfinity, true
	case "nan":
		return NaN, true
	}
	return "", false
}
