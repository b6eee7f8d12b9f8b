package jobtest

import "errors"

// Sentinel errors of package jobtest.
var (
	// ErrBadFile is wrapped by every error of a malformed test file (each
	// a *pos.Error at file:line:col).
	ErrBadFile = errors.New("bad test file")
	// ErrSetup is wrapped by the failure of a case before its runs: a
	// setup statement, a source or target row that cannot be inserted.
	ErrSetup = errors.New("test setup failed")
)
