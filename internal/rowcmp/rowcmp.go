// Package rowcmp renders values for equality across backends: two values
// of one logical type are equal exactly when their Canon texts are equal.
// NULL differs from every value (the empty string too); DECIMAL values
// compare by number (1.50 equals 1.5); TIMESTAMP values compare by instant
// (the same instant in two zones is equal), and a DATE or TIMESTAMP before
// 1 AD renders as PostgreSQL writes it ("4713-01-01 BC", cdc.FormatBC);
// a FLOAT or DOUBLE -0 equals 0 (as PostgreSQL's = says); text compares
// byte for byte.
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
// rendered without trailing fractional zeros, TIMESTAMP in UTC, DATE and
// TIMESTAMP with cdc.FormatBC (a year BC as PostgreSQL writes it), JSON as
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
	case float64:
		if x == 0 {
			return "=0", nil // -0 equals 0, as in PostgreSQL (SQLite stores -0.0 as 0)
		}
	case time.Time:
		if t.Kind == cdc.KindTimestamp {
			x = x.UTC()
		}
		return "=" + cdc.FormatBC(x, t), nil
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
