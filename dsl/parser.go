package dsl

import (
	"strings"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// span is one statement of a script: its tokens without comments, ending
// with a tEOF token at the statement's end, and its text span.
type span struct {
	toks     []token
	off, end int // first token's start, last token's end
}

// text returns the statement text as written (comments inside kept).
func (sp span) text(s *source) string { return s.text[sp.off:sp.end] }

// splitScript cuts the tokens of a script at ';' into statements; empty
// statements are dropped. Strings, quoted identifiers and comments were
// already recognised by lex, so a ';' inside them does not split.
func splitScript(all []token) []span {
	var out []span
	var cur []token
	flush := func() {
		if len(cur) > 0 {
			last := cur[len(cur)-1]
			toks := append(cur, token{kind: tEOF, off: last.end, end: last.end})
			out = append(out, span{toks: toks, off: cur[0].off, end: last.end})
		}
		cur = nil
	}
	for _, t := range all {
		switch {
		case t.kind == tComment:
		case t.kind == tEOF:
			flush()
		case t.isOp(";"):
			flush()
		default:
			cur = append(cur, t)
		}
	}
	flush()
	return out
}

// parser is a recursive-descent parser over one statement's tokens. Syntax
// errors stop the statement (panic with bail, recovered by parse); other
// errors are collected in errs and parsing goes on.
type parser struct {
	src  *source
	toks []token
	i    int
	errs pos.List
}

// bail carries a fatal statement error through panic.
type bail struct{ err *pos.Error }

func newParser(s *source, sp span) *parser { return &parser{src: s, toks: sp.toks} }

// parse runs fn and returns every error it reported (nil for none).
func (p *parser) parse(fn func()) (err pos.List) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bail)
			if !ok {
				panic(r)
			}
			p.errs = append(p.errs, b.err)
		}
		err = p.errs
	}()
	fn()
	return p.errs
}

func (p *parser) peek() token { return p.toks[p.i] }

// peekAt returns the token k positions ahead (tEOF past the end).
func (p *parser) peekAt(k int) token {
	if p.i+k >= len(p.toks) {
		return p.toks[len(p.toks)-1]
	}
	return p.toks[p.i+k]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) posOf(t token) pos.Pos { return p.src.pos(t.off) }

// fail stops the statement with an error at t.
func (p *parser) fail(t token, sentinel error, format string, args ...any) {
	panic(bail{errAt(p.posOf(t), sentinel, format, args...)})
}

// report records a non-fatal error at t.
func (p *parser) report(t token, sentinel error, format string, args ...any) {
	p.errs = append(p.errs, errAt(p.posOf(t), sentinel, format, args...))
}

// unexpected stops with "expected WANT, found TOKEN" at the current token
// (or the lexical error there).
func (p *parser) unexpected(want string) {
	t := p.peek()
	if t.kind == tIllegal {
		p.fail(t, ErrSyntax, "%s", t.val)
	}
	p.fail(t, ErrSyntax, "expected %s, found %s", want, p.src.describe(t))
}

// isKw reports whether the tokens ahead are the keywords kws.
func (p *parser) isKw(kws ...string) bool {
	for k, kw := range kws {
		if !p.peekAt(k).isKw(kw) {
			return false
		}
	}
	return true
}

// acceptKw consumes the keywords kws if they are all ahead.
func (p *parser) acceptKw(kws ...string) bool {
	if !p.isKw(kws...) {
		return false
	}
	p.i += len(kws)
	return true
}

// expectKw consumes the keywords kws, failing at the first one missing.
func (p *parser) expectKw(kws ...string) token {
	first := p.peek()
	for _, kw := range kws {
		if !p.peek().isKw(kw) {
			p.unexpected(kw)
		}
		p.next()
	}
	return first
}

func (p *parser) acceptOp(op string) bool {
	if p.peek().isOp(op) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectOp(op string) token {
	if !p.peek().isOp(op) {
		p.unexpected("'" + op + "'")
	}
	return p.next()
}

// reserved are keywords that cannot be unquoted names: they would make the
// grammar ambiguous. Quote them (`select`) to use them as names.
var reserved = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "ON": true, "USING": true, "WHEN": true,
	"THEN": true, "AND": true, "OR": true, "NOT": true, "SET": true, "INTO": true,
	"VALUES": true, "AS": true, "MATCHED": true, "TABLE": true, "CREATE": true, "DROP": true,
	"INSERT": true, "UPDATE": true, "DELETE": true, "MERGE": true, "WITH": true,
	"GROUP": true, "ORDER": true, "LIMIT": true, "HAVING": true, "JOIN": true, "UNION": true,
	"NULL": true, "PRIMARY": true, "IF": true, "BY": true,
	"CASE": true, "END": true, "DISTINCT": true,
}

// name consumes an identifier (plain or backquoted) and returns it as
// written. what names the expected thing for errors ("table name").
func (p *parser) name(what string) (string, token) {
	t := p.peek()
	if t.kind == tQIdent || (t.kind == tIdent && !reserved[strings.ToUpper(t.val)]) {
		p.next()
		return t.val, t
	}
	if t.kind == tIdent {
		p.fail(t, ErrSyntax, "expected %s, found keyword %s (quote it as `%s` to use it as a name)", what, strings.ToUpper(t.val), t.val)
	}
	p.unexpected(what)
	return "", t
}

// objectName is name for tables and streams: a qualified name (db.t) is
// refused.
func (p *parser) objectName(what string) (string, token) {
	n, t := p.name(what)
	if p.peek().isOp(".") {
		p.fail(p.peek(), ErrNotSupported, "qualified %ss are not supported; write the bare %s", what, what)
	}
	return n, t
}

// nameList parses "(a, b, …)" and returns the names and their tokens.
func (p *parser) nameList(what string) ([]string, []token) {
	p.expectOp("(")
	var names []string
	var toks []token
	for {
		n, t := p.name(what)
		names = append(names, n)
		toks = append(toks, t)
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp(")")
	return names, toks
}

// expectEnd fails unless the statement is over.
func (p *parser) expectEnd() {
	if t := p.peek(); t.kind != tEOF {
		if t.kind == tIllegal {
			p.fail(t, ErrSyntax, "%s", t.val)
		}
		p.fail(t, ErrSyntax, "unexpected %s after the end of the statement", p.src.describe(t))
	}
}

// stopFunc tells expr where an expression ends: it is asked about each
// token at nesting depth 0 (outside parentheses and CASE … END).
type stopFunc func(t token) bool

// stopAt stops at any of the keywords or operators given ("," ")" "FROM").
func stopAt(words ...string) stopFunc {
	return func(t token) bool {
		for _, w := range words {
			if t.isOp(w) || t.isKw(w) {
				return true
			}
		}
		return false
	}
}

// expr consumes the tokens of one expression, up to (not including) the
// first token at depth 0 for which stop is true, a ')' closing an outer
// parenthesis, or the end of the statement. It returns the text as written
// and the position of its first byte. what names the expression for errors.
func (p *parser) expr(what string, stop stopFunc) plan.Expr {
	first := p.peek()
	var last token
	n := 0
	var stack []string // open "(" and "CASE"
	for {
		t := p.peek()
		if t.kind == tEOF {
			break
		}
		if t.kind == tIllegal {
			p.fail(t, ErrSyntax, "%s", t.val)
		}
		if len(stack) == 0 && (stop(t) || t.isOp(")")) {
			break
		}
		switch {
		case t.isOp("("):
			stack = append(stack, "(")
		case t.isKw("CASE"):
			stack = append(stack, "CASE")
		case t.isOp(")"), t.isKw("END"):
			want := "("
			if t.isKw("END") {
				want = "CASE"
			}
			if len(stack) == 0 || stack[len(stack)-1] != want {
				p.fail(t, ErrSyntax, "unbalanced %s in %s", p.src.describe(t), what)
			}
			stack = stack[:len(stack)-1]
		case t.isOp(";"):
			p.fail(t, ErrSyntax, "unexpected ';' in %s", what)
		}
		last = p.next()
		n++
	}
	if n == 0 {
		p.unexpected(what)
	}
	if len(stack) > 0 {
		p.fail(p.peek(), ErrSyntax, "unclosed %s in %s", stack[len(stack)-1], what)
	}
	return plan.Expr{Text: p.src.text[first.off:last.end], Pos: p.posOf(first)}
}
