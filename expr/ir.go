package expr

import (
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/pos"
)

// op is the operator of an IR node. The IR is sluice's own expression tree,
// built from sqlparser's AST by parse.go; binding, evaluation and SQL
// rendering only see the IR.
type op uint8

const (
	opLit     op = iota + 1 // val (canonical Go value), typ (KindInvalid for NULL)
	opCol                   // qual, name → rel, col after binding
	opNeg                   // -args[0]
	opArith                 // args[0] sub args[1]; sub is + - * / %
	opConcat                // args… (|| and CONCAT)
	opCmp                   // args[0] sub args[1]; sub is = <> < <= > >=
	opAnd                   // args[0] AND args[1]
	opOr                    // args[0] OR args[1]
	opNot                   // NOT args[0]
	opIs                    // args[0] IS [NOT] sub; sub is "null", "true", "false"
	opIn                    // args[0] [NOT] IN (args[1:]…)
	opBetween               // args[0] [NOT] BETWEEN args[1] AND args[2]
	opLike                  // args[0] [NOT] LIKE args[1] [ESCAPE args[2]]
	opCase                  // searched: args = cond1, val1, cond2, val2, …, [else]; hasElse
	opCast                  // CAST(args[0] AS typ)
	opFunc                  // sub(args…) — a function of functions.go
)

// node is an IR node. Unbound nodes (from Parse) carry names; bound nodes
// (from Bind) carry resolved columns and result types.
type node struct {
	op      op
	sub     string // operator / function name (lower case)
	not     bool   // NOT IN, NOT LIKE, NOT BETWEEN, IS NOT
	args    []*node
	off     int // byte offset of the node's token in the expression text
	hasElse bool

	// literals
	val    any
	litTxt string // literal text as written (numbers), for error messages

	// column references
	qual, name string
	rel, col   int

	// typ is the literal's type, the CAST target, and after binding the
	// result type of every node. KindInvalid is the type of a bare NULL.
	typ cdc.Type
	// simple is true for a CASE with an operand (CASE x WHEN …), until Bind
	// rewrites it to the searched form; args[0] is then the operand.
	simple bool
}

// Expr is a parsed, unbound expression.
type Expr struct {
	text string
	pos  pos.Pos
	root *node
}

// Text returns the expression text as written.
func (e *Expr) Text() string { return e.text }

// Pos returns the position of the first byte of the text.
func (e *Expr) Pos() pos.Pos { return e.pos }

// errAt returns a *pos.Error at byte offset off of the expression text.
func (e *Expr) errAt(off int, sentinel error, format string, args ...any) *pos.Error {
	return errAt(e.text, e.pos, off, sentinel, format, args...)
}

func errAt(text string, p pos.Pos, off int, sentinel error, format string, args ...any) *pos.Error {
	pe := pos.Errorf(p.At(text, off), format, args...)
	pe.Err = sentinel
	return pe
}

// isNullType reports whether t is the type of a bare NULL literal.
func isNullType(t cdc.Type) bool { return t.Kind == cdc.KindInvalid }
