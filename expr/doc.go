// Package expr parses, type-checks, evaluates and renders the SQL
// expressions of job files: filters, projections and MERGE clauses.
//
// Flow: Parse (or ParseSelectItem) turns text into an *Expr using
// github.com/xwb1989/sqlparser plus a token pre-pass (lex.go, parse.go);
// Expr.Bind resolves columns against a Scope and infers types (bind.go,
// types.go); Bound.Eval evaluates on canonical cdc values (eval.go);
// Bound.SQL renders for the SQLite and Postgres dialects with the same
// semantics (sqlgen_*.go), SQLite through the Go functions of
// SQLiteFunctions. PossibleOps tells which change types a filter can keep;
// ParseDML/TranslateDML carry `sluice sql` statements to a backend.
//
// Errors of Parse and Bind are *pos.Error at the offending token, wrapping
// a sentinel of errors.go. The type rules follow Spark SQL / ClickZetta
// (types.go); division by zero is NULL.
package expr
