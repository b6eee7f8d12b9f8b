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
	// ErrSinkMode is a sink mode the job's source cannot feed, or whose
	// columns clash with the projection (mode history from an APPEND_ONLY
	// stream, a projected __valid_from).
	ErrSinkMode = errors.New("sink mode does not fit the job")
	// ErrPushdownValue wraps the failure of a pushed-down run caused by a
	// row's value (a value that does not fit a target column, a broken
	// constraint): the database names neither the row nor the column, so
	// the runner replays the run through sluice, without committing, to
	// name them (Runner.Run).
	ErrPushdownValue = errors.New("a value of the pushed-down run does not fit the target")
)
