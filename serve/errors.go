package serve

import "errors"

// Sentinel errors of package serve; test with errors.Is.
var (
	// ErrNoRunFunc: Config.Run is required.
	ErrNoRunFunc = errors.New("serve: Config.Run is nil")
	// ErrStarted: Start was called twice.
	ErrStarted = errors.New("server already started")
	// ErrClosed: the server is shutting down or shut down.
	ErrClosed = errors.New("server is shut down")
	// ErrForcedShutdown: Shutdown's grace period ended before every run
	// finished, and the remaining runs were cancelled.
	ErrForcedShutdown = errors.New("grace period expired; running jobs were cancelled")
	// ErrKeptOld: a job file failed to load on Reload; the jobs it defined
	// before keep running with their previous definition.
	ErrKeptOld = errors.New("job file not reloaded; previous definition kept")
	// ErrDuplicateJob: two job files define the same job name.
	ErrDuplicateJob = errors.New("duplicate job name")
	// ErrJobRunning: another process holds the job's lock (Lock returns a
	// *RunningError naming it).
	ErrJobRunning = errors.New("job is running elsewhere")
	// ErrUnknownHistory: OpenStore got a connection URL
	// whose scheme has no implementation (only sqlite and postgres).
	ErrUnknownHistory = errors.New("no run history or lock implementation for this connection")
)
