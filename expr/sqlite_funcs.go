package expr

import (
	"database/sql/driver"
	"fmt"
	"sync"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
)

// SQLiteFunction is a scalar function the SQL of the SQLite dialect calls.
// NArgs is the argument count (-1: variadic). Register each on the driver
// with modernc.org/sqlite:
//
//	for _, f := range expr.SQLiteFunctions {
//		f := f
//		sqlite.MustRegisterDeterministicScalarFunction(f.Name, int32(f.NArgs),
//			func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
//				return f.Func(args)
//			})
//	}
//
// Arguments arrive as SQLite values (nil, int64, float64, string, []byte);
// results are SQLite values in the storage form of the result type.
type SQLiteFunction struct {
	Name  string
	NArgs int
	Func  func(args []driver.Value) (driver.Value, error)
}

// SQLiteFunctions are the functions SQL rendered for SQLite needs. Each
// takes NULL to NULL unless noted:
//
//	sluice_dec_cmp(a, b)              -1/0/1 comparing two numbers exactly (DECIMAL text, integers, reals)
//	sluice_dec_same(a, b)             1 when both are NULL or equal numbers ('2' and '2.00'), else 0 (text that is not a number compares as text)
//	sluice_dec_add|sub|mul|div|mod(a, b, 'DECIMAL(p,s)')  exact arithmetic, fixed-scale TEXT; /0 and %0 give NULL
//	sluice_dec_neg|abs(a, 'DECIMAL(p,s)'), sluice_dec_round(a, d, 'DECIMAL(p,s)')
//	sluice_int_add|sub|mul(a, b)      BIGINT arithmetic; overflow is an error
//	sluice_ts_us(x)                   TIMESTAMP or DATE text → UTC microseconds since 1970
//	sluice_like(s, pattern, escape)   case-sensitive LIKE → 0/1
//	sluice_upper(s), sluice_lower(s)  Unicode case mapping
//	sluice_substr(s, pos[, len])      SUBSTRING with Spark's rules
//	sluice_round(x, d)                ROUND of a BIGINT or DOUBLE
//	sluice_cast(x, 'FROM', 'TO')      CAST as Eval does it (errors name the value and type)
var SQLiteFunctions = []SQLiteFunction{
	{"sluice_dec_cmp", 2, sqlDecCmp},
	{"sluice_dec_same", 2, sqlDecSame},
	{"sluice_dec_add", 3, decArith("+")},
	{"sluice_dec_sub", 3, decArith("-")},
	{"sluice_dec_mul", 3, decArith("*")},
	{"sluice_dec_div", 3, decArith("/")},
	{"sluice_dec_mod", 3, decArith("%")},
	{"sluice_dec_neg", 2, decUnary("neg")},
	{"sluice_dec_abs", 2, decUnary("abs")},
	{"sluice_dec_round", 3, sqlDecRound},
	{"sluice_int_add", 2, intArith("+")},
	{"sluice_int_sub", 2, intArith("-")},
	{"sluice_int_mul", 2, intArith("*")},
	{"sluice_ts_us", 1, sqlTsUs},
	{"sluice_like", 3, sqlLike},
	{"sluice_upper", 1, strFunc("upper")},
	{"sluice_lower", 1, strFunc("lower")},
	{"sluice_substr", -1, sqlSubstr},
	{"sluice_round", 2, sqlRound},
	{"sluice_cast", 3, sqlCast},
}

var typeCache sync.Map // string → cdc.Type

func argType(v driver.Value) (cdc.Type, error) {
	s, ok := v.(string)
	if !ok {
		return cdc.Type{}, fmt.Errorf("sluice: type argument must be text, got %T", v)
	}
	if t, ok := typeCache.Load(s); ok {
		return t.(cdc.Type), nil
	}
	t, err := cdc.ParseType(s)
	if err != nil {
		return cdc.Type{}, err
	}
	typeCache.Store(s, t)
	return t, nil
}

// fromStorage converts a SQLite value stored for type t to the canonical
// value of t.
func fromStorage(v driver.Value, t cdc.Type) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch t.Kind {
	case cdc.KindDecimal:
		d, ok := toDec(v)
		if !ok {
			return nil, fmt.Errorf("%w: %s is not a DECIMAL", ErrEval, describeValue(v))
		}
		return d, nil
	case cdc.KindTimestamp, cdc.KindDate:
		if tm, ok := v.(time.Time); ok {
			return cdc.Coerce(tm, t)
		}
	case cdc.KindBoolean:
		if n, ok := v.(int64); ok {
			return n != 0, nil
		}
	}
	out, err := cdc.Coerce(v, t)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEval, err)
	}
	return out, nil
}

// toStorage converts a canonical value of type t to its SQLite storage form.
func toStorage(v any, t cdc.Type) driver.Value {
	switch x := v.(type) {
	case nil:
		return nil
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	case decimal.Decimal, time.Time:
		return storageText(x, t)
	}
	return v
}

func anyNil(args []driver.Value) bool {
	for _, a := range args {
		if a == nil {
			return true
		}
	}
	return false
}

func sqlDecCmp(args []driver.Value) (driver.Value, error) {
	if anyNil(args) {
		return nil, nil
	}
	a, ok1 := toDec(args[0])
	b, ok2 := toDec(args[1])
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("sluice_dec_cmp: %s or %s is not a number", describeValue(args[0]), describeValue(args[1]))
	}
	return int64(a.Cmp(b)), nil
}

// sqlDecSame is sluice_dec_same: whether two stored DECIMAL values are the
// same number (a STANDARD stream's "no change" test on SQLite, where a
// DECIMAL is stored as text whose form depends on the writer: '2', '2.00').
func sqlDecSame(args []driver.Value) (driver.Value, error) {
	switch {
	case args[0] == nil && args[1] == nil:
		return int64(1), nil
	case args[0] == nil || args[1] == nil:
		return int64(0), nil
	}
	a, ok1 := toDec(args[0])
	b, ok2 := toDec(args[1])
	if !ok1 || !ok2 {
		if fmt.Sprint(args[0]) == fmt.Sprint(args[1]) {
			return int64(1), nil
		}
		return int64(0), nil
	}
	if a.Cmp(b) == 0 {
		return int64(1), nil
	}
	return int64(0), nil
}

func decArith(sub string) func([]driver.Value) (driver.Value, error) {
	return func(args []driver.Value) (driver.Value, error) {
		if anyNil(args) {
			return nil, nil
		}
		t, err := argType(args[2])
		if err != nil {
			return nil, err
		}
		v, err := arithValue(sub, args[0], args[1], t)
		if err != nil {
			return nil, err
		}
		return toStorage(v, t), nil
	}
}

func decUnary(what string) func([]driver.Value) (driver.Value, error) {
	return func(args []driver.Value) (driver.Value, error) {
		if anyNil(args) {
			return nil, nil
		}
		t, err := argType(args[1])
		if err != nil {
			return nil, err
		}
		var v any
		if what == "neg" {
			v, err = arithValue("-", int64(0), args[0], t)
		} else {
			d, ok := toDec(args[0])
			if !ok {
				return nil, fmt.Errorf("%w: %s is not a DECIMAL", ErrEval, describeValue(args[0]))
			}
			v, err = absValue(d, t)
		}
		if err != nil {
			return nil, err
		}
		return toStorage(v, t), nil
	}
}

func sqlDecRound(args []driver.Value) (driver.Value, error) {
	if anyNil(args) {
		return nil, nil
	}
	t, err := argType(args[2])
	if err != nil {
		return nil, err
	}
	d, ok := toDec(args[0])
	n, ok2 := args[1].(int64)
	if !ok || !ok2 {
		return nil, fmt.Errorf("sluice_dec_round: bad arguments")
	}
	v, err := roundValue(d, n, t)
	if err != nil {
		return nil, err
	}
	return toStorage(v, t), nil
}

func intArith(sub string) func([]driver.Value) (driver.Value, error) {
	return func(args []driver.Value) (driver.Value, error) {
		if anyNil(args) {
			return nil, nil
		}
		return arithValue(sub, args[0], args[1], cdc.TypeBigInt)
	}
}

func sqlTsUs(args []driver.Value) (driver.Value, error) {
	v := args[0]
	switch x := v.(type) {
	case nil:
		return nil, nil
	case time.Time:
		return x.UnixMicro(), nil
	case string:
		tm, err := cdc.ParseTimestamp(x)
		if err != nil {
			return nil, err
		}
		return tm.UnixMicro(), nil
	}
	return nil, fmt.Errorf("sluice_ts_us: %s is not a timestamp", describeValue(v))
}

func sqlLike(args []driver.Value) (driver.Value, error) {
	if anyNil(args) {
		return nil, nil
	}
	s, ok1 := args[0].(string)
	p, ok2 := args[1].(string)
	e, ok3 := args[2].(string)
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("sluice_like: arguments must be text")
	}
	esc := []rune(e)
	if len(esc) != 1 {
		return nil, fmt.Errorf("sluice_like: ESCAPE must be one character")
	}
	return toStorage(likeMatch(s, p, esc[0]), cdc.TypeBoolean), nil
}

func strFunc(name string) func([]driver.Value) (driver.Value, error) {
	return func(args []driver.Value) (driver.Value, error) {
		if anyNil(args) {
			return nil, nil
		}
		s, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("sluice_%s: argument must be text", name)
		}
		return evalFunc(&node{sub: name}, []any{s})
	}
}

func sqlSubstr(args []driver.Value) (driver.Value, error) {
	if len(args) < 2 || len(args) > 3 {
		return nil, fmt.Errorf("sluice_substr: takes 2 or 3 arguments")
	}
	if anyNil(args) {
		return nil, nil
	}
	s, ok := args[0].(string)
	p, ok2 := args[1].(int64)
	if !ok || !ok2 {
		return nil, fmt.Errorf("sluice_substr: bad arguments")
	}
	if len(args) == 3 {
		l, ok := args[2].(int64)
		if !ok {
			return nil, fmt.Errorf("sluice_substr: bad length")
		}
		return substringSQL(s, p, l, true), nil
	}
	return substringSQL(s, p, 0, false), nil
}

func sqlRound(args []driver.Value) (driver.Value, error) {
	if anyNil(args) {
		return nil, nil
	}
	d, ok := args[1].(int64)
	if !ok {
		return nil, fmt.Errorf("sluice_round: digits must be an integer")
	}
	switch args[0].(type) {
	case int64:
		return roundValue(args[0], d, cdc.TypeBigInt)
	case float64:
		return roundValue(args[0], d, cdc.TypeDouble)
	}
	return nil, fmt.Errorf("sluice_round: %s is not a number", describeValue(args[0]))
}

func sqlCast(args []driver.Value) (driver.Value, error) {
	from, err := argType(args[1])
	if err != nil {
		return nil, err
	}
	to, err := argType(args[2])
	if err != nil {
		return nil, err
	}
	v, err := fromStorage(args[0], from)
	if err != nil {
		return nil, err
	}
	out, err := castValue(v, from, to)
	if err != nil {
		return nil, err
	}
	return toStorage(out, to), nil
}
