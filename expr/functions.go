package expr

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
)

// funcInfo describes a function of the dialect.
type funcInfo struct {
	canonical        string
	minArgs, maxArgs int // maxArgs -1: variadic
}

func (f funcInfo) arity() string {
	switch {
	case f.maxArgs < 0:
		return fmt.Sprintf("at least %d", f.minArgs)
	case f.minArgs == f.maxArgs:
		return fmt.Sprint(f.minArgs)
	}
	return fmt.Sprintf("%d to %d", f.minArgs, f.maxArgs)
}

// functions are the scalar functions of the dialect, by lower-case name.
// Semantics (Eval, and the SQL renderings, agree):
//
//	COALESCE(a, …) / IFNULL(a,b) / NVL(a,b)  first non-NULL argument
//	NULLIF(a, b)            NULL when a = b, else a
//	UPPER(s) / LOWER(s)     Unicode case mapping (Go strings.ToUpper/ToLower)
//	CONCAT(a, …)            text concatenation; NULL if any argument is NULL
//	                        (Spark/ClickZetta; not PostgreSQL's concat())
//	SUBSTRING(s, pos[, len]) / SUBSTR  characters from 1-based pos; pos 0
//	                        counts as 1, a negative pos counts from the end;
//	                        len < 0 gives '' (Spark's substringSQL)
//	LENGTH(s) / CHAR_LENGTH characters of text, bytes of BINARY
//	ABS(x)                  absolute value, same type
//	ROUND(x[, d])           half away from zero to d (a literal) decimals
//	TRIM/LTRIM/RTRIM(s)     remove spaces (U+0020) at both / left / right end
//	REPLACE(s, from, to)    replace every occurrence; from '' leaves s as is
var functions = map[string]funcInfo{
	"coalesce":         {"coalesce", 1, -1},
	"ifnull":           {"coalesce", 2, 2},
	"nvl":              {"coalesce", 2, 2},
	"nullif":           {"nullif", 2, 2},
	"upper":            {"upper", 1, 1},
	"ucase":            {"upper", 1, 1},
	"lower":            {"lower", 1, 1},
	"lcase":            {"lower", 1, 1},
	"concat":           {"concat", 1, -1},
	"substring":        {"substring", 2, 3},
	"substr":           {"substring", 2, 3},
	"length":           {"length", 1, 1},
	"char_length":      {"length", 1, 1},
	"character_length": {"length", 1, 1},
	"abs":              {"abs", 1, 1},
	"round":            {"round", 1, 2},
	"trim":             {"trim", 1, 1},
	"ltrim":            {"ltrim", 1, 1},
	"rtrim":            {"rtrim", 1, 1},
	"replace":          {"replace", 3, 3},
}

var aggregates = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true,
	"group_concat": true, "stddev": true, "variance": true,
}

func isFunctionName(name string) bool {
	_, ok := functions[strings.ToLower(name)]
	return ok
}

func knownFunctionList() string {
	var names []string
	for n := range functions {
		names = append(names, strings.ToUpper(n))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// substringSQL implements SUBSTRING(s, pos, length) on characters with
// Spark's rules (UTF8String.substringSQL). hasLen false means "to the end".
func substringSQL(s string, pos, length int64, hasLen bool) string {
	runes := []rune(s)
	n := int64(len(runes))
	var start int64
	switch {
	case pos > 0:
		start = pos - 1
	case pos < 0:
		start = n + pos
	}
	end := n
	if hasLen {
		if start > 0 && length > n {
			end = n // start+length could overflow
		} else {
			end = start + length
		}
	}
	start = max(start, 0)
	end = min(end, n)
	if start >= end {
		return ""
	}
	return string(runes[start:end])
}

func charLength(s string) int64 { return int64(utf8.RuneCountInString(s)) }

func replaceAll(s, from, to string) string {
	if from == "" {
		return s
	}
	return strings.ReplaceAll(s, from, to)
}

func errorsf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrEval}, args...)...)
}

// evalFunc evaluates a function of functions (not COALESCE/NULLIF, which
// Eval handles) on non-NULL canonical arguments.
func evalFunc(n *node, args []any) (any, error) {
	switch n.sub {
	case "upper":
		return strings.ToUpper(args[0].(string)), nil
	case "lower":
		return strings.ToLower(args[0].(string)), nil
	case "trim":
		return strings.Trim(args[0].(string), " "), nil
	case "ltrim":
		return strings.TrimLeft(args[0].(string), " "), nil
	case "rtrim":
		return strings.TrimRight(args[0].(string), " "), nil
	case "replace":
		return replaceAll(args[0].(string), args[1].(string), args[2].(string)), nil
	case "substring":
		if len(args) == 3 {
			return substringSQL(args[0].(string), args[1].(int64), args[2].(int64), true), nil
		}
		return substringSQL(args[0].(string), args[1].(int64), 0, false), nil
	case "length":
		if b, ok := args[0].([]byte); ok {
			return int64(len(b)), nil
		}
		return charLength(args[0].(string)), nil
	case "abs":
		return absValue(args[0], n.typ)
	case "round":
		return roundValue(args[0], args[1].(int64), n.typ)
	}
	return nil, errorsf("internal: function %s", n.sub)
}

func absValue(v any, t cdc.Type) (any, error) {
	switch x := v.(type) {
	case int64:
		if x == math.MinInt64 {
			return nil, errorsf("BIGINT overflow: ABS(%d)", x)
		}
		if x < 0 {
			return -x, nil
		}
		return x, nil
	case float64:
		return math.Abs(x), nil
	case decimal.Decimal:
		return fitDecimal(x.Abs(), t)
	}
	return nil, errorsf("internal: ABS of %T", v)
}

// roundValue rounds half away from zero to d decimals (d < 0: to tens,
// hundreds, …).
func roundValue(v any, d int64, t cdc.Type) (any, error) {
	switch x := v.(type) {
	case int64:
		if d >= 0 {
			return x, nil
		}
		r, err := fitDecimal(decimal.NewFromInt(x).Round(int32(d)), cdc.Decimal(38, 0))
		if err != nil || !r.BigInt().IsInt64() {
			return nil, errorsf("BIGINT overflow: ROUND(%d, %d)", x, d)
		}
		return r.IntPart(), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return x, nil
		}
		dd, ok := toDec(x)
		if !ok {
			return x, nil
		}
		f, _ := dd.Round(int32(d)).Float64()
		return f, nil
	case decimal.Decimal:
		return fitDecimal(x.Round(int32(d)), t)
	}
	return nil, errorsf("internal: ROUND of %T", v)
}
