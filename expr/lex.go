package expr

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind classifies the tokens of sluice's own scanner. The scanner mirrors
// sqlparser's tokenizer (MySQL lexical rules) closely enough that the two
// agree on token boundaries; it exists because sqlparser's tokens carry no
// start offsets and reject non-ASCII identifiers.
type tokKind uint8

const (
	tkEOF    tokKind = iota
	tkIdent          // unquoted identifier or keyword (ASCII or unicode letters)
	tkQIdent         // `backquoted` identifier
	tkString         // '…' or "…" (both are string literals, as in MySQL)
	tkNumber         // 12, 1.5, .5, 1e3, 0x1F
	tkOp             // operator or punctuation
)

type token struct {
	kind       tokKind
	start, end int    // byte offsets in the original text
	text       string // the original text of the token
	val        string // identifier name / decoded string value; lower-case op
	uni        bool   // tkIdent with non-ASCII letters
}

// lexError is a scanning error at a byte offset.
type lexError struct {
	off int
	msg string
	err error
}

// two- and three-character operators, longest first.
var multiOps = []string{"<=>", "->>", "<=", ">=", "<>", "!=", "||", "&&", "<<", ">>", "->", "::", ":="}

// scan splits text into tokens. Comments (-- …, # …, /* … */) and blanks are
// skipped. It fails on unterminated strings, quoted identifiers and comments.
func scan(text string) ([]token, *lexError) {
	var toks []token
	i := 0
	for i < len(text) {
		if len(toks) == MaxTokens {
			return nil, &lexError{i, fmt.Sprintf("expression too large: more than %d tokens (limit %d)", MaxTokens, MaxTokens), ErrTooLarge}
		}
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '-' && strings.HasPrefix(text[i:], "--"), c == '#':
			j := strings.IndexByte(text[i:], '\n')
			if j < 0 {
				i = len(text)
			} else {
				i += j + 1
			}
			continue
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			j := strings.Index(text[i+2:], "*/")
			if j < 0 {
				return nil, &lexError{i, "unterminated /* comment", ErrSyntax}
			}
			i += j + 4
			continue
		}
		start := i
		switch {
		case (c == 'x' || c == 'X') && i+1 < len(text) && text[i+1] == '\'':
			// X'0a1b' binary literal
			j := strings.IndexByte(text[i+2:], '\'')
			if j < 0 {
				return nil, &lexError{start, "unterminated X'…' literal", ErrSyntax}
			}
			i += j + 3
			toks = append(toks, token{kind: tkNumber, start: start, end: i, text: text[start:i]})
		case isIdentStart(text, i):
			uni := false
			for i < len(text) {
				if text[i] < utf8.RuneSelf {
					if !isASCIILetter(text[i]) && !(text[i] >= '0' && text[i] <= '9') {
						break
					}
					i++
					continue
				}
				r, n := utf8.DecodeRuneInString(text[i:])
				if !isUniIdent(r) {
					break
				}
				uni = true
				i += n
			}
			toks = append(toks, token{kind: tkIdent, start: start, end: i, text: text[start:i], val: text[start:i], uni: uni})
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(text) && text[i+1] >= '0' && text[i+1] <= '9':
			i = scanNumber(text, i)
			if i < len(text) && isIdentStart(text, i) {
				return nil, &lexError{start, "a letter cannot follow a number: " + quoteTok(text[start:min(i+1, len(text))]), ErrSyntax}
			}
			toks = append(toks, token{kind: tkNumber, start: start, end: i, text: text[start:i]})
		case c == '\'' || c == '"':
			val, j, ok := scanString(text, i)
			if !ok {
				return nil, &lexError{start, "unterminated string literal", ErrSyntax}
			}
			i = j
			toks = append(toks, token{kind: tkString, start: start, end: i, text: text[start:i], val: val})
		case c == '`':
			var b strings.Builder
			j := i + 1
			closed := false
			for j < len(text) {
				if text[j] == '`' {
					if j+1 < len(text) && text[j+1] == '`' {
						b.WriteByte('`')
						j += 2
						continue
					}
					closed = true
					j++
					break
				}
				b.WriteByte(text[j])
				j++
			}
			if !closed {
				return nil, &lexError{start, "unterminated `quoted identifier`", ErrSyntax}
			}
			if b.Len() == 0 {
				return nil, &lexError{start, "empty quoted identifier ``", ErrSyntax}
			}
			i = j
			toks = append(toks, token{kind: tkQIdent, start: start, end: i, text: text[start:i], val: b.String()})
		default:
			op := ""
			for _, m := range multiOps {
				if strings.HasPrefix(text[i:], m) {
					op = m
					break
				}
			}
			if op == "" {
				if c >= utf8.RuneSelf {
					r, _ := utf8.DecodeRuneInString(text[i:])
					return nil, &lexError{start, "unexpected character " + quoteTok(string(r)), ErrSyntax}
				}
				if !strings.ContainsRune("=<>!+-*/%(),.|&^~;?:@[]{}", rune(c)) {
					return nil, &lexError{start, "unexpected character " + quoteTok(string(c)), ErrSyntax}
				}
				op = string(c)
			}
			i += len(op)
			toks = append(toks, token{kind: tkOp, start: start, end: i, text: op, val: op})
		}
	}
	toks = append(toks, token{kind: tkEOF, start: len(text), end: len(text)})
	return toks, nil
}

func quoteTok(s string) string { return "'" + s + "'" }

func isASCIILetter(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '@'
}

func isUniIdent(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r)
}

func isIdentStart(text string, i int) bool {
	c := text[i]
	if c < utf8.RuneSelf {
		return isASCIILetter(c)
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return unicode.IsLetter(r)
}

func scanNumber(text string, i int) int {
	digits := func(j int, hex bool) int {
		for j < len(text) && (text[j] >= '0' && text[j] <= '9' || hex && strings.IndexByte("abcdefABCDEF", text[j]) >= 0) {
			j++
		}
		return j
	}
	if strings.HasPrefix(text[i:], "0x") || strings.HasPrefix(text[i:], "0X") {
		return digits(i+2, true)
	}
	i = digits(i, false)
	if i < len(text) && text[i] == '.' {
		i = digits(i+1, false)
	}
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		j := i + 1
		if j < len(text) && (text[j] == '+' || text[j] == '-') {
			j++
		}
		i = digits(j, false)
	}
	return i
}

// scanString scans a '…' or "…" literal starting at text[i] with MySQL's
// rules: a doubled delimiter is one delimiter; backslash escapes \0 \' \" \b
// \n \r \t \Z \\ decode, \% and \_ keep their backslash (so that LIKE sees
// the escape), any other \x is x.
func scanString(text string, i int) (val string, end int, ok bool) {
	delim := text[i]
	var b strings.Builder
	j := i + 1
	for j < len(text) {
		c := text[j]
		switch {
		case c == delim:
			if j+1 < len(text) && text[j+1] == delim {
				b.WriteByte(delim)
				j += 2
				continue
			}
			return b.String(), j + 1, true
		case c == '\\':
			if j+1 >= len(text) {
				return "", 0, false
			}
			e := text[j+1]
			switch e {
			case '0':
				b.WriteByte(0)
			case 'b':
				b.WriteByte('\b')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'Z':
				b.WriteByte(26)
			case '%', '_':
				b.WriteByte('\\')
				b.WriteByte(e)
			default:
				b.WriteByte(e)
			}
			j += 2
		default:
			b.WriteByte(c)
			j++
		}
	}
	return "", 0, false
}
