package expr

import "errors"

// Sentinel errors. Errors returned by Parse, ParseSelectItem and Bind are
// *pos.Error values whose Err is one of these (test with errors.Is).
var (
	// ErrSyntax: the text is not a valid expression.
	ErrSyntax = errors.New("syntax error")
	// ErrUnsupported: a construct sluice's expression dialect does not
	// support (subqueries, window functions, REGEXP, bitwise operators, …).
	ErrUnsupported = errors.New("not supported")
	// ErrUnknownFunction: a function name sluice does not know.
	ErrUnknownFunction = errors.New("unknown function")
	// ErrUnknownColumn: a column reference that resolves in no relation of
	// the scope.
	ErrUnknownColumn = errors.New("unknown column")
	// ErrUnknownRelation: a qualifier (x in x.id) that names no relation
	// of the scope.
	ErrUnknownRelation = errors.New("unknown relation")
	// ErrType: operand types that do not fit an operator or function.
	ErrType = errors.New("type error")
	// ErrNeedAlias: a projection item that is not a bare column and has no
	// "AS name".
	ErrNeedAlias = errors.New("expression needs an alias")
	// ErrEval: a run-time evaluation error (decimal overflow, a CAST of a
	// value that does not convert, integer overflow).
	ErrEval = errors.New("evaluation error")
	// ErrTooDeep: an expression nested deeper than MaxDepth parentheses.
	ErrTooDeep = errors.New("expression too deeply nested")
	// ErrTooLarge: an expression with more than MaxOperators operators or
	// MaxTokens tokens.
	ErrTooLarge = errors.New("expression too large")
)
