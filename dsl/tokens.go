package dsl

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sluicedata/sluice/pos"
)

// source maps byte offsets of one file's text to positions.
type source struct {
	file       string
	text       string
	lineStarts []int   // byte offset of the first byte of each line
	base       pos.Pos // position of the text's first byte (1:1 for a whole file)
}

func newSource(file, text string) *source {
	return newSourceAt(pos.Pos{File: file, Line: 1, Col: 1}, text)
}

// newSourceAt maps text that starts at position start of its file.
func newSourceAt(start pos.Pos, text string) *source {
	if start.Line < 1 || start.Col < 1 {
		start.Line, start.Col = 1, 1
	}
	s := &source{file: start.File, text: text, lineStarts: []int{0}, base: start}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			s.lineStarts = append(s.lineStarts, i+1)
		}
	}
	return s
}

// pos returns the position of byte offset off (clamped to the text).
func (s *source) pos(off int) pos.Pos {
	if off < 0 {
		off = 0
	}
	if off > len(s.text) {
		off = len(s.text)
	}
	line := sort.Search(len(s.lineStarts), func(i int) bool { return s.lineStarts[i] > off }) - 1
	col := off - s.lineStarts[line] + 1
	if line == 0 {
		col += s.base.Col - 1
	}
	return pos.Pos{File: s.file, Line: s.base.Line + line, Col: col}
}

// tokKind classifies SQL tokens.
type tokKind uint8

const (
	tEOF     tokKind = iota
	tIdent           // unquoted identifier or keyword
	tQIdent          // `backquoted identifier`
	tString          // 'string' or "string"
	tNumber          // 12, 1.5, .5, 1e3
	tOp              // punctuation and operators
	tComment         // -- line, # line or /* block */ comment
	tIllegal         // a lexical error; val is the message
)

// token is one SQL token. off and end are byte offsets into the file text.
type token struct {
	kind     tokKind
	off, end int
	// val is the identifier name (backquotes removed, doubled backquotes
	// undone), the decoded string value, the operator text, the number
	// text, or, for tIllegal, the error message.
	val string
}

// isKw reports whether t is the unquoted keyword kw (case-insensitive).
func (t token) isKw(kw string) bool { return t.kind == tIdent && strings.EqualFold(t.val, kw) }

// isOp reports whether t is the operator op.
func (t token) isOp(op string) bool { return t.kind == tOp && t.val == op }

// isName reports whether t can be an identifier.
func (t token) isName() bool { return t.kind == tIdent || t.kind == tQIdent }

// multi-byte operators, longest first.
var operators = []string{"<=>", "->>", "<=", ">=", "<>", "!=", "||", "&&", "::", "->", "<<", ">>"}

// lex splits text[from:to] into tokens, comments included. It never fails:
// lexical errors become tIllegal tokens. The last token is tEOF at to.
func lex(text string, from, to int) []token {
	var toks []token
	i := from
	for i < to {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < to && text[i+1] == '-', c == '#':
			j := strings.IndexByte(text[i:to], '\n')
			if j < 0 {
				j = to - i
			}
			toks = append(toks, token{kind: tComment, off: i, end: i + j, val: text[i : i+j]})
			i += j
		case c == '/' && i+1 < to && text[i+1] == '*':
			j := strings.Index(text[i+2:to], "*/")
			if j < 0 {
				toks = append(toks, token{kind: tIllegal, off: i, end: to, val: "unterminated /* comment"})
				i = to
				break
			}
			end := i + 2 + j + 2
			toks = append(toks, token{kind: tComment, off: i, end: end, val: text[i:end]})
			i = end
		case c == '\'' || c == '"':
			t := lexString(text, i, to)
			toks = append(toks, t)
			i = t.end
		case c == '`':
			t := lexQuotedIdent(text, i, to)
			toks = append(toks, t)
			i = t.end
		case c >= '0' && c <= '9', c == '.' && i+1 < to && text[i+1] >= '0' && text[i+1] <= '9':
			j := lexNumber(text, i, to)
			toks = append(toks, token{kind: tNumber, off: i, end: j, val: text[i:j]})
			i = j
		default:
			r, size := utf8.DecodeRuneInString(text[i:to])
			if isIdentStart(r) {
				j := i + size
				for j < to {
					r2, s2 := utf8.DecodeRuneInString(text[j:to])
					if !isIdentPart(r2) {
						break
					}
					j += s2
				}
				toks = append(toks, token{kind: tIdent, off: i, end: j, val: text[i:j]})
				i = j
				break
			}
			if c < utf8.RuneSelf && c > ' ' && c != 0x7f {
				op := string(c)
				for _, o := range operators {
					if strings.HasPrefix(text[i:to], o) {
						op = o
						break
					}
				}
				toks = append(toks, token{kind: tOp, off: i, end: i + len(op), val: op})
				i += len(op)
				break
			}
			msg := "unexpected character " + quoteRune(r)
			if r == utf8.RuneError && size <= 1 {
				msg = "invalid UTF-8 byte"
			}
			toks = append(toks, token{kind: tIllegal, off: i, end: i + size, val: msg})
			i += size
		}
	}
	return append(toks, token{kind: tEOF, off: to, end: to})
}

func quoteRune(r rune) string {
	if r < ' ' || r == 0x7f || !unicode.IsPrint(r) {
		return fmt.Sprintf("U+%04X", r)
	}
	return fmt.Sprintf("%q", r)
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }

func isIdentPart(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r)
}

// lexString scans a string literal quoted by text[i] ('…' or "…"). A
// doubled quote or a backslash escape stands for the character.
func lexString(text string, i, to int) token {
	q := text[i]
	var b strings.Builder
	j := i + 1
	for j < to {
		c := text[j]
		switch {
		case c == q && j+1 < to && text[j+1] == q:
			b.WriteByte(q)
			j += 2
		case c == q:
			return token{kind: tString, off: i, end: j + 1, val: b.String()}
		case c == '\\' && j+1 < to:
			b.WriteByte(unescape(text[j+1]))
			j += 2
		default:
			b.WriteByte(c)
			j++
		}
	}
	return token{kind: tIllegal, off: i, end: to, val: "unterminated string"}
}

// unescape decodes the character after a backslash as MySQL (and sqlparser)
// do.
func unescape(c byte) byte {
	switch c {
	case '0':
		return 0
	case 'b':
		return '\b'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'Z':
		return 26
	}
	return c
}

// lexQuotedIdent scans a backquoted identifier; a doubled backquote stands
// for one.
func lexQuotedIdent(text string, i, to int) token {
	var b strings.Builder
	j := i + 1
	for j < to {
		if text[j] == '`' {
			if j+1 < to && text[j+1] == '`' {
				b.WriteByte('`')
				j += 2
				continue
			}
			if b.Len() == 0 {
				return token{kind: tIllegal, off: i, end: j + 1, val: "empty quoted identifier"}
			}
			return token{kind: tQIdent, off: i, end: j + 1, val: b.String()}
		}
		b.WriteByte(text[j])
		j++
	}
	return token{kind: tIllegal, off: i, end: to, val: "unterminated quoted identifier"}
}

func lexNumber(text string, i, to int) int {
	j := i
	digits := func() {
		for j < to && text[j] >= '0' && text[j] <= '9' {
			j++
		}
	}
	digits()
	if j < to && text[j] == '.' {
		j++
		digits()
	}
	if j < to && (text[j] == 'e' || text[j] == 'E') {
		k := j + 1
		if k < to && (text[k] == '+' || text[k] == '-') {
			k++
		}
		if k < to && text[k] >= '0' && text[k] <= '9' {
			j = k
			digits()
		}
	}
	return j
}

// describe renders a token for an error message.
func (s *source) describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of statement"
	}
	text := clip(s.text[t.off:t.end], 40)
	if t.kind == tString {
		return "string " + text
	}
	return "'" + text + "'"
}
