package expr

import (
	"errors"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
)

// Row gives values to Eval: Value(rel, col) is the canonical value of column
// col of relation rel of the Scope (see package cdc).
type Row interface{ Value(rel, col int) any }

// Values is a Row of one relation: Values(row).Value(0, i) is row[i].
type Values []any

// Value implements Row; rel is ignored.
func (v Values) Value(_, col int) any { return v[col] }

// Rows is a Row over several relations: Rows{a, b}.Value(1, i) is b[i].
type Rows [][]any

// Value implements Row.
func (r Rows) Value(rel, col int) any { return r[rel][col] }

// Eval evaluates b on row with SQL semantics and returns a canonical value
// of b.Type() (nil for NULL):
//   - three-valued logic: NULL AND FALSE is FALSE, NULL OR TRUE is TRUE,
//     other NULL operands give NULL; a comparison with NULL is NULL;
//   - NULL propagates through arithmetic, functions and CONCAT
//     (COALESCE, NULLIF, CASE and IS excepted);
//   - DECIMAL arithmetic is exact (shopspring/decimal, never float64) and
//     rounded half away from zero to the result type of types.go;
//   - division or % by zero gives NULL (Spark/Hive default, and what SQLite
//     does); the PostgreSQL rendering wraps the divisor in NULLIF(…, 0);
//   - BIGINT overflow, DECIMAL overflow and a CAST of a value that does not
//     convert are errors wrapping ErrEval, at the expression's position.
func (b *Bound) Eval(row Row) (any, error) {
	ev := evaluator{b: b, row: row}
	return ev.eval(b.root)
}

// EvalBool evaluates a predicate: true only for TRUE (NULL and FALSE are
// false), as a WHERE clause keeps rows.
func (b *Bound) EvalBool(row Row) (bool, error) {
	v, err := b.Eval(row)
	if err != nil {
		return false, err
	}
	t, _ := v.(bool)
	return t, nil
}

type evaluator struct {
	b   *Bound
	row Row
	// unknown, when set, makes column references of these columns evaluate
	// to errUnknown (PossibleOps).
	known func(rel, col int) (any, bool)
}

var errUnknown = errors.New("unknown value")

func (ev *evaluator) fail(n *node, err error) error {
	if errors.Is(err, errUnknown) {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), ErrEval.Error()+": ")
	return ev.b.expr.errAt(n.off, ErrEval, "%s", msg)
}

func (ev *evaluator) evalArgs(ns []*node) ([]any, error) {
	out := make([]any, len(ns))
	for i, n := range ns {
		v, err := ev.eval(n)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (ev *evaluator) eval(n *node) (any, error) {
	switch n.op {
	case opLit:
		return n.val, nil
	case opCol:
		if ev.known != nil {
			if v, ok := ev.known(n.rel, n.col); ok {
				return v, nil
			}
			return nil, errUnknown
		}
		return ev.row.Value(n.rel, n.col), nil
	case opAnd, opOr:
		return ev.logic(n)
	case opNot:
		v, err := ev.eval(n.args[0])
		if err != nil || v == nil {
			return nil, err
		}
		return !v.(bool), nil
	case opCase:
		return ev.caseExpr(n)
	case opFunc:
		switch n.sub {
		case "coalesce":
			for _, a := range n.args {
				v, err := ev.eval(a)
				if err != nil || v != nil {
					return v, err
				}
			}
			return nil, nil
		}
	}
	args, err := ev.evalArgs(n.args)
	if err != nil {
		return nil, err
	}
	switch n.op {
	case opIs:
		v := args[0]
		var r bool
		switch n.sub {
		case "null":
			r = v == nil
		case "true":
			r = v == true
		default:
			r = v == false
		}
		return r != n.not, nil
	case opIn:
		return ev.in(n, args)
	case opBetween:
		lo, err := ev.cmp(n, ">=", args[0], args[1])
		if err != nil {
			return nil, err
		}
		hi, err := ev.cmp(n, "<=", args[0], args[2])
		if err != nil {
			return nil, err
		}
		return not3(and3(lo, hi), n.not), nil
	case opFunc:
		if n.sub == "nullif" {
			eq, err := ev.cmp(n, "=", args[0], args[1])
			if err != nil {
				return nil, err
			}
			if eq == true {
				return nil, nil
			}
			return args[0], nil
		}
	}
	for _, a := range args {
		if a == nil {
			return nil, nil
		}
	}
	switch n.op {
	case opCmp:
		return ev.cmp(n, n.sub, args[0], args[1])
	case opLike:
		esc := '\\'
		if len(args) == 3 {
			esc, _ = utf8.DecodeRuneInString(args[2].(string))
		}
		return likeMatch(args[0].(string), args[1].(string), esc) != n.not, nil
	case opConcat:
		var sb strings.Builder
		for _, a := range args {
			sb.WriteString(a.(string))
		}
		return sb.String(), nil
	case opCast:
		v, err := castValue(args[0], n.args[0].typ, n.typ)
		if err != nil {
			return nil, ev.fail(n, err)
		}
		return v, nil
	case opNeg:
		return ev.arith(n, "-", int64(0), args[0])
	case opArith:
		return ev.arith(n, n.sub, args[0], args[1])
	case opFunc:
		v, err := evalFunc(n, args)
		if err != nil {
			return nil, ev.fail(n, err)
		}
		return v, nil
	}
	return nil, ev.fail(n, errors.New("internal: cannot evaluate"))
}

// and3/or3/not3 are SQL's three-valued logic on bool-or-nil.
func and3(a, b any) any {
	if a == false || b == false {
		return false
	}
	if a == nil || b == nil {
		return nil
	}
	return true
}

func or3(a, b any) any {
	if a == true || b == true {
		return true
	}
	if a == nil || b == nil {
		return nil
	}
	return false
}

func not3(a any, not bool) any {
	if a == nil || !not {
		return a
	}
	return !a.(bool)
}

func (ev *evaluator) logic(n *node) (any, error) {
	a, err := ev.eval(n.args[0])
	if err != nil && !errors.Is(err, errUnknown) {
		return nil, err
	}
	unknownA := err != nil
	// Short-circuit only on the deciding value, so that errors of the other
	// side surface the same way in every evaluation order.
	if !unknownA && ((n.op == opAnd && a == false) || (n.op == opOr && a == true)) {
		return a, nil
	}
	b, err := ev.eval(n.args[1])
	if err != nil && !errors.Is(err, errUnknown) {
		return nil, err
	}
	unknownB := err != nil
	if unknownB && !unknownA && ((n.op == opAnd && a == false) || (n.op == opOr && a == true)) {
		return a, nil
	}
	if unknownB && ((n.op == opAnd && b == false) || (n.op == opOr && b == true)) {
		return b, nil
	}
	if unknownA && !unknownB && ((n.op == opAnd && b == false) || (n.op == opOr && b == true)) {
		return b, nil
	}
	if unknownA || unknownB {
		return nil, errUnknown
	}
	if n.op == opAnd {
		return and3(a, b), nil
	}
	return or3(a, b), nil
}

func (ev *evaluator) caseExpr(n *node) (any, error) {
	i := 0
	for ; i+1 < len(n.args); i += 2 {
		c, err := ev.eval(n.args[i])
		if err != nil {
			return nil, err
		}
		if c == true {
			return ev.eval(n.args[i+1])
		}
	}
	if n.hasElse {
		return ev.eval(n.args[len(n.args)-1])
	}
	return nil, nil
}

func (ev *evaluator) in(n *node, args []any) (any, error) {
	var res any = false
	for _, v := range args[1:] {
		eq, err := ev.cmp(n, "=", args[0], v)
		if err != nil {
			return nil, err
		}
		res = or3(res, eq)
		if res == true {
			break
		}
	}
	return not3(res, n.not), nil
}

func (ev *evaluator) cmp(n *node, sub string, a, b any) (any, error) {
	if a == nil || b == nil {
		return nil, nil
	}
	c, err := compareValues(a, b)
	if err != nil {
		return nil, ev.fail(n, err)
	}
	switch sub {
	case "=":
		return c == 0, nil
	case "<>":
		return c != 0, nil
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	}
	return c >= 0, nil
}

// arith computes a sub b in the domain of n.typ.
func (ev *evaluator) arith(n *node, sub string, a, b any) (any, error) {
	if a == nil || b == nil {
		return nil, nil
	}
	v, err := arithValue(sub, a, b, n.typ)
	if err != nil {
		return nil, ev.fail(n, err)
	}
	return v, nil
}

// arithValue is the arithmetic shared by Eval and the SQLite functions.
func arithValue(sub string, a, b any, t cdc.Type) (any, error) {
	switch {
	case t.Kind == cdc.KindDecimal:
		x, ok1 := toDec(a)
		y, ok2 := toDec(b)
		if !ok1 || !ok2 {
			return nil, errors.New("internal: DECIMAL operand is not a number")
		}
		var r decimal.Decimal
		switch sub {
		case "+":
			r = x.Add(y)
		case "-":
			r = x.Sub(y)
		case "*":
			r = x.Mul(y)
		case "/":
			if y.IsZero() {
				return nil, nil
			}
			r = x.DivRound(y, int32(t.Scale))
		case "%":
			if y.IsZero() {
				return nil, nil
			}
			r = x.Mod(y)
		}
		return fitDecimal(r, t)
	case t.Kind == cdc.KindDouble || t.Kind == cdc.KindFloat:
		x, y := toFloat(a), toFloat(b)
		switch sub {
		case "+":
			return x + y, nil
		case "-":
			return x - y, nil
		case "*":
			return x * y, nil
		case "/":
			if y == 0 {
				return nil, nil
			}
			return x / y, nil
		}
		return nil, errors.New("internal: % on DOUBLE")
	}
	x, ok1 := a.(int64)
	y, ok2 := b.(int64)
	if !ok1 || !ok2 {
		return nil, errors.New("internal: BIGINT operand is not an integer")
	}
	var r int64
	overflow := false
	switch sub {
	case "+":
		r = x + y
		overflow = (x > 0 && y > 0 && r < 0) || (x < 0 && y < 0 && r >= 0)
	case "-":
		r = x - y
		overflow = (x >= 0 && y < 0 && r < 0) || (x < 0 && y > 0 && r >= 0)
	case "*":
		r = x * y
		overflow = x != 0 && (r/x != y || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64))
	case "%":
		if y == 0 {
			return nil, nil
		}
		if y == -1 {
			return int64(0), nil
		}
		r = x % y
	}
	if overflow {
		return nil, errorsf("BIGINT overflow: %d %s %d", x, sub, y)
	}
	return r, nil
}
