// Package pos carries source positions (file:line:col) for errors in job
// files and statements, and a list type so that every error of a file can be
// reported at once.
package pos

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Pos is a position in a job file or statement text. Line and Col are
// 1-based; Col counts bytes. A zero Pos means "no position known".
type Pos struct {
	File string
	Line int
	Col  int
}

// IsValid reports whether p names a line.
func (p Pos) IsValid() bool { return p.Line > 0 }

// String formats p as "file:line:col", "line:col" without a file, or "" when
// p is zero.
func (p Pos) String() string {
	switch {
	case !p.IsValid() && p.File == "":
		return ""
	case !p.IsValid():
		return p.File
	case p.File == "":
		return fmt.Sprintf("%d:%d", p.Line, p.Col)
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
}

// Advance returns the position reached after reading text starting at p:
// lines advance on '\n', columns count bytes.
func (p Pos) Advance(text string) Pos {
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			p.Line++
			p.Col = 1
		} else {
			p.Col++
		}
	}
	return p
}

// At returns the position of byte offset off within text that starts at p.
func (p Pos) At(text string, off int) Pos {
	if off > len(text) {
		off = len(text)
	}
	if off < 0 {
		off = 0
	}
	return p.Advance(text[:off])
}

// Error is an error at a position. Err, when set, is the underlying cause
// (often a sentinel such as dsl.ErrUnknownKey) and is returned by Unwrap.
type Error struct {
	Pos Pos
	Msg string
	Err error
}

// Errorf returns an *Error at p with a formatted message. A %w verb in format
// sets Err; with several %w verbs Err wraps them all.
func Errorf(p Pos, format string, args ...any) *Error {
	e := fmt.Errorf(format, args...)
	var cause error
	switch u := e.(type) {
	case interface{ Unwrap() error }:
		cause = u.Unwrap()
	case interface{ Unwrap() []error }:
		cause = e // its Unwrap exposes every %w operand
	}
	return &Error{Pos: p, Msg: e.Error(), Err: cause}
}

// Error formats "file:line:col: message".
func (e *Error) Error() string {
	if s := e.Pos.String(); s != "" {
		return s + ": " + e.Msg
	}
	return e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// List is a list of errors, usually all errors of one file. Its Error joins
// them one per line, sorted by position.
type List []*Error

// Add appends an error at p.
func (l *List) Add(p Pos, format string, args ...any) { *l = append(*l, Errorf(p, format, args...)) }

// Append appends err; a List is flattened, a *Error kept, any other error
// wrapped at p.
func (l *List) Append(p Pos, err error) {
	if err == nil {
		return
	}
	var list List
	var pe *Error
	switch {
	case errors.As(err, &list):
		*l = append(*l, list...)
	case errors.As(err, &pe):
		*l = append(*l, pe)
	default:
		*l = append(*l, &Error{Pos: p, Msg: err.Error(), Err: err})
	}
}

// Err returns nil for an empty list, else the sorted list as an error.
func (l List) Err() error {
	if len(l) == 0 {
		return nil
	}
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i].Pos, l[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return l
}

// Error joins the messages, one per line.
func (l List) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap exposes every error to errors.Is and errors.As.
func (l List) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}
