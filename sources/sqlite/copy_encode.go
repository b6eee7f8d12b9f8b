package sqlite

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"

	"github.com/sluicedata/sluice/cdc"
)

// copyEnc appends the PostgreSQL COPY text of a non-NULL stored value to
// b; ok is false when the value is not in sluice's storage form for the
// column's type (the chunk then goes through sluice).
type copyEnc func(b []byte, v any) ([]byte, bool)

// copyEncoder returns the PostgreSQL type (as format_type names it: the
// type a PostgreSQL sink creates for t) and the encoder of a column of
// logical type t, or a nil encoder for a type the pass-through does not
// write.
func copyEncoder(t cdc.Type) (string, copyEnc) {
	switch {
	case t.Kind == cdc.KindBigInt:
		return "bigint", intEnc(math.MinInt64, math.MaxInt64)
	case t.Kind == cdc.KindInt:
		return "integer", intEnc(math.MinInt32, math.MaxInt32)
	case t.Kind == cdc.KindSmallInt:
		return "smallint", intEnc(math.MinInt16, math.MaxInt16)
	case t.Kind == cdc.KindTinyInt:
		return "smallint", intEnc(math.MinInt8, math.MaxInt8)
	case t.Kind == cdc.KindBoolean:
		return "boolean", boolEnc
	case t.Kind == cdc.KindDouble:
		return "double precision", doubleEnc
	case t.Kind == cdc.KindDecimal && t.Native == "":
		if t.Precision == 0 {
			return "numeric", decimalEnc(-1, -1)
		}
		if t.Scale < 0 || t.Scale > t.Precision {
			return "", nil
		}
		return fmt.Sprintf("numeric(%d,%d)", t.Precision, t.Scale), decimalEnc(t.Precision, t.Scale)
	case t.Kind == cdc.KindString && t.Native == "":
		return "text", textEnc
	case t.Kind == cdc.KindVarchar && t.Native == "" && t.Length > 0:
		// PostgreSQL refuses a longer value: the COPY fails and the chunk
		// goes through sluice, which names the row.
		return fmt.Sprintf("character varying(%d)", t.Length), textEnc
	case t.Kind == cdc.KindDate && t.Native == "":
		return "date", dateEnc
	case t.Kind == cdc.KindTimestamp && t.Native == "":
		return "timestamp with time zone", timestampEnc(true)
	case t.Kind == cdc.KindTimestamp && t.Native == cdc.TimestampNTZ:
		return "timestamp without time zone", timestampEnc(false)
	case t.Kind == cdc.KindBinary && t.Native == "":
		return "bytea", binaryEnc
	}
	return "", nil
}

func intEnc(lo, hi int64) copyEnc {
	return func(b []byte, v any) ([]byte, bool) {
		x, ok := v.(int64)
		if !ok || x < lo || x > hi {
			return b, false
		}
		return strconv.AppendInt(b, x, 10), true
	}
}

func boolEnc(b []byte, v any) ([]byte, bool) {
	switch v {
	case int64(0):
		return append(b, 'f'), true
	case int64(1):
		return append(b, 't'), true
	}
	return b, false
}

func doubleEnc(b []byte, v any) ([]byte, bool) {
	x, ok := v.(float64)
	switch {
	case !ok || math.IsNaN(x):
		return b, false
	case math.IsInf(x, 1):
		return append(b, "Infinity"...), true
	case math.IsInf(x, -1):
		return append(b, "-Infinity"...), true
	}
	// The shortest text that reads back as x (PostgreSQL 12+ reads float8
	// text exactly).
	return strconv.AppendFloat(b, x, 'g', -1, 64), true
}

// decimalEnc accepts text of an optional '-', an integer part without a
// leading zero (unless it is "0"), and, for scale > 0, '.' and exactly
// scale digits; at most precision digits in all. precision < 0 (DECIMAL
// without precision): any number of fraction digits, '.' optional.
func decimalEnc(precision, scale int) copyEnc {
	return func(b []byte, v any) ([]byte, bool) {
		s, ok := v.(string)
		if !ok || !decimalShape(s, precision, scale) {
			return b, false
		}
		return append(b, s...), true
	}
}

func decimalShape(s string, precision, scale int) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intDigits := i - start
	if intDigits == 0 || intDigits > 1 && s[start] == '0' {
		return false
	}
	frac := 0
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			frac++
		}
		if frac == 0 {
			return false
		}
	}
	if i != len(s) {
		return false
	}
	if precision < 0 {
		return true
	}
	sig := intDigits // the integer part's digits that count ("0.50": none)
	if s[start] == '0' {
		sig = 0
	}
	return frac == scale && sig+frac <= precision
}

// textEnc escapes text for COPY's text format: backslash, newline,
// carriage return and tab.
func textEnc(b []byte, v any) ([]byte, bool) {
	s, ok := v.(string)
	if !ok {
		return b, false
	}
	start := 0
	for i := 0; i < len(s); i++ {
		var esc byte
		switch s[i] {
		case '\\':
			esc = '\\'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		case '\t':
			esc = 't'
		default:
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, '\\', esc)
		start = i + 1
	}
	return append(b, s[start:]...), true
}

func dateEnc(b []byte, v any) ([]byte, bool) {
	s, ok := v.(string)
	if !ok || len(s) != 10 || !dateShape(s) {
		return b, false
	}
	return append(b, s...), true
}

// dateShape: "YYYY-MM-DD" (the first 10 bytes of s).
func dateShape(s string) bool {
	for i := range 10 {
		c := s[i]
		if i == 4 || i == 7 {
			if c != '-' {
				return false
			}
		} else if c < '0' || c > '9' {
			return false
		}
	}
	return s[:4] != "0000"
}

// timestampEnc accepts "YYYY-MM-DD HH:MM:SS", then '.' and 1 to 6
// digits, then (zoned) "+HH:MM" or "-HH:MM".
func timestampEnc(zoned bool) copyEnc {
	return func(b []byte, v any) ([]byte, bool) {
		s, ok := v.(string)
		if !ok || !timestampShape(s, zoned) {
			return b, false
		}
		return append(b, s...), true
	}
}

func timestampShape(s string, zoned bool) bool {
	if len(s) < 19 || !dateShape(s) || s[10] != ' ' || !digitsAt(s, 11, 2) || s[13] != ':' || !digitsAt(s, 14, 2) || s[16] != ':' || !digitsAt(s, 17, 2) {
		return false
	}
	// 24:00:00 and a leap second read in PostgreSQL, not in sluice
	if s[11:13] > "23" || s[14] > '5' || s[17] > '5' {
		return false
	}
	i := 19
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if n := j - i - 1; n < 1 || n > 6 {
			return false
		}
		i = j
	}
	if !zoned {
		return i == len(s)
	}
	return len(s)-i == 6 && (s[i] == '+' || s[i] == '-') && digitsAt(s, i+1, 2) && s[i+3] == ':' && digitsAt(s, i+4, 2)
}

func digitsAt(s string, i, n int) bool {
	for k := i; k < i+n; k++ {
		if s[k] < '0' || s[k] > '9' {
			return false
		}
	}
	return true
}

func binaryEnc(b []byte, v any) ([]byte, bool) {
	x, ok := v.([]byte)
	if !ok {
		return b, false
	}
	b = append(b, `\\x`...)
	return hex.AppendEncode(b, x), true
}
