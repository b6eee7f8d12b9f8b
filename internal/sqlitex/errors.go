package sqlitex

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"modernc.org/sqlite"
)

// SQLite primary result codes caused by a value of the statement
// (https://sqlite.org/rescode.html); extended codes carry them in their
// low byte.
const (
	codeTooBig     = 18 // SQLITE_TOOBIG: string or blob too large
	codeConstraint = 19 // SQLITE_CONSTRAINT: NOT NULL, UNIQUE, CHECK, FOREIGN KEY
	codeMismatch   = 20 // SQLITE_MISMATCH: datatype mismatch (STRICT tables, rowid)
	codeRange      = 25 // SQLITE_RANGE: bind parameter out of range

	codeBusy     = 5  // SQLITE_BUSY
	codeReadOnly = 8  // SQLITE_READONLY
	codeIOErr    = 10 // SQLITE_IOERR
	codeCantOpen = 14 // SQLITE_CANTOPEN
)

// IsValueError reports whether err is a SQLite error caused by the values
// a statement wrote (a constraint, a datatype mismatch, a value too
// large), as opposed to the database's state (SQLITE_FULL, SQLITE_READONLY,
// SQLITE_BUSY, I/O errors). Errors that are not SQLite errors are taken
// to be about the value, the cautious answer for naming a row in an error.
func IsValueError(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return true
	}
	switch e.Code() & 0xff {
	case codeTooBig, codeConstraint, codeMismatch, codeRange:
		return true
	}
	return false
}

// IsBusy reports whether err is SQLITE_BUSY (any extended code): another
// connection held the lock the statement needed for longer than the
// connection's busy_timeout.
func IsBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == codeBusy
}

// Begin runs BEGIN IMMEDIATE on conn and returns the driver's error,
// after DiscardIfCannotWrite; the caller closes conn either way.
func Begin(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	DiscardIfCannotWrite(conn, err)
	return err
}

// DiscardIfCannotWrite marks conn broken when err says it cannot write
// (SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_IOERR): the file was
// read-only or failing when the connection opened it, and a connection
// keeps the access it opened with. Closing a broken connection drops it
// from the pool, so the next attempt opens the file again instead of
// failing the same way after the operator fixed it. Other errors (nil,
// SQLITE_BUSY, a constraint) leave conn as it is.
func DiscardIfCannotWrite(conn *sql.Conn, err error) {
	var e *sqlite.Error
	if conn == nil || err == nil || !errors.As(err, &e) {
		return
	}
	switch e.Code() & 0xff {
	case codeReadOnly, codeCantOpen, codeIOErr:
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}
