package schedule

import "errors"

// Sentinel errors of package schedule. Parse wraps exactly one of them, so
// callers can classify a failure with errors.Is; the message carries the
// detail (the offending field, zone or interval).
var (
	// ErrBadSpec is a schedule that is neither a cron expression, a
	// descriptor (@hourly, @every 30s, …), "continuous", nor empty.
	ErrBadSpec = errors.New("invalid schedule")
	// ErrBadTimezone is an unknown IANA zone name, or a CRON_TZ= prefix
	// that contradicts the job's timezone key.
	ErrBadTimezone = errors.New("invalid schedule time zone")
	// ErrBadInterval is an @every interval below one second or not a whole
	// number of seconds.
	ErrBadInterval = errors.New("invalid schedule interval")
	// ErrNeverFires is a valid cron expression that matches no instant
	// (e.g. "0 0 30 2 *", February 30th).
	ErrNeverFires = errors.New("schedule never fires")
)
