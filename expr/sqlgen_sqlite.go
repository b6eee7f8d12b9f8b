package expr

import (
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/cdc"
)

// SQLite is the dialect of SQLite databases written with sluice's storage
// conventions (docs/architecture.md): DECIMAL as fixed-scale TEXT,
// TIMESTAMP as zoned TEXT, DATE as TEXT, BOOLEAN as 0/1.
//
// Every rendered expression yields its value in that storage form: a
// projected DECIMAL(p,s) expression yields the TEXT of exactly s decimals,
// a BOOLEAN yields 0/1. DECIMAL and TIMESTAMP comparisons and arithmetic,
// CAST, LIKE, UPPER/LOWER, SUBSTRING, ROUND and BIGINT + - * call the Go
// functions of SQLiteFunctions (which share Eval's code), so the
// connection running the SQL must have them registered.
var SQLite Dialect = sqliteDialect{}

type sqliteDialect struct{}

func (sqliteDialect) Name() string { return "sqlite" }

func (sqliteDialect) literal(n *node) string {
	switch v := n.val.(type) {
	case nil:
		return "NULL"
	case int64:
		if v < 0 {
			return fmt.Sprintf("(%d)", v)
		}
		return fmt.Sprint(v)
	case float64:
		if v < 0 {
			return "(" + formatFloatSQL(v) + ")"
		}
		return formatFloatSQL(v)
	case string:
		return QuoteString(v)
	case bool:
		if v {
			return "1"
		}
		return "0"
	case []byte:
		return hexLiteral(v)
	}
	return QuoteString(storageText(n.val, n.typ))
}

func typeLit(t cdc.Type) string { return QuoteString(t.String()) }

func (d sqliteDialect) render(r *renderer, n *node) (string, error) {
	if n.op == opLit {
		return d.literal(n), nil
	}
	if n.op == opCol {
		return r.col(n.rel, n.col), nil
	}
	a, err := r.all(n.args)
	if err != nil {
		return "", err
	}
	switch n.op {
	case opNeg:
		switch {
		case n.typ.Kind == cdc.KindDecimal:
			return fmt.Sprintf("sluice_dec_neg(%s, %s)", a[0], typeLit(n.typ)), nil
		case isFloat(n.typ):
			return "(- " + a[0] + ")", nil
		}
		return fmt.Sprintf("sluice_int_sub(0, %s)", a[0]), nil
	case opArith:
		return d.arith(n, a)
	case opConcat:
		return "(" + strings.Join(a, " || ") + ")", nil
	case opCmp:
		return d.cmp(n.sub, n.args[0], n.args[1], a[0], a[1]), nil
	case opAnd:
		return "(" + a[0] + " AND " + a[1] + ")", nil
	case opOr:
		return "(" + a[0] + " OR " + a[1] + ")", nil
	case opNot:
		return "(NOT " + a[0] + ")", nil
	case opIs:
		return isSQL(n, a[0]), nil
	case opIn:
		var s string
		if needsFuncCmp(n.args[0].typ, n.args[1].typ) || anyNeedsFunc(n) {
			parts := make([]string, 0, len(a)-1)
			for i := 1; i < len(a); i++ {
				parts = append(parts, d.cmp("=", n.args[0], n.args[i], a[0], a[i]))
			}
			s = "(" + strings.Join(parts, " OR ") + ")"
		} else {
			s = "(" + a[0] + " IN (" + strings.Join(a[1:], ", ") + "))"
		}
		if n.not {
			return "(NOT " + s + ")", nil
		}
		return s, nil
	case opBetween:
		s := "(" + d.cmp(">=", n.args[0], n.args[1], a[0], a[1]) + " AND " + d.cmp("<=", n.args[0], n.args[2], a[0], a[2]) + ")"
		if n.not {
			return "(NOT " + s + ")", nil
		}
		return s, nil
	case opLike:
		esc := QuoteString(`\`)
		if len(a) == 3 {
			esc = a[2]
		}
		s := fmt.Sprintf("sluice_like(%s, %s, %s)", a[0], a[1], esc)
		if n.not {
			return "(NOT " + s + ")", nil
		}
		return s, nil
	case opCase:
		return caseSQL(n, a), nil
	case opCast:
		from := n.args[0].typ
		switch {
		case isNullType(from):
			return "NULL", nil
		case from == n.typ, from.Kind.IsText() && n.typ.Kind.IsText():
			return a[0], nil
		case isInteger(from) && n.typ.Kind == cdc.KindBigInt:
			return a[0], nil
		case isInteger(from) && isFloat(n.typ), isFloat(from) && isFloat(n.typ):
			return "CAST(" + a[0] + " AS REAL)", nil
		}
		return fmt.Sprintf("sluice_cast(%s, %s, %s)", a[0], typeLit(from), typeLit(n.typ)), nil
	case opFunc:
		return d.function(r, n, a)
	}
	return "", r.b.expr.errAt(n.off, ErrUnsupported, "cannot render this expression for SQLite")
}

func isSQL(n *node, a string) string {
	not := ""
	if n.not {
		not = "NOT "
	}
	return fmt.Sprintf("(%s IS %s%s)", a, not, strings.ToUpper(n.sub))
}

func (sqliteDialect) arith(n *node, a []string) (string, error) {
	names := map[string]string{"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod"}
	switch {
	case n.typ.Kind == cdc.KindDecimal:
		return fmt.Sprintf("sluice_dec_%s(%s, %s, %s)", names[n.sub], a[0], a[1], typeLit(n.typ)), nil
	case isFloat(n.typ):
		// SQLite's REAL arithmetic is IEEE double; x / 0 is NULL as in Eval.
		return "(" + a[0] + " " + n.sub + " " + a[1] + ")", nil
	case n.sub == "%":
		// SQLite: x % 0 is NULL, the sign follows the dividend, as in Eval.
		return "(" + a[0] + " % " + a[1] + ")", nil
	}
	// BIGINT + - * through Go, so that overflow is an error as in Eval
	// (native SQLite silently turns it into REAL).
	return fmt.Sprintf("sluice_int_%s(%s, %s)", names[n.sub], a[0], a[1]), nil
}

// needsFuncCmp reports whether comparing values of types x and y needs a Go
// function: DECIMAL is text (1500.00 vs 1500), TIMESTAMP is zoned text.
func needsFuncCmp(x, y cdc.Type) bool {
	return x.Kind == cdc.KindDecimal || y.Kind == cdc.KindDecimal ||
		x.Kind == cdc.KindTimestamp || y.Kind == cdc.KindTimestamp
}

func anyNeedsFunc(n *node) bool {
	for _, a := range n.args[1:] {
		if needsFuncCmp(n.args[0].typ, a.typ) {
			return true
		}
	}
	return false
}

func (sqliteDialect) cmp(sub string, x, y *node, a, b string) string {
	switch {
	case isNullType(x.typ) || isNullType(y.typ):
		return "(" + a + " " + sub + " " + b + ")"
	case x.typ.Kind == cdc.KindTimestamp || y.typ.Kind == cdc.KindTimestamp:
		return fmt.Sprintf("(sluice_ts_us(%s) %s sluice_ts_us(%s))", a, sub, b)
	case x.typ.Kind == cdc.KindDecimal || y.typ.Kind == cdc.KindDecimal:
		return fmt.Sprintf("(sluice_dec_cmp(%s, %s) %s 0)", a, b, sub)
	}
	return "(" + a + " " + sub + " " + b + ")"
}

func (d sqliteDialect) function(r *renderer, n *node, a []string) (string, error) {
	switch n.sub {
	case "coalesce":
		if len(a) == 1 {
			return a[0], nil
		}
		return "coalesce(" + strings.Join(a, ", ") + ")", nil
	case "nullif":
		return fmt.Sprintf("CASE WHEN %s THEN NULL ELSE %s END", d.cmp("=", n.args[0], n.args[1], a[0], a[1]), a[0]), nil
	case "upper", "lower":
		return fmt.Sprintf("sluice_%s(%s)", n.sub, a[0]), nil
	case "trim", "ltrim", "rtrim", "replace", "length":
		// SQLite's trim family removes spaces only; replace(x, '', y) is x;
		// length counts characters of text and bytes of a BLOB — as Eval.
		return n.sub + "(" + strings.Join(a, ", ") + ")", nil
	case "substring":
		return "sluice_substr(" + strings.Join(a, ", ") + ")", nil
	case "abs":
		if n.typ.Kind == cdc.KindDecimal {
			return fmt.Sprintf("sluice_dec_abs(%s, %s)", a[0], typeLit(n.typ)), nil
		}
		return "abs(" + a[0] + ")", nil
	case "round":
		if n.typ.Kind == cdc.KindDecimal {
			return fmt.Sprintf("sluice_dec_round(%s, %s, %s)", a[0], a[1], typeLit(n.typ)), nil
		}
		return fmt.Sprintf("sluice_round(%s, %s)", a[0], a[1]), nil
	}
	return "", r.b.expr.errAt(n.off, ErrUnsupported, "cannot render %s() for SQLite", n.sub)
}
