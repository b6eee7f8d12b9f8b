package expr

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
)

// toDec converts an exact or floating number to a decimal. A float64 goes
// through its shortest text (as cdc.Coerce does), never through binary
// digits.
func toDec(v any) (decimal.Decimal, bool) {
	switch x := v.(type) {
	case decimal.Decimal:
		return x, true
	case int64:
		return decimal.NewFromInt(x), true
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return decimal.Decimal{}, false
		}
		d, err := decimal.NewFromString(strconv.FormatFloat(x, 'g', -1, 64))
		return d, err == nil
	case string:
		d, err := decimal.NewFromString(strings.TrimSpace(x))
		return d, err == nil
	case []byte:
		return toDec(string(x))
	}
	return decimal.Decimal{}, false
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case decimal.Decimal:
		f, _ := x.Float64()
		return f
	}
	return math.NaN()
}

// compareValues compares two non-NULL values of one comparison class:
// numbers numerically (int64 exactly, DECIMAL exactly regardless of scale —
// 1500.00 = 1500; a DOUBLE against a DECIMAL through the double's shortest
// text; two DOUBLEs as floats), text and BINARY bytewise, FALSE < TRUE,
// DATE/TIMESTAMP by instant.
func compareValues(a, b any) (int, error) {
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmp3(x < y, x > y), nil
		}
	case float64:
		if y, ok := b.(float64); ok {
			return cmp3(x < y, x > y), nil
		}
		if y, ok := b.(int64); ok {
			return cmp3(x < float64(y), x > float64(y)), nil
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), nil
		}
	case bool:
		if y, ok := b.(bool); ok {
			return cmp3(!x && y, x && !y), nil
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y), nil
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y), nil
		}
	}
	if isNumber(a) && isNumber(b) {
		if y, ok := b.(float64); ok {
			if x, ok := a.(int64); ok {
				return cmp3(float64(x) < y, float64(x) > y), nil
			}
		}
		da, ok1 := toDec(a)
		db, ok2 := toDec(b)
		if ok1 && ok2 {
			return da.Cmp(db), nil
		}
		fa, fb := toFloat(a), toFloat(b)
		return cmp3(fa < fb, fa > fb), nil
	}
	return 0, fmt.Errorf("cannot compare %T with %T", a, b)
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64, decimal.Decimal:
		return true
	}
	return false
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

// castValue implements CAST(v AS to) for v of type from (canonical values
// in and out). Rules beyond cdc.Coerce: numbers to integers truncate toward
// zero (Spark/ClickZetta; 1.9 → 1, -1.9 → -1); text to integer accepts a
// decimal text and truncates it; numbers to BOOLEAN are value <> 0; DECIMAL
// to text keeps the type's scale (1500.00 → '1500.00'); BINARY to text is
// the raw bytes. A value that does not convert is an error naming the value
// and the target type.
func castValue(v any, from, to cdc.Type) (any, error) {
	if v == nil {
		return nil, nil
	}
	bad := func(why string) (any, error) {
		return nil, fmt.Errorf("%w: cannot CAST %s to %s: %s", ErrEval, describeValue(v), to, why)
	}
	switch {
	case to.Kind.IsPlainText():
		return toText(v, from), nil
	case to.Kind.IsText():
		// JSON, UUID, a native type: the text, checked as Coerce does.
		v = toText(v, from)
	case to.Kind.IsInteger():
		switch x := v.(type) {
		case decimal.Decimal:
			v = x.Truncate(0)
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return bad("not a finite number")
			}
			if t := math.Trunc(x); t >= -9.223372036854775808e18 && t < 9.223372036854775808e18 {
				v = int64(t)
			} else {
				return bad("out of range")
			}
		case string:
			s := strings.TrimSpace(x)
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				v = n
			} else if d, err := decimal.NewFromString(s); err == nil && !strings.ContainsAny(s, "eE") {
				v = d.Truncate(0)
			} else {
				return bad("not an integer")
			}
		}
	case to.Kind == cdc.KindBoolean:
		switch x := v.(type) {
		case decimal.Decimal:
			return !x.IsZero(), nil
		case float64:
			return x != 0, nil
		}
	case to.Kind == cdc.KindDecimal:
		if _, ok := v.(bool); ok {
			return bad("not a number")
		}
	}
	out, err := cdc.Coerce(v, to)
	if err != nil {
		var ve *cdc.ValueError
		if e, ok := err.(*cdc.ValueError); ok {
			ve = e
			return bad(ve.Reason)
		}
		return bad(err.Error())
	}
	return out, nil
}

// toText renders a canonical value of type t as CAST(… AS STRING) does.
func toText(v any, t cdc.Type) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case decimal.Decimal:
		if t.Kind == cdc.KindDecimal {
			return x.StringFixed(int32(t.Scale))
		}
		return x.String()
	case time.Time:
		if t.Kind == cdc.KindDate {
			return x.Format(time.DateOnly)
		}
		return cdc.FormatTimestamp(x)
	}
	return cdc.FormatValue(v, t)
}

func describeValue(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return strconv.Quote(x)
	case []byte:
		return fmt.Sprintf("%d bytes", len(x))
	case decimal.Decimal:
		return x.String()
	}
	return cdc.FormatValue(v, cdc.Type{})
}

// fitDecimal rounds d to t's scale and checks its precision; overflow is
// an ErrEval error.
func fitDecimal(d decimal.Decimal, t cdc.Type) (decimal.Decimal, error) {
	r, err := cdc.FitDecimal(d, t)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("%w: decimal overflow: %s does not fit %s", ErrEval, d.String(), t)
	}
	return r, nil
}

// likeMatch reports whether s matches the LIKE pattern p: % any sequence,
// _ one character, esc followed by a character matches that character.
// Matching is on characters and case-sensitive.
func likeMatch(s, p string, esc rune) bool {
	sr, pr := []rune(s), []rune(p)
	// Iterative matcher with backtracking to the last %.
	si, pi := 0, 0
	starP, starS := -1, 0
	for si < len(sr) {
		if pi < len(pr) {
			c := pr[pi]
			switch {
			case c == esc && pi+1 < len(pr):
				if sr[si] == pr[pi+1] {
					si++
					pi += 2
					continue
				}
			case c == '%':
				starP, starS = pi, si
				pi++
				continue
			case c == '_' || c == sr[si]:
				si++
				pi++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		si, pi = starS, starP+1
	}
	for pi < len(pr) && pr[pi] == '%' {
		pi++
	}
	return pi == len(pr)
}
