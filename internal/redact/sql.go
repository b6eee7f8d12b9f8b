package redact

import (
	"strings"
	"unicode/utf8"
)

// SQLMaxLen is how many characters of a statement SQL keeps.
const SQLMaxLen = 200

// SQL renders another session's statement text (pg_stat_activity.query)
// for a message: every literal that may hold data — a string constant
// ('…', E'…' with backslash escapes, $tag$…$tag$) and a number — becomes
// "?", comments are dropped, runs of white space become one space, and
// the result is cut to SQLMaxLen characters with "…". Identifiers, quoted
// ("…") or not, keywords, operators and parameters ($1) stay, so the
// statement is recognizable without its values.
func SQL(q string) string {
	var b strings.Builder
	space := false
	emit := func(s string) {
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteString(s)
	}
	identByte := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
	}
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			space = true
			i++
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
			space = true
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			depth := 0
			for i < len(q) {
				if q[i] == '/' && i+1 < len(q) && q[i+1] == '*' {
					depth++
					i += 2
				} else if q[i] == '*' && i+1 < len(q) && q[i+1] == '/' {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
			space = true
		case c == '"':
			j := i + 1
			for j < len(q) {
				if q[j] == '"' {
					if j+1 < len(q) && q[j+1] == '"' {
						j += 2
						continue
					}
					j++
					break
				}
				j++
			}
			emit(q[i:j])
			i = j
		case c == '\'':
			esc := i > 0 && (q[i-1] == 'E' || q[i-1] == 'e') && (i < 2 || !identByte(q[i-2]))
			if esc {
				// E'…': drop the E already written.
				s := b.String()
				b.Reset()
				b.WriteString(s[:len(s)-1])
			}
			j := i + 1
			for j < len(q) {
				if esc && q[j] == '\\' {
					j += 2
					continue
				}
				if q[j] == '\'' {
					if j+1 < len(q) && q[j+1] == '\'' {
						j += 2
						continue
					}
					j++
					break
				}
				j++
			}
			emit("?")
			i = min(j, len(q))
		case c == '$' && (i == 0 || !identByte(q[i-1])):
			j := i + 1
			for j < len(q) && identByte(q[j]) && !(q[j] >= '0' && q[j] <= '9' && j == i+1) {
				j++
			}
			if j < len(q) && q[j] == '$' {
				tag := q[i : j+1]
				end := strings.Index(q[j+1:], tag)
				if end < 0 {
					i = len(q)
				} else {
					i = j + 1 + end + len(tag)
				}
				emit("?")
				continue
			}
			// $1: a parameter.
			j = i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			emit(q[i:j])
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9':
			if i > 0 && identByte(q[i-1]) && !space {
				emit(string(c)) // part of an identifier such as t1
				i++
				continue
			}
			j := i
			for j < len(q) && (q[j] >= '0' && q[j] <= '9' || q[j] == '.' || q[j] == '_' ||
				(q[j] == 'e' || q[j] == 'E') || (q[j] == '+' || q[j] == '-') && j > i && (q[j-1] == 'e' || q[j-1] == 'E')) {
				j++
			}
			emit("?")
			i = j
		default:
			j := i + 1
			if identByte(c) {
				for j < len(q) && identByte(q[j]) {
					j++
				}
			}
			emit(q[i:j])
			i = j
		}
	}
	out := b.String()
	if utf8.RuneCountInString(out) > SQLMaxLen {
		r := []rune(out)
		out = string(r[:SQLMaxLen]) + "…"
	}
	return out
}
