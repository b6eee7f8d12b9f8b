package dsl

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/xwb1989/sqlparser"
)

// dml parses INSERT, UPDATE, DELETE and SELECT with sqlparser. Unquoted
// non-ASCII identifiers (which sqlparser's lexer rejects) are backquoted
// first; error positions are mapped back to the text as written.
func (p *parser) dml(base Base, sp span) Statement {
	first := p.peek()
	kind := strings.ToUpper(first.val)
	if first.isOp("(") {
		kind = "SELECT"
	}
	for _, t := range p.toks {
		switch {
		case t.kind == tIllegal:
			p.fail(t, ErrSyntax, "%s", t.val)
		case t.isOp("||"):
			p.fail(t, ErrNotSupported, "'||' is not supported (the SQL parser would read it as OR); use CONCAT(a, b) for string concatenation")
		}
	}
	if kind == "INSERT" && p.peekAt(1).isKw("OVERWRITE") {
		p.fail(p.peekAt(1), ErrNotSupported, "INSERT OVERWRITE is supported only as the consuming statement of a SQL job file")
	}
	if kind == "INSERT" && p.peekAt(1).isKw("INTO") && p.peekAt(2).isKw("TABLE") {
		p.fail(p.peekAt(2), ErrNotSupported, "write INSERT INTO t, not INSERT INTO TABLE t")
	}
	if t, msg, ok := checkStatementShape(p.toks); !ok {
		p.fail(t, ErrTooLarge, "%s", msg)
	}
	text, mapOff := backquoteUnicode(p.src.text, p.toks, sp.off)
	ast, err := parseDML(text)
	if err != nil {
		off, near := sqlparserErrorOffset(err, text)
		t := p.tokenEndingAt(sp.off + mapOff(off))
		switch {
		case t.kind == tEOF:
			p.fail(t, ErrSyntax, "syntax error: unexpected end of statement")
		case near != "" || t.end > t.off:
			p.fail(t, ErrSyntax, "syntax error near %s", p.src.describe(t))
		default:
			p.fail(t, ErrSyntax, "syntax error: %v", err)
		}
	}
	got := ""
	switch a := ast.(type) {
	case *sqlparser.Insert:
		got = "INSERT"
		if a.Action != sqlparser.InsertStr {
			p.fail(first, ErrNotSupported, "%s is not supported", strings.ToUpper(a.Action))
		}
	case *sqlparser.Update:
		got = "UPDATE"
	case *sqlparser.Delete:
		got = "DELETE"
	case *sqlparser.Select, *sqlparser.Union, *sqlparser.ParenSelect:
		got = "SELECT"
	}
	if got != kind {
		p.fail(first, ErrNotSupported, "unsupported %s statement", kind)
	}
	return &DML{Base: base, Kind: kind, AST: ast}
}

// parseDML calls sqlparser.Parse, turning a panic of the parser into an
// error.
func parseDML(text string) (st sqlparser.Statement, err error) {
	defer func() {
		if r := recover(); r != nil {
			st, err = nil, fmt.Errorf("syntax error (parser failure: %v)", r)
		}
	}()
	return sqlparser.Parse(text)
}

// tokenEndingAt returns the token of the statement that ends at byte offset
// off (sqlparser reports the offset just after the offending token), the
// token containing off, or the statement's tEOF.
func (p *parser) tokenEndingAt(off int) token {
	for _, t := range p.toks {
		if t.kind != tEOF && t.end == off {
			return t
		}
	}
	for _, t := range p.toks {
		if t.kind != tEOF && t.off <= off && off < t.end {
			return t
		}
	}
	return p.toks[len(p.toks)-1]
}

var sqlparserPosition = regexp.MustCompile(`at position (\d+)(?: near '(.*)')?`)

// sqlparserErrorOffset extracts the byte offset of a sqlparser error: the
// offset just past the offending token (its "position" minus one). At the
// end of the text it returns len(text)+1 so that no token matches.
func sqlparserErrorOffset(err error, text string) (off int, near string) {
	m := sqlparserPosition.FindStringSubmatch(err.Error())
	if m == nil {
		return len(text) + 1, ""
	}
	n, _ := strconv.Atoi(m[1])
	if n > len(text) {
		return len(text) + 1, m[2]
	}
	return n - 1, m[2]
}

// backquoteUnicode returns the statement text with every unquoted
// identifier that holds a non-ASCII letter wrapped in backquotes, and a
// function mapping a byte offset of the new text to one relative to the
// statement start in the original text.
func backquoteUnicode(src string, toks []token, start int) (string, func(int) int) {
	var b strings.Builder
	var inserted []int // offsets in the new text of each inserted backquote
	last := start
	end := start
	if n := len(toks); n > 0 {
		end = toks[n-1].end
	}
	for _, t := range toks {
		if t.kind != tIdent || isASCII(t.val) {
			continue
		}
		b.WriteString(src[last:t.off])
		inserted = append(inserted, b.Len())
		b.WriteByte('`')
		b.WriteString(src[t.off:t.end])
		inserted = append(inserted, b.Len())
		b.WriteByte('`')
		last = t.end
	}
	b.WriteString(src[last:end])
	mapOff := func(off int) int {
		shift := 0
		for _, ins := range inserted {
			if ins < off {
				shift++
			}
		}
		return off - shift
	}
	return b.String(), mapOff
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
