package dsl

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sluicedata/sluice/pos"
)

// Limits on what a job file or statement may be, checked before any parser
// sees it, so that no file — however large, deep or malformed — can
// exhaust the stack or memory of the process reading it (`sluice serve`
// reads every file of its directory).
const (
	// DefaultMaxFileSize is the largest job file ParseJob accepts: 1 MiB.
	// ParseJobPartialMax takes another limit (`--max-job-size` on the
	// command line).
	DefaultMaxFileSize = 1 << 20
	// MaxYAMLNesting is the deepest nesting of YAML flow collections ([…]
	// and {…}) in a job file; a job file needs three.
	MaxYAMLNesting = 64
	// MaxStatementDepth is the deepest nesting of parentheses in one SQL
	// statement (the same as an expression's, expr.MaxDepth).
	MaxStatementDepth = 128
	// MaxStatementOperators is the most operators (AND, OR, NOT,
	// comparisons, arithmetic, …) in one SQL statement (as an
	// expression's, expr.MaxOperators).
	MaxStatementOperators = 10000
)

// maxUTF8Errors is how many invalid UTF-8 sequences one file reports.
const maxUTF8Errors = 10

// checkText returns an error at each invalid UTF-8 sequence of the text
// (at most maxUTF8Errors).
func checkText(s *source) pos.List {
	var errs pos.List
	for i := 0; i < len(s.text); {
		r, n := utf8.DecodeRuneInString(s.text[i:])
		if r == utf8.RuneError && n <= 1 {
			errs = append(errs, errAt(s.pos(i), ErrBadEncoding, "invalid UTF-8 (byte 0x%02x); job files are UTF-8 text", s.text[i]))
			if len(errs) == maxUTF8Errors {
				break
			}
		}
		i += max(n, 1)
	}
	return errs
}

// CheckFileSize returns an error (a pos.List wrapping ErrTooLarge, at
// file:1:1) when a job file of size bytes exceeds maxSize (negative: no
// limit), else nil. Callers reading files check the size first, so that a
// huge file is never read.
func CheckFileSize(file string, size int64, maxSize int) error {
	if maxSize < 0 || size <= int64(maxSize) {
		return nil
	}
	return pos.List{errAt(pos.Pos{File: file, Line: 1, Col: 1}, ErrTooLarge,
		"job file is %s, larger than the limit of %s (raise it with --max-job-size)", byteSize(size), byteSize(int64(maxSize)))}.Err()
}

// byteSize renders n bytes as "1 MiB", "1.5 MiB", "700 KiB" or "12 bytes".
func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", float64(n)/(1<<20)), "0"), ".") + " MiB"
	case n >= 1<<10:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", float64(n)/(1<<10)), "0"), ".") + " KiB"
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkYAMLNesting returns an error at the first '[' or '{' nested deeper
// than MaxYAMLNesting, outside comments and quoted scalars. (goccy/go-yaml
// parses flow collections recursively: 100,000 nested '[' take minutes and
// more stack than a process has.)
func checkYAMLNesting(s *source) *pos.Error {
	t := s.text
	depth := 0
	for i := 0; i < len(t); i++ {
		c := t[i]
		prev := byte('\n')
		if i > 0 {
			prev = t[i-1]
		}
		switch {
		case c == '#' && (prev == ' ' || prev == '\t' || prev == '\n'):
			for i < len(t) && t[i] != '\n' {
				i++
			}
		case (c == '\'' || c == '"') && strings.IndexByte(" \t\n[{,:", prev) >= 0:
			for j := i + 1; j < len(t); j++ {
				if c == '"' && t[j] == '\\' {
					j++
					continue
				}
				if t[j] == c {
					if c == '\'' && j+1 < len(t) && t[j+1] == '\'' {
						j++
						continue
					}
					i = j
					break
				}
				if j == len(t)-1 {
					i = j
				}
			}
		case c == '[' || c == '{':
			depth++
			if depth > MaxYAMLNesting {
				return errAt(s.pos(i), ErrTooLarge, "YAML nested too deeply (limit %d)", MaxYAMLNesting)
			}
		case (c == ']' || c == '}') && depth > 0:
			depth--
		}
	}
	return nil
}

// stmtOperatorWords are the keywords that make a node of an expression.
var stmtOperatorWords = map[string]bool{
	"and": true, "or": true, "not": true, "is": true, "like": true,
	"between": true, "in": true, "when": true, "else": true,
}

// checkStatementShape reports the first token of toks that nests
// parentheses deeper than MaxStatementDepth or brings the count of
// operators above MaxStatementOperators; ok is false then.
func checkStatementShape(toks []token) (bad token, msg string, ok bool) {
	depth, ops := 0, 0
	for _, t := range toks {
		switch t.kind {
		case tOp:
			switch t.val {
			case "(":
				depth++
				if depth > MaxStatementDepth {
					return t, fmt.Sprintf("statement too deeply nested (limit %d)", MaxStatementDepth), false
				}
				continue
			case ")":
				depth--
				continue
			case ",", ".", ";":
				continue
			}
		case tIdent:
			if !stmtOperatorWords[strings.ToLower(t.val)] {
				continue
			}
		default:
			continue
		}
		ops++
		if ops > MaxStatementOperators {
			return t, fmt.Sprintf("statement too large: more than %d operators (limit %d)", MaxStatementOperators, MaxStatementOperators), false
		}
	}
	return token{}, "", true
}
