package expr

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/pos"
)

// Relation is one named row source visible to an expression.
type Relation struct {
	Alias  string // qualifier ("s", "t"); "" when only unqualified refs are allowed
	Schema cdc.Schema
}

// Scope lists the relations an expression may reference. An unqualified
// column resolves in the first relation that has it.
type Scope []Relation

// ColumnRef is a column an expression reads: relation Rel of the Scope,
// column Col of its schema.
type ColumnRef struct{ Rel, Col int }

// Bound is a type-checked expression, safe for concurrent use.
type Bound struct {
	expr *Expr
	root *node
	cols []ColumnRef
}

// Type is the result type. A predicate is BOOLEAN; an expression that is a
// bare NULL has the zero cdc.Type (KindInvalid).
func (b *Bound) Type() cdc.Type { return b.root.typ }

// Columns lists the distinct columns the expression reads, in order of
// first reference.
func (b *Bound) Columns() []ColumnRef { return append([]ColumnRef(nil), b.cols...) }

// Column reports whether b is a bare column reference (no cast, no
// operator) and which column it reads.
func (b *Bound) Column() (ColumnRef, bool) {
	if b.root.op != opCol {
		return ColumnRef{}, false
	}
	return ColumnRef{Rel: b.root.rel, Col: b.root.col}, true
}

// Expr returns the parsed expression b was bound from.
func (b *Bound) Expr() *Expr { return b.expr }

// Bind resolves column references in scope and type-checks e with the type
// rules documented in types.go. Errors are *pos.Error at the offending
// token, wrapping ErrUnknownColumn (the message lists the available
// columns), ErrUnknownRelation or ErrType.
func (e *Expr) Bind(s Scope) (*Bound, error) {
	bd := &binder{e: e, scope: s}
	root, err := bd.bind(e.root)
	if err != nil {
		return nil, err
	}
	return &Bound{expr: e, root: root, cols: bd.cols}, nil
}

// BindPredicate binds e and checks that it is BOOLEAN (or NULL), as a
// filter or a WHEN condition must be.
func (e *Expr) BindPredicate(s Scope) (*Bound, error) {
	b, err := e.Bind(s)
	if err != nil {
		return nil, err
	}
	if t := b.Type(); !isNullType(t) && t.Kind != cdc.KindBoolean {
		return nil, e.errAt(0, ErrType, "a condition must be BOOLEAN, this expression is %s", typeName(t))
	}
	return b, nil
}

type binder struct {
	e     *Expr
	scope Scope
	cols  []ColumnRef
}

func (bd *binder) errf(n *node, sentinel error, format string, args ...any) *pos.Error {
	return bd.e.errAt(n.off, sentinel, format, args...)
}

func (bd *binder) bindAll(ns []*node) ([]*node, error) {
	out := make([]*node, len(ns))
	for i, n := range ns {
		b, err := bd.bind(n)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (bd *binder) bind(n *node) (*node, error) {
	if n.op == opCol {
		return bd.column(n)
	}
	if n.op == opLit {
		c := *n
		return &c, nil
	}
	args, err := bd.bindAll(n.args)
	if err != nil {
		return nil, err
	}
	c := *n
	c.args = args
	out := &c
	switch n.op {
	case opNeg:
		a := args[0]
		if !a.typ.Kind.IsNumeric() && !isNullType(a.typ) {
			return nil, bd.errf(n, ErrType, "unary - needs a number, got %s", typeName(a.typ))
		}
		out.typ = a.typ
		if isInteger(a.typ) || isNullType(a.typ) {
			out.typ = cdc.TypeBigInt
		}
	case opArith:
		return bd.arith(out)
	case opConcat:
		for i, a := range args {
			args[i] = implicitCast(a, cdc.TypeString)
		}
		out.typ = cdc.TypeString
	case opCmp:
		l, r, err := bd.comparable(n, args[0], args[1])
		if err != nil {
			return nil, err
		}
		out.args = []*node{l, r}
		out.typ = cdc.TypeBoolean
	case opAnd, opOr, opNot:
		for _, a := range args {
			if err := bd.needBool(n, a, strings.ToUpper(opWord(n.op))); err != nil {
				return nil, err
			}
		}
		out.typ = cdc.TypeBoolean
	case opIs:
		if n.sub != "null" {
			if err := bd.needBool(n, args[0], "IS "+strings.ToUpper(n.sub)); err != nil {
				return nil, err
			}
		}
		out.typ = cdc.TypeBoolean
	case opIn:
		for i := 1; i < len(args); i++ {
			l, r, err := bd.comparable(args[i], args[0], args[i])
			if err != nil {
				return nil, err
			}
			args[0], args[i] = l, r
		}
		out.typ = cdc.TypeBoolean
	case opBetween:
		for i := 1; i < 3; i++ {
			l, r, err := bd.comparable(n, args[0], args[i])
			if err != nil {
				return nil, err
			}
			args[0], args[i] = l, r
		}
		out.typ = cdc.TypeBoolean
	case opLike:
		for i, a := range args {
			if !a.typ.Kind.IsText() && !isNullType(a.typ) {
				what := []string{"LIKE needs text on the left", "a LIKE pattern must be text", "ESCAPE must be text"}[i]
				return nil, bd.errf(n, ErrType, "%s, got %s (use CAST(x AS STRING))", what, typeName(a.typ))
			}
		}
		if len(args) == 3 {
			if args[2].op != opLit || (args[2].val != nil && utf8Len(args[2].val.(string)) != 1) {
				return nil, bd.errf(args[2], ErrType, "ESCAPE must be a one-character string literal")
			}
		}
		out.typ = cdc.TypeBoolean
	case opCase:
		return bd.caseExpr(out)
	case opCast:
		a := args[0]
		if !castAllowed(a.typ, n.typ) {
			return nil, bd.errf(n, ErrType, "cannot CAST %s to %s", typeName(a.typ), n.typ)
		}
	case opFunc:
		return bd.function(out)
	default:
		return nil, bd.errf(n, ErrUnsupported, "internal: unknown node")
	}
	return out, nil
}

func utf8Len(s string) int { return int(charLength(s)) }

func opWord(o op) string {
	switch o {
	case opAnd:
		return "and"
	case opOr:
		return "or"
	}
	return "not"
}

func (bd *binder) needBool(n, a *node, what string) error {
	if a.typ.Kind != cdc.KindBoolean && !isNullType(a.typ) {
		return bd.errf(n, ErrType, "%s needs BOOLEAN operands, got %s", what, typeName(a.typ))
	}
	return nil
}

func (bd *binder) column(n *node) (*node, error) {
	c := *n
	rel, col := -1, -1
	if n.qual != "" {
		for i, r := range bd.scope {
			if r.Alias != "" && strings.EqualFold(r.Alias, n.qual) {
				rel = i
				break
			}
		}
		if rel < 0 {
			var names []string
			for _, r := range bd.scope {
				if r.Alias != "" {
					names = append(names, r.Alias)
				}
			}
			return nil, bd.errf(n, ErrUnknownRelation, "unknown relation %q in %s.%s (relations: %s)", n.qual, n.qual, n.name, orNone(names))
		}
		col = bd.scope[rel].Schema.Index(n.name)
	} else {
		for i, r := range bd.scope {
			if j := r.Schema.Index(n.name); j >= 0 {
				rel, col = i, j
				break
			}
		}
	}
	if col < 0 {
		var names []string
		for i, r := range bd.scope {
			if rel >= 0 && i != rel {
				continue
			}
			for _, cn := range r.Schema.Names() {
				if r.Alias != "" && len(bd.scope) > 1 {
					cn = r.Alias + "." + cn
				}
				names = append(names, cn)
			}
		}
		ref := n.name
		if n.qual != "" {
			ref = n.qual + "." + n.name
		}
		return nil, bd.errf(n, ErrUnknownColumn, "unknown column %s (columns: %s)", ref, orNone(names))
	}
	c.rel, c.col = rel, col
	c.typ = bd.scope[rel].Schema.Columns[col].Type
	ref := ColumnRef{rel, col}
	found := false
	for _, r := range bd.cols {
		if r == ref {
			found = true
		}
	}
	if !found {
		bd.cols = append(bd.cols, ref)
	}
	return &c, nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (bd *binder) arith(n *node) (*node, error) {
	a, b := n.args[0], n.args[1]
	for _, x := range []*node{a, b} {
		if !x.typ.Kind.IsNumeric() && !isNullType(x.typ) {
			hint := ""
			if x.typ.Kind.IsText() && n.sub == "+" {
				hint = " (use || or CONCAT for text)"
			}
			return nil, bd.errf(n, ErrType, "operator %s needs numbers, got %s%s", n.sub, typeName(x.typ), hint)
		}
	}
	ta, tb := a.typ, b.typ
	if isNullType(ta) {
		ta = tb
	}
	if isNullType(tb) {
		tb = ta
	}
	switch {
	case isNullType(ta):
		n.typ = cdc.TypeBigInt
	case isFloat(ta) || isFloat(tb):
		n.typ = cdc.TypeDouble
		if n.sub == "%" {
			return nil, bd.errf(n, ErrType, "%% needs integer or DECIMAL operands, got %s and %s", typeName(a.typ), typeName(b.typ))
		}
	case ta.Kind == cdc.KindDecimal || tb.Kind == cdc.KindDecimal:
		da, db := asDecimalType(a), asDecimalType(b)
		if isNullType(a.typ) {
			da = db
		}
		if isNullType(b.typ) {
			db = da
		}
		n.typ = decimalResult(n.sub, da, db)
	case n.sub == "/":
		n.typ = cdc.TypeDouble
	default:
		n.typ = cdc.TypeBigInt
	}
	// Operands are converted to the operation type, so that Eval and the
	// SQL renderings see one numeric domain per node.
	if n.typ.Kind == cdc.KindDouble {
		n.args[0], n.args[1] = implicitCast(a, cdc.TypeDouble), implicitCast(b, cdc.TypeDouble)
	}
	return n, nil
}

// implicitCast wraps a in a CAST to t when its type differs (NULL literals
// and text-to-text are left alone).
func implicitCast(a *node, t cdc.Type) *node {
	if a.typ == t || isNullType(a.typ) || (a.typ.Kind.IsText() && t.Kind.IsText()) {
		return a
	}
	if t.Kind == cdc.KindDouble && isFloat(a.typ) {
		return a
	}
	return &node{op: opCast, off: a.off, args: []*node{a}, typ: t}
}

// comparable checks that l and r can be compared (at node n) and coerces a
// literal to the other side's type: '1500' against a DECIMAL column becomes
// the number 1500, 1 against a STRING column becomes '1'.
func (bd *binder) comparable(n, l, r *node) (*node, *node, error) {
	cl, cr := classOf(l.typ), classOf(r.typ)
	if cl == clNull || cr == clNull || cl == cr {
		return l, r, nil
	}
	if r.op == opLit {
		if c, err := coerceLiteral(r, l.typ); err == nil {
			return l, c, nil
		} else if cr == clText {
			return nil, nil, bd.errf(r, ErrType, "cannot compare %s with %s: %v", typeName(l.typ), r.litTxt, err)
		}
	}
	if l.op == opLit {
		if c, err := coerceLiteral(l, r.typ); err == nil {
			return c, r, nil
		} else if cl == clText {
			return nil, nil, bd.errf(l, ErrType, "cannot compare %s with %s: %v", l.litTxt, typeName(r.typ), err)
		}
	}
	return nil, nil, bd.errf(n, ErrType, "cannot compare %s with %s (use CAST)", typeName(l.typ), typeName(r.typ))
}

// coerceLiteral converts literal n to the class of type t. Text to numbers
// keeps the literal's own exactness ('1500.00' → DECIMAL(6,2)).
func coerceLiteral(n *node, t cdc.Type) (*node, error) {
	c := *n
	switch classOf(t) {
	case clText:
		if classOf(n.typ) != clNumeric {
			return nil, fmt.Errorf("not text")
		}
		c.val = n.litTxt
		c.typ = cdc.TypeString
	case clNumeric:
		s, ok := n.val.(string)
		if !ok {
			return nil, fmt.Errorf("not a number")
		}
		s = strings.TrimSpace(s)
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			c.val, c.typ = v, cdc.TypeBigInt
		} else if d, dt, err := decimalLiteral(s); err == nil {
			c.val, c.typ = d, dt
		} else if f, err := strconv.ParseFloat(s, 64); err == nil && isFloat(t) {
			c.val, c.typ = f, cdc.TypeDouble
		} else {
			return nil, fmt.Errorf("%q is not a number", s)
		}
	case clBool, clTemporal, clBinary:
		if !n.typ.Kind.IsText() {
			return nil, fmt.Errorf("not %s", t)
		}
		v, err := cdc.Coerce(n.val, t)
		if err != nil {
			return nil, err
		}
		c.val, c.typ = v, t
	default:
		return nil, fmt.Errorf("not comparable")
	}
	return &c, nil
}

func (bd *binder) caseExpr(n *node) (*node, error) {
	args := n.args
	if n.simple {
		// CASE x WHEN v THEN r … → CASE WHEN x = v THEN r …
		operand := args[0]
		var out []*node
		rest := args[1:]
		for i := 0; i+1 < len(rest); i += 2 {
			l, r, err := bd.comparable(rest[i], operand, rest[i])
			if err != nil {
				return nil, err
			}
			out = append(out, &node{op: opCmp, sub: "=", off: rest[i].off, args: []*node{l, r}, typ: cdc.TypeBoolean}, rest[i+1])
		}
		if n.hasElse {
			out = append(out, rest[len(rest)-1])
		}
		args = out
		n.simple = false
	}
	var vals []*node
	for i := 0; i < len(args); i++ {
		if i%2 == 0 && i+1 < len(args) {
			if err := bd.needBool(args[i], args[i], "WHEN"); err != nil {
				return nil, err
			}
			continue
		}
		vals = append(vals, args[i])
	}
	t, err := bd.common(vals, "CASE branches")
	if err != nil {
		return nil, err
	}
	for i := range args {
		if i%2 == 1 || i == len(args)-1 && n.hasElse {
			args[i] = implicitCast(args[i], t)
		}
	}
	n.args, n.typ = args, t
	return n, nil
}

// common returns the common type of vals (see commonType).
func (bd *binder) common(vals []*node, what string) (cdc.Type, error) {
	acc := &node{}
	for _, v := range vals {
		t, ok := commonType(acc, v)
		if !ok {
			return cdc.Type{}, bd.errf(v, ErrType, "%s mix %s and %s", what, typeName(acc.typ), typeName(v.typ))
		}
		if isNullType(acc.typ) {
			acc = v
		} else {
			acc = &node{typ: t}
		}
	}
	return acc.typ, nil
}

func (bd *binder) function(n *node) (*node, error) {
	args := n.args
	text := func(i int) error {
		if !args[i].typ.Kind.IsText() && !isNullType(args[i].typ) {
			return bd.errf(n, ErrType, "%s() argument %d must be text, got %s (use CAST(x AS STRING))", strings.ToUpper(n.sub), i+1, typeName(args[i].typ))
		}
		return nil
	}
	integer := func(i int) error {
		if !isInteger(args[i].typ) && !isNullType(args[i].typ) {
			return bd.errf(n, ErrType, "%s() argument %d must be an integer, got %s", strings.ToUpper(n.sub), i+1, typeName(args[i].typ))
		}
		return nil
	}
	switch n.sub {
	case "coalesce":
		t, err := bd.common(args, "COALESCE arguments")
		if err != nil {
			return nil, err
		}
		for i := range args {
			args[i] = implicitCast(args[i], t)
		}
		n.typ = t
	case "nullif":
		l, r, err := bd.comparable(n, args[0], args[1])
		if err != nil {
			return nil, err
		}
		n.args = []*node{l, r}
		n.typ = l.typ
	case "upper", "lower", "trim", "ltrim", "rtrim", "replace":
		for i := range args {
			if err := text(i); err != nil {
				return nil, err
			}
		}
		n.typ = cdc.TypeString
	case "substring":
		if err := text(0); err != nil {
			return nil, err
		}
		for i := 1; i < len(args); i++ {
			if err := integer(i); err != nil {
				return nil, err
			}
		}
		n.typ = cdc.TypeString
	case "length":
		if args[0].typ.Kind != cdc.KindBinary {
			if err := text(0); err != nil {
				return nil, err
			}
		}
		n.typ = cdc.TypeBigInt
	case "abs":
		t := args[0].typ
		if !t.Kind.IsNumeric() && !isNullType(t) {
			return nil, bd.errf(n, ErrType, "ABS() needs a number, got %s", typeName(t))
		}
		n.typ = t
		if isInteger(t) || isNullType(t) {
			n.typ = cdc.TypeBigInt
		}
	case "round":
		t := args[0].typ
		if !t.Kind.IsNumeric() && !isNullType(t) {
			return nil, bd.errf(n, ErrType, "ROUND() needs a number, got %s", typeName(t))
		}
		d := int64(0)
		if len(args) == 2 {
			v, ok := args[1].val.(int64)
			if args[1].op != opLit || !ok || v < -38 || v > 38 {
				return nil, bd.errf(args[1], ErrType, "ROUND() digits must be an integer literal between -38 and 38")
			}
			d = v
		}
		n.args = []*node{args[0], {op: opLit, val: d, typ: cdc.TypeBigInt, litTxt: strconv.FormatInt(d, 10)}}
		switch {
		case isNullType(t) || isInteger(t):
			n.typ = cdc.TypeBigInt
		case t.Kind == cdc.KindDecimal:
			s := int(min(max(d, 0), int64(t.Scale)))
			n.typ = cdc.Decimal(min(t.Precision-t.Scale+s+1, maxPrec), s)
		default:
			n.typ = cdc.TypeDouble
		}
	default:
		return nil, bd.errf(n, ErrUnknownFunction, "internal: function %s", n.sub)
	}
	return n, nil
}
