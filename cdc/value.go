package cdc

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Coerce converts v, as a driver or decoder returns it, to the canonical Go
// representation of t (see the package doc). Integers, decimal text and
// decimal.Decimal convert exactly; a float64 converts to DECIMAL only through
// its shortest decimal text (strconv 'g', -1). Text converts to numbers,
// booleans, dates and timestamps by parsing. A value that does not fit (out of
// range, too many digits for DECIMAL(p,s), text that is not a number) returns
// a *ValueError with Column empty; callers fill in the key and column.
//
// DECIMAL values are rounded half away from zero to the column's scale, as
// SQL assignment does; integer digits beyond precision-scale are an error.
// VARCHAR(n)/CHAR(n) lengths are not enforced (the backends do).
func Coerce(v any, t Type) (any, error) {
	if v == nil {
		return nil, nil
	}
	bad := func(reason string) (any, error) {
		return nil, &ValueError{Type: t, Value: v, Reason: reason}
	}
	switch {
	case t.Kind.IsInteger():
		n, ok, why := toInt64(v)
		if !ok {
			return bad(why)
		}
		lo, hi := intRange(t.Kind)
		if n < lo || n > hi {
			return bad("out of range")
		}
		return n, nil
	case t.Kind == KindBoolean:
		switch x := v.(type) {
		case bool:
			return x, nil
		case int64:
			return x != 0, nil
		case int:
			return x != 0, nil
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true", "t", "1":
				return true, nil
			case "false", "f", "0":
				return false, nil
			}
		case []byte:
			return Coerce(string(x), t)
		}
		return bad("not a boolean")
	case t.Kind == KindFloat || t.Kind == KindDouble:
		switch x := v.(type) {
		case float64:
			return x, nil
		case Special:
			switch x {
			case PosInfinity:
				return math.Inf(1), nil
			case NegInfinity:
				return math.Inf(-1), nil
			}
			return math.NaN(), nil
		case float32:
			return float64(x), nil
		case int64:
			return float64(x), nil
		case int:
			return float64(x), nil
		case decimal.Decimal:
			f, _ := x.Float64()
			return f, nil
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil {
				return bad("not a number")
			}
			return f, nil
		case []byte:
			return Coerce(string(x), t)
		}
		return bad("not a number")
	case t.Kind == KindDecimal:
		if sp, ok := special(v); ok {
			if sp != NaN && t.Precision > 0 {
				// As PostgreSQL: numeric(p,s) holds NaN but no infinity.
				return bad("not a finite number: a DECIMAL of declared precision holds NaN but no infinity")
			}
			return sp, nil
		}
		d, err := toDecimal(v)
		if err != nil {
			return bad(err.Error())
		}
		if t.Precision == 0 {
			return d, nil
		}
		r, err := FitDecimal(d, t)
		if err != nil {
			// Name the value as given, not its decimal form.
			return bad(err.(*ValueError).Reason)
		}
		return r, nil
	case t.Kind == KindJSON:
		s, ok := asText(v)
		switch v.(type) {
		case int64, int, float64, bool, decimal.Decimal:
			// A number stored under a SQLite JSON column's NUMERIC affinity.
			s, ok = FormatValue(v, Type{}), true
		}
		if !ok || !json.Valid([]byte(s)) {
			return bad("not JSON")
		}
		return s, nil
	case t.Kind == KindUUID:
		if b, ok := v.([16]byte); ok {
			return formatUUID(b), nil
		}
		s, ok := asText(v)
		if !ok || !isUUID(s) {
			return bad("not a UUID (want 8-4-4-4-12 hexadecimal digits)")
		}
		return s, nil
	case t.Kind.IsText():
		if s, ok := asText(v); ok {
			return s, nil
		}
		switch x := v.(type) {
		case int64, int, float64, bool, decimal.Decimal, Special:
			return FormatValue(x, Type{}), nil
		case time.Time:
			return FormatValue(x, TypeTimestamp), nil
		}
		return bad("not text")
	case t.Kind == KindBinary:
		switch x := v.(type) {
		case []byte:
			return x, nil
		case string:
			return []byte(x), nil
		}
		return bad("not binary")
	case t.Kind == KindDate || t.Kind == KindTimestamp:
		if sp, ok := special(v); ok {
			if sp == NaN {
				return bad("NaN is not a point in time")
			}
			return sp, nil
		}
	}
	switch {
	case t.Kind == KindDate:
		switch x := v.(type) {
		case time.Time:
			y, m, d := x.Date()
			return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), nil
		case string:
			tm, err := ParseTimestamp(x)
			if err != nil {
				return bad("not a date (want YYYY-MM-DD)")
			}
			y, m, d := tm.Date()
			return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), nil
		case []byte:
			return Coerce(string(x), t)
		}
		return bad("not a date")
	case t.Kind == KindTimestamp:
		switch x := v.(type) {
		case time.Time:
			return x, nil
		case string:
			tm, err := ParseTimestamp(x)
			if err != nil {
				return bad("not a timestamp (want YYYY-MM-DD HH:MM:SS[.ffffff][±HH:MM])")
			}
			return tm, nil
		case []byte:
			return Coerce(string(x), t)
		}
		return bad("not a timestamp")
	}
	return bad("unsupported type")
}

// special returns the Special that v stands for: a Special, a float64
// NaN or infinity, or its text (ParseSpecial).
func special(v any) (Special, bool) {
	switch x := v.(type) {
	case Special:
		return x, true
	case float64:
		switch {
		case math.IsNaN(x):
			return NaN, true
		case math.IsInf(x, 1):
			return PosInfinity, true
		case math.IsInf(x, -1):
			return NegInfinity, true
		}
	case string:
		return ParseSpecial(x)
	case []byte:
		if len(x) <= 10 {
			return ParseSpecial(string(x))
		}
	}
	return "", false
}

// asText returns v when it is text (a string or bytes).
func asText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	}
	return "", false
}

// isUUID reports whether s is a UUID in a form PostgreSQL reads: 32
// hexadecimal digits, optionally in braces, with hyphens after any group
// of four digits.
func isUUID(s string) bool {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			n++
		case c == '-' && n > 0 && n%4 == 0 && i+1 < len(s) && s[i+1] != '-':
		default:
			return false
		}
	}
	return n == 32
}

func formatUUID(b [16]byte) string {
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func intRange(k Kind) (int64, int64) {
	switch k {
	case KindTinyInt:
		return math.MinInt8, math.MaxInt8
	case KindSmallInt:
		return math.MinInt16, math.MaxInt16
	case KindInt:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func toInt64(v any) (int64, bool, string) {
	switch x := v.(type) {
	case int64:
		return x, true, ""
	case int:
		return int64(x), true, ""
	case int32:
		return int64(x), true, ""
	case int16:
		return int64(x), true, ""
	case int8:
		return int64(x), true, ""
	case bool:
		if x {
			return 1, true, ""
		}
		return 0, true, ""
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || math.IsNaN(x) || x < math.MinInt64 || x >= math.MaxInt64 {
			return 0, false, "not an integer"
		}
		return int64(x), true, ""
	case decimal.Decimal:
		if !x.Equal(x.Truncate(0)) {
			return 0, false, "not an integer"
		}
		if !x.BigInt().IsInt64() {
			return 0, false, "out of range"
		}
		return x.IntPart(), true, ""
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			d, derr := decimal.NewFromString(strings.TrimSpace(x))
			if derr != nil {
				return 0, false, "not an integer"
			}
			return toInt64(d)
		}
		return n, true, ""
	case []byte:
		return toInt64(string(x))
	}
	return 0, false, "not an integer"
}

func toDecimal(v any) (decimal.Decimal, error) {
	switch x := v.(type) {
	case decimal.Decimal:
		return x, nil
	case int64:
		return decimal.NewFromInt(x), nil
	case int:
		return decimal.NewFromInt(int64(x)), nil
	case *big.Int:
		return decimal.NewFromBigInt(x, 0), nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return decimal.Decimal{}, fmt.Errorf("not a finite number")
		}
		return decimal.NewFromString(strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		d, err := decimal.NewFromString(strings.TrimSpace(x))
		if err != nil {
			return decimal.Decimal{}, fmt.Errorf("not a decimal number")
		}
		return d, nil
	case []byte:
		return toDecimal(string(x))
	}
	return decimal.Decimal{}, fmt.Errorf("not a number")
}

// FitDecimal rounds d to t's scale (half away from zero) and checks that it
// has at most t.Precision-t.Scale integer digits. It returns a *ValueError
// when it does not fit.
//
// A DECIMAL without precision (Precision 0) takes d as it is.
func FitDecimal(d decimal.Decimal, t Type) (decimal.Decimal, error) {
	if t.Precision == 0 {
		return d, nil
	}
	r := d.Round(int32(t.Scale))
	// More than p-s digits before the point ⟺ |r| ≥ 10^(p-s) (compared
	// without rendering the integer part, which cost a big.Int and a
	// string per value).
	if r.Abs().Cmp(decimal.New(1, int32(t.Precision-t.Scale))) >= 0 {
		return decimal.Decimal{}, &ValueError{Type: t, Value: d, Reason: fmt.Sprintf("more than %d digits before the decimal point", t.Precision-t.Scale)}
	}
	return r, nil
}

// Timestamp layouts accepted by ParseTimestamp, most specific first.
var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999 Z07:00",
	"2006-01-02 15:04:05.999999999 -0700",
	"2006-01-02 15:04:05.999999999-07",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02",
}

// ParseTimestamp parses the timestamp texts the dialect accepts: ISO 8601 /
// RFC 3339 with 'T' or a space, optional fraction, optional zone offset. A
// text without a zone is taken as UTC. The zone written is kept.
//
// The year is four digits or, outside 0001–9999, ISO 8601's astronomical
// year as FormatTimestamp writes it: 0000 is 1 BC, -0001 is 2 BC, -4712 is
// 4713 BC, and a year after 9999 has all its digits (an optional leading
// '+' is accepted). PostgreSQL's own text of a BC value, with " BC" after
// it ("4713-01-01 00:00:00+00 BC"), is read too.
func ParseTimestamp(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, ok := parseFarTimestamp(s); ok {
		return t, nil
	}
	for _, l := range timestampLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: %q is not a timestamp", ErrBadValue, s)
}

// parseFarTimestamp parses a timestamp text whose year is not four plain
// digits (a sign, more digits, or PostgreSQL's " BC" suffix); ok is false
// for any other text, which ParseTimestamp's layouts read. The rest of the
// text is parsed with a stand-in year of the same leap-ness, so that
// February 29 is valid exactly when it is in the year written.
func parseFarTimestamp(s string) (time.Time, bool) {
	body, bc := strings.CutSuffix(s, " BC")
	i := 0
	neg := false
	if i < len(body) && (body[i] == '+' || body[i] == '-') {
		neg = body[i] == '-'
		i++
	}
	j := i
	for j < len(body) && body[j] >= '0' && body[j] <= '9' {
		j++
	}
	digits := j - i
	if digits < 4 || digits > 9 || j == len(body) || body[j] != '-' || (i == 0 && digits == 4 && !bc) || (bc && i > 0) {
		return time.Time{}, false
	}
	year, _ := strconv.Atoi(body[i:j])
	switch {
	case bc && year == 0:
		return time.Time{}, false // PostgreSQL has no year 0 BC
	case bc:
		year = 1 - year
	case neg:
		year = -year
	}
	stand := "2001"
	if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		stand = "2000"
	}
	var t time.Time
	var err error
	for _, l := range timestampLayouts {
		if t, err = time.Parse(l, stand+body[j:]); err == nil {
			break
		}
	}
	if err != nil {
		return time.Time{}, false
	}
	loc := t.Location()
	if loc != time.UTC {
		_, off := t.Zone()
		loc = time.FixedZone("", off)
	}
	return time.Date(year, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc), true
}

// FormatValue renders a canonical value as text for display and for the text
// storage of SQLite: NULL as "NULL"; DECIMAL with exactly t.Scale fractional
// digits (1500 at scale 2 is "1500.00"); a decimal of unknown scale with its
// own digits; TIMESTAMP as "2006-01-02 15:04:05.999999999-07:00" (zone kept,
// fraction trimmed); DATE as "2006-01-02"; BINARY as lower-case hex with a
// "0x" prefix; floats in the shortest form that round-trips, NaN and the
// infinities as PostgreSQL writes them ("NaN", "Infinity", "-Infinity");
// a Special as Special.Text.
func FormatValue(v any, t Type) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case bool:
		if x {
			return "true"
		}
		return "false"
	case float64:
		switch {
		case math.IsNaN(x):
			return "NaN"
		case math.IsInf(x, 1):
			return "Infinity"
		case math.IsInf(x, -1):
			return "-Infinity"
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case Special:
		return x.Text(t)
	case decimal.Decimal:
		if t.Kind == KindDecimal && t.Precision > 0 {
			return x.StringFixed(int32(t.Scale))
		}
		return DecimalText(x)
	case []byte:
		return "0x" + hex.EncodeToString(x)
	case time.Time:
		if t.Kind == KindDate {
			return x.Format(time.DateOnly)
		}
		return FormatTimestamp(x)
	}
	return fmt.Sprint(v)
}

// FormatTimestamp renders t as "2006-01-02 15:04:05[.ffffff]-07:00" (or
// "Z"-free "+00:00" for UTC), keeping its zone offset. Text in this form sorts
// chronologically only within one zone offset, and only between the years
// 0000 and 9999. A year outside 0001–9999 is ISO 8601's astronomical year:
// 1 BC is 0000, 4713 BC is -4712, 294276 AD is 294276 (ParseTimestamp reads
// each back).
func FormatTimestamp(t time.Time) string {
	return t.Format("2006-01-02 15:04:05.999999999-07:00")
}

// FormatBC renders a DATE or TIMESTAMP value x as FormatValue does for
// type t, except that a year before 1 AD is written as PostgreSQL writes
// it: the year BC, then " BC" (4713 BC, the astronomical year -4712, is
// "4713-01-01 BC"; 1 BC is "0001-12-31 23:00:00+00:00 BC"). PostgreSQL
// reads the text back with a cast, and ParseTimestamp reads it too.
func FormatBC(x time.Time, t Type) string {
	s := FormatValue(x, t)
	y := x.Year()
	if y > 0 {
		return s
	}
	end := strings.IndexByte(s[1:], '-') + 1 // the year's end (s may start with '-')
	return fmt.Sprintf("%04d", 1-y) + s[end:] + " BC"
}

// DecimalText renders d with its own digits, trailing fraction zeros
// included (1.50 stays "1.50"; decimal.String would print "1.5"): the text
// of a DECIMAL without precision, whose scale is each value's own.
func DecimalText(d decimal.Decimal) string {
	if e := d.Exponent(); e < 0 {
		return d.StringFixed(-e)
	}
	return d.String()
}
