// Package expr parses, type-checks, evaluates and renders the SQL
// expressions of job files: filters, projections and MERGE clauses.
//
// CONTRACT STUB — being implemented; signatures are fixed.
package expr

import (
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/pos"
)

// Expr is a parsed, unbound expression.
type Expr struct {
	text string
	pos  pos.Pos
}

// Parse parses one expression written at p (the position of text's first
// byte). Errors are *pos.Error (or pos.List) at the offending token.
func Parse(text string, p pos.Pos) (*Expr, error) { panic("stub") }

// ParseSelectItem parses a projection item "expr [AS alias]" and returns the
// expression and its output name: the alias, else the column name of a bare
// column reference, else an error asking for an alias.
func ParseSelectItem(text string, p pos.Pos) (*Expr, string, error) { panic("stub") }

// Relation is one named row source visible to an expression.
type Relation struct {
	Alias  string // qualifier ("s", "t"); "" when only unqualified refs are allowed
	Schema cdc.Schema
}

// Scope lists the relations an expression may reference. An unqualified
// column resolves in the first relation that has it.
type Scope []Relation

// Bound is a type-checked expression.
type Bound struct{}

// Bind resolves column references in scope and type-checks e. Unknown
// columns are *pos.Error wrapping ErrUnknownColumn at the reference.
func (e *Expr) Bind(s Scope) (*Bound, error) { panic("stub") }

// Type is the result type.
func (b *Bound) Type() cdc.Type { panic("stub") }

// Row gives values to Eval: Value(rel, col) is the canonical value of column
// col of relation rel of the Scope.
type Row interface{ Value(rel, col int) any }

// Eval evaluates b on row with SQL semantics (three-valued logic, NULL
// propagation, exact DECIMAL arithmetic).
func (b *Bound) Eval(row Row) (any, error) { panic("stub") }

// Dialect renders identifiers and functions for one SQL backend.
type Dialect interface {
	Name() string
}

// SQL renders b in dialect d; columns are rendered by col(rel, idx).
func (b *Bound) SQL(d Dialect, col func(rel, idx int) string) (string, error) { panic("stub") }
