package dsl

import (
	"errors"
	"fmt"

	"github.com/sluicedata/sluice/pos"
)

// Sentinel errors. Every *pos.Error returned by this package wraps one of
// them (test with errors.Is).
var (
	// ErrSyntax: the text does not follow the grammar (SQL or YAML).
	ErrSyntax = errors.New("syntax error")
	// ErrUnknownKey: a YAML key, statement property or metadata key that the
	// schema does not know. The message lists the known ones.
	ErrUnknownKey = errors.New("unknown key")
	// ErrMissingKey: a required YAML key or statement part is absent.
	ErrMissingKey = errors.New("missing key")
	// ErrDuplicate: a key, column or property given twice.
	ErrDuplicate = errors.New("duplicate")
	// ErrBadValue: a value of the wrong kind or outside its allowed set.
	ErrBadValue = errors.New("bad value")
	// ErrNotSupported: valid SQL that sluice does not support (yet).
	ErrNotSupported = errors.New("not supported")
	// ErrConsuming: a SQL job file without, or with more than one,
	// consuming statement, or with statements after it.
	ErrConsuming = errors.New("consuming statement")
	// ErrNoConsuming: a SQL file without a consuming statement — a script
	// of statements (for `sluice sql -f`), not a job. It wraps
	// ErrConsuming.
	ErrNoConsuming = fmt.Errorf("no %w", ErrConsuming)
	// ErrMissingEnv: ExpandEnv found a ${VAR} that is not set.
	ErrMissingEnv = errors.New("missing environment variable")
	// ErrTooLarge: a job file, statement or YAML structure beyond a limit
	// of limits.go (size, nesting, operators).
	ErrTooLarge = errors.New("too large")
	// ErrBadEncoding: a job file that is not valid UTF-8.
	ErrBadEncoding = errors.New("invalid UTF-8")
)

// errAt returns a *pos.Error at p whose message is the formatted text and
// whose cause wraps sentinel and any extra causes (for errors.Is).
func errAt(p pos.Pos, sentinel error, format string, args ...any) *pos.Error {
	msg := fmt.Sprintf(format, args...)
	return &pos.Error{Pos: p, Msg: msg, Err: &cause{msg: msg, errs: []error{sentinel}}}
}

// errAtCause is errAt with an additional underlying cause (such as a
// cdc.ErrUnknownType error) that errors.Is and errors.As also find.
func errAtCause(p pos.Pos, sentinel, under error, format string, args ...any) *pos.Error {
	e := errAt(p, sentinel, format, args...)
	c := e.Err.(*cause)
	c.errs = append(c.errs, under)
	return e
}

// cause carries an error's message and the errors it wraps.
type cause struct {
	msg  string
	errs []error
}

func (c *cause) Error() string   { return c.msg }
func (c *cause) Unwrap() []error { return c.errs }
