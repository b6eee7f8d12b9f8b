package expr

import "strings"

// Limits on the shape of one expression, checked on its tokens before any
// parsing. The expression tree is walked recursively (conversion, binding,
// evaluation, SQL rendering), and its depth is at most the parenthesis
// depth plus the number of operators; the limits keep that recursion
// shallow (a few thousand frames) whatever a job file holds. A filter of a
// million `id = N OR …` terms is refused at once instead of exhausting the
// stack. SQLite itself refuses expression trees deeper than 1000
// (SQLITE_MAX_EXPR_DEPTH), so a pushed-down filter near MaxOperators may
// still fail there, with SQLite's error.
const (
	// MaxDepth is the deepest nesting of parentheses (function calls,
	// CAST, grouping, IN lists) allowed in one expression. (sqlparser
	// itself refuses 200 nested grouping parentheses.)
	MaxDepth = 128
	// MaxOperators is the most operators (AND, OR, NOT, comparisons,
	// arithmetic, ||, IS, LIKE, BETWEEN, IN, CASE branches) allowed in
	// one expression. A long IN list counts once: write `id IN (1, 2, …)`
	// rather than `id = 1 OR id = 2 OR …`.
	MaxOperators = 10000
	// MaxTokens is the most tokens (names, literals, operators,
	// punctuation) allowed in one expression; scanning stops there.
	MaxTokens = 200000
)

// operatorWords are the keywords that make a node of the expression tree.
var operatorWords = map[string]bool{
	"and": true, "or": true, "not": true, "is": true, "like": true,
	"between": true, "in": true, "when": true, "else": true,
}

// checkShape returns an error at the token that exceeds MaxDepth or
// MaxOperators, else nil (scan enforces MaxTokens).
func (e *Expr) checkShape(toks []token) error {
	depth, ops := 0, 0
	for _, t := range toks {
		switch t.kind {
		case tkOp:
			switch t.val {
			case "(":
				depth++
				if depth > MaxDepth {
					return e.errAt(t.start, ErrTooDeep, "expression too deeply nested (limit %d)", MaxDepth)
				}
				continue
			case ")", ",", ".":
				if t.val == ")" {
					depth--
				}
				continue
			}
			ops++
		case tkIdent:
			if !operatorWords[strings.ToLower(t.val)] {
				continue
			}
			ops++
		default:
			continue
		}
		if ops > MaxOperators {
			return e.errAt(t.start, ErrTooLarge, "expression too large: more than %d operators (limit %d; a long OR of equalities is better written as IN (…))", MaxOperators, MaxOperators)
		}
	}
	return nil
}
