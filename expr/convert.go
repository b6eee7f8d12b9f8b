package expr

import (
	"strconv"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/xwb1989/sqlparser"
)

// conv converts sqlparser's AST into the IR, assigning each node the offset
// of its token. sqlparser's AST has no positions, so tokens are matched in
// source order: per kind of token a cursor walks the token list, and the AST
// is visited in source order (prefix constructs before their operands,
// infix operators between them).
type conv struct {
	e     *Expr
	pr    *prepared
	cur   map[string]int
	ncast int
}

// find returns the offset of the next token after the cursor named key that
// satisfies match, and advances the cursor. It returns fallback when none.
func (c *conv) find(key string, match func(i int, t token) bool) int {
	for i := c.cur[key]; i < len(c.pr.toks); i++ {
		if t := c.pr.toks[i]; t.kind != tkEOF && match(i, t) {
			c.cur[key] = i + 1
			return t.start
		}
	}
	return 0
}

func (c *conv) kw(word string) int {
	return c.find("kw:"+word, func(_ int, t token) bool {
		return t.kind == tkIdent && strings.EqualFold(t.val, word)
	})
}

func (c *conv) sym(key string, syms ...string) int {
	return c.find("op:"+key, func(_ int, t token) bool {
		if t.kind != tkOp {
			return false
		}
		for _, s := range syms {
			if t.val == s {
				return true
			}
		}
		return false
	})
}

func (c *conv) lit() (int, *token) {
	var found *token
	off := c.find("lit", func(i int, t token) bool {
		if t.kind == tkString || t.kind == tkNumber {
			found = &c.pr.toks[i]
			return true
		}
		return false
	})
	return off, found
}

func (c *conv) unsupported(off int, what string) error {
	return c.e.errAt(off, ErrUnsupported, "%s is not supported", what)
}

func (c *conv) expr(x sqlparser.Expr) (*node, error) {
	switch x := x.(type) {
	case *sqlparser.ParenExpr:
		return c.expr(x.Expr)
	case *sqlparser.AndExpr:
		return c.binary(opAnd, "", x.Left, x.Right, func() int { return c.kw("and") })
	case *sqlparser.OrExpr:
		return c.binary(opOr, "", x.Left, x.Right, func() int { return c.kw("or") })
	case *sqlparser.NotExpr:
		off := c.kw("not")
		a, err := c.expr(x.Expr)
		if err != nil {
			return nil, err
		}
		return &node{op: opNot, off: off, args: []*node{a}}, nil
	case *sqlparser.ComparisonExpr:
		return c.comparison(x)
	case *sqlparser.RangeCond:
		l, err := c.expr(x.Left)
		if err != nil {
			return nil, err
		}
		n := &node{op: opBetween, not: x.Operator == sqlparser.NotBetweenStr}
		if n.not {
			c.kw("not")
		}
		n.off = c.kw("between")
		from, err := c.expr(x.From)
		if err != nil {
			return nil, err
		}
		c.kw("and")
		to, err := c.expr(x.To)
		if err != nil {
			return nil, err
		}
		n.args = []*node{l, from, to}
		return n, nil
	case *sqlparser.IsExpr:
		a, err := c.expr(x.Expr)
		if err != nil {
			return nil, err
		}
		n := &node{op: opIs, args: []*node{a}, off: c.kw("is")}
		if strings.Contains(x.Operator, "not") {
			n.not = true
			c.kw("not")
		}
		n.sub = strings.TrimPrefix(strings.TrimPrefix(x.Operator, "is "), "not ")
		c.kw(n.sub)
		return n, nil
	case *sqlparser.SQLVal:
		return c.literal(x)
	case *sqlparser.NullVal:
		return &node{op: opLit, off: c.kw("null"), litTxt: "NULL"}, nil
	case sqlparser.BoolVal:
		w := "false"
		if x {
			w = "true"
		}
		return &node{op: opLit, off: c.kw(w), val: bool(x), typ: cdc.TypeBoolean, litTxt: strings.ToUpper(w)}, nil
	case *sqlparser.ColName:
		return c.column(x)
	case *sqlparser.BinaryExpr:
		switch x.Operator {
		case sqlparser.BitOrStr: // the pre-pass turned || into |
			return c.binary(opConcat, "||", x.Left, x.Right, func() int { return c.sym("||", "||") })
		case sqlparser.PlusStr, sqlparser.MinusStr, sqlparser.MultStr, sqlparser.DivStr, sqlparser.ModStr:
			sub := x.Operator
			return c.binary(opArith, sub, x.Left, x.Right, func() int { return c.sym(sub, sub) })
		}
		return nil, c.unsupported(0, "operator "+x.Operator)
	case *sqlparser.UnaryExpr:
		switch x.Operator {
		case sqlparser.UMinusStr:
			off := c.sym("-", "-")
			a, err := c.expr(x.Expr)
			if err != nil {
				return nil, err
			}
			return &node{op: opNeg, off: off, args: []*node{a}}, nil
		case sqlparser.UPlusStr:
			c.sym("+", "+")
			return c.expr(x.Expr)
		}
		return nil, c.unsupported(0, "operator "+x.Operator)
	case *sqlparser.FuncExpr:
		return c.function(x)
	case *sqlparser.CaseExpr:
		return c.caseExpr(x)
	case *sqlparser.ConvertExpr:
		off := c.kw("cast")
		a, err := c.expr(x.Expr)
		if err != nil {
			return nil, err
		}
		if c.ncast >= len(c.pr.casts) {
			return nil, c.unsupported(off, "this CAST form")
		}
		t := c.pr.casts[c.ncast]
		c.ncast++
		return &node{op: opCast, off: off, args: []*node{a}, typ: t}, nil
	case *sqlparser.Subquery, *sqlparser.ExistsExpr:
		return nil, c.unsupported(0, "a subquery")
	}
	return nil, c.unsupported(0, "the construct "+quoteTok(sqlparser.String(x)))
}

func (c *conv) binary(o op, sub string, l, r sqlparser.Expr, tok func() int) (*node, error) {
	a, err := c.expr(l)
	if err != nil {
		return nil, err
	}
	off := tok()
	b, err := c.expr(r)
	if err != nil {
		return nil, err
	}
	return &node{op: o, sub: sub, off: off, args: []*node{a, b}}, nil
}

func (c *conv) comparison(x *sqlparser.ComparisonExpr) (*node, error) {
	l, err := c.expr(x.Left)
	if err != nil {
		return nil, err
	}
	n := &node{args: []*node{l}}
	switch x.Operator {
	case "=", "<", ">", "<=", ">=":
		n.op, n.sub = opCmp, x.Operator
		n.off = c.sym(x.Operator, x.Operator)
	case "!=":
		n.op, n.sub = opCmp, "<>"
		n.off = c.sym("<>", "<>", "!=")
	case sqlparser.InStr, sqlparser.NotInStr:
		n.op, n.not = opIn, x.Operator == sqlparser.NotInStr
		if n.not {
			c.kw("not")
		}
		n.off = c.kw("in")
		tuple, ok := x.Right.(sqlparser.ValTuple)
		if !ok {
			return nil, c.unsupported(n.off, "IN with a subquery")
		}
		for _, v := range tuple {
			a, err := c.expr(v)
			if err != nil {
				return nil, err
			}
			n.args = append(n.args, a)
		}
		return n, nil
	case sqlparser.LikeStr, sqlparser.NotLikeStr:
		n.op, n.not = opLike, x.Operator == sqlparser.NotLikeStr
		if n.not {
			c.kw("not")
		}
		n.off = c.kw("like")
	default:
		return nil, c.unsupported(0, "operator "+strings.ToUpper(x.Operator))
	}
	r, err := c.expr(x.Right)
	if err != nil {
		return nil, err
	}
	n.args = append(n.args, r)
	if x.Escape != nil {
		c.kw("escape")
		esc, err := c.expr(x.Escape)
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, esc)
	}
	return n, nil
}

func (c *conv) literal(x *sqlparser.SQLVal) (*node, error) {
	switch x.Type {
	case sqlparser.StrVal:
		off, t := c.lit()
		v := string(x.Val)
		if t != nil && t.kind == tkString {
			v = t.val // our decoding keeps \% and \_ for LIKE
		}
		return &node{op: opLit, off: off, val: v, typ: cdc.TypeString, litTxt: quoteTok(v)}, nil
	case sqlparser.IntVal, sqlparser.FloatVal:
		s := string(x.Val)
		neg := strings.HasPrefix(s, "-")
		var off int
		if neg {
			off = c.sym("-", "-")
			c.lit()
		} else {
			off, _ = c.lit()
		}
		return numberLiteral(c.e, off, s)
	case sqlparser.HexVal:
		off, _ := c.lit()
		b, err := x.HexDecode()
		if err != nil {
			return nil, c.e.errAt(off, ErrSyntax, "bad hex literal: %v", err)
		}
		return &node{op: opLit, off: off, val: b, typ: cdc.TypeBinary, litTxt: "X'" + string(x.Val) + "'"}, nil
	}
	off, _ := c.lit()
	return nil, c.unsupported(off, "the literal "+quoteTok(string(x.Val)))
}

// numberLiteral types a numeric literal: digits only → BIGINT (DECIMAL(38,0)
// when beyond int64), digits with a point → DECIMAL(p,s) exactly as written
// (1000.00 is DECIMAL(6,2)), an exponent → DOUBLE.
func numberLiteral(e *Expr, off int, s string) (*node, error) {
	n := &node{op: opLit, off: off, litTxt: s}
	switch {
	case strings.HasPrefix(strings.ToLower(strings.TrimPrefix(s, "-")), "0x"):
		return nil, e.errAt(off, ErrUnsupported, "hexadecimal number %s is not supported", s)
	case strings.ContainsAny(s, "eE"):
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, e.errAt(off, ErrSyntax, "bad number %s", s)
		}
		n.val, n.typ = f, cdc.TypeDouble
	case strings.Contains(s, "."):
		d, t, err := decimalLiteral(s)
		if err != nil {
			return nil, e.errAt(off, ErrSyntax, "%v", err)
		}
		n.val, n.typ = d, t
	default:
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			n.val, n.typ = v, cdc.TypeBigInt
			return n, nil
		}
		d, t, err := decimalLiteral(s)
		if err != nil {
			return nil, e.errAt(off, ErrSyntax, "%v", err)
		}
		n.val, n.typ = d, t
	}
	return n, nil
}

func (c *conv) column(x *sqlparser.ColName) (*node, error) {
	name := x.Name.String()
	qual := x.Qualifier.Name.String()
	if !x.Qualifier.Qualifier.IsEmpty() {
		return nil, c.unsupported(0, "a three-part name "+quoteTok(sqlparser.String(x)))
	}
	first := name
	if qual != "" {
		first = qual
	}
	toks := c.pr.toks
	off := c.find("col", func(i int, t token) bool {
		if (t.kind != tkIdent && t.kind != tkQIdent) || !strings.EqualFold(t.val, first) {
			return false
		}
		if qual != "" {
			return toks[i+1].val == "." && i+2 < len(toks) && strings.EqualFold(toks[i+2].val, name)
		}
		return toks[i+1].val != "(" && (i == 0 || toks[i-1].val != ".")
	})
	return &node{op: opCol, off: off, qual: qual, name: name}, nil
}

func (c *conv) caseExpr(x *sqlparser.CaseExpr) (*node, error) {
	n := &node{op: opCase, off: c.kw("case")}
	if x.Expr != nil {
		a, err := c.expr(x.Expr)
		if err != nil {
			return nil, err
		}
		n.simple = true
		n.args = append(n.args, a)
	}
	for _, w := range x.Whens {
		woff := c.kw("when")
		cond, err := c.expr(w.Cond)
		if err != nil {
			return nil, err
		}
		if cond.off == 0 {
			cond.off = woff
		}
		c.kw("then")
		val, err := c.expr(w.Val)
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, cond, val)
	}
	if x.Else != nil {
		c.kw("else")
		el, err := c.expr(x.Else)
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, el)
		n.hasElse = true
	}
	return n, nil
}

func (c *conv) function(x *sqlparser.FuncExpr) (*node, error) {
	name := strings.ToLower(x.Name.String())
	toks := c.pr.toks
	off := c.find("fn", func(i int, t token) bool {
		return (t.kind == tkIdent || t.kind == tkQIdent) && strings.EqualFold(t.val, x.Name.String()) && toks[i+1].val == "("
	})
	if !x.Qualifier.IsEmpty() {
		return nil, c.unsupported(off, "a qualified function name")
	}
	if x.Distinct {
		return nil, c.unsupported(off, "DISTINCT in a function call")
	}
	f, ok := functions[name]
	if !ok {
		if aggregates[name] {
			return nil, c.e.errAt(off, ErrUnsupported, "aggregate function %s() is not supported in a row expression", name)
		}
		return nil, c.e.errAt(off, ErrUnknownFunction, "unknown function %s() (known: %s)", name, knownFunctionList())
	}
	n := &node{op: opFunc, sub: f.canonical, off: off}
	for _, se := range x.Exprs {
		ae, ok := se.(*sqlparser.AliasedExpr)
		if !ok {
			return nil, c.unsupported(off, "* in "+name+"()")
		}
		a, err := c.expr(ae.Expr)
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, a)
	}
	if len(n.args) < f.minArgs || (f.maxArgs >= 0 && len(n.args) > f.maxArgs) {
		return nil, c.e.errAt(off, ErrSyntax, "%s() takes %s arguments, got %d", name, f.arity(), len(n.args))
	}
	if f.canonical == "concat" {
		n.op, n.sub = opConcat, ""
	}
	return n, nil
}
