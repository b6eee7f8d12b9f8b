// Package rowcmp renders values for equality across backends: two values
// of one logical type are equal exactly when their Canon texts are equal.
// NULL differs from every value (the empty string too); DECIMAL values
// compare by number (1.50 equals 1.5); TIMESTAMP values compare by instant
// (the same instant in two zones is equal); text compares byte for byte.
// `sluice test` and `sluice diff` compare rows with it.
package rowcmp

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicedata/sluice/cdc"
)

// Null is the Canon text of NULL; no non-NULL value renders as it (text
// values are prefixed).
const Null = "\x00"

// Canon returns the canonical text of v (a value as a driver, a decoder or
// a test file gives it) as type t: v is converted with cdc.Coerce (its
// *cdc.ValueError is returned when it does not fit), then DECIMAL is
// rendered without trailing fractional zeros, TIMESTAMP in UTC, JSON as
// PostgreSQL's jsonb writes it (JSONBText: equal documents compare equal
// whatever their spacing and key order), and every other type with
// cdc.FormatValue. Non-NULL results start with "=", so
// they never equal Null.
func Canon(v any, t cdc.Type) (string, error) {
	if v == nil {
		return Null, nil
	}
	c, err := cdc.Coerce(v, t)
	if err != nil {
		return "", err
	}
	switch x := c.(type) {
	case nil:
		return Null, nil
	case decimal.Decimal:
		return "=" + x.String(), nil
	case time.Time:
		if t.Kind == cdc.KindTimestamp {
			return "=" + cdc.FormatTimestamp(x.UTC()), nil
		}
	}
	s := cdc.FormatValue(c, t)
	if t.Kind == cdc.KindJSON {
		if j, ok := JSONBText(s); ok {
			return "=" + j, nil
		}
	}
	return "=" + s, nil
}

// Text returns the display form of a Canon text: "NULL" for Null, the
// value otherwise.
func Text(canon string) string {
	if canon == Null {
		return "NULL"
	}
	if len(canon) > 0 {
		return canon[1:]
	}
	return canon
}
