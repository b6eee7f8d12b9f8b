package runner

import "errors"

// Sentinel errors of package runner. Backends wrap them so that callers can
// test with errors.Is.
var (
	ErrUnknownScheme = errors.New("unknown connection scheme")
	ErrNoStream      = errors.New("table stream does not exist")
	ErrOffsetMoved   = errors.New("stream offset moved concurrently")
	ErrNoPushdown    = errors.New("plan cannot be pushed down")
	ErrNotSource     = errors.New("backend cannot be a source")
	ErrNotSink       = errors.New("backend cannot be a sink")
	ErrTargetExists  = errors.New("target table exists")
)
