package serve

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Holder is who holds a job's lock, as its holder stored it with the lock:
// the operating-system process id and host name of the sluice process (a
// `run`, `backfill` or `serve`) and when it took the lock.
type Holder struct {
	PID   int
	Host  string
	Since time.Time
}

// HolderLocker is a Locker that can say who holds a job's lock (SQLiteStore
// and PGStore).
type HolderLocker interface {
	Locker
	// Holder returns the live holder of job's lock; ok is false when the
	// lock is free or its holder left no record.
	Holder(ctx context.Context, job string) (h Holder, ok bool, err error)
}

// RunningError is the error of Lock when another process holds the job's
// lock. It matches ErrJobRunning with errors.Is.
type RunningError struct {
	Job    string
	Holder Holder
	Known  bool // Holder is set; false when the holder left no record
}

// Error reads "job X is running (pid N on HOST since T)", T in RFC 3339 UTC.
func (e *RunningError) Error() string {
	if !e.Known {
		return fmt.Sprintf("job %s is running (holder unknown)", e.Job)
	}
	return fmt.Sprintf("job %s is running (pid %d on %s since %s)", e.Job, e.Holder.PID, e.Holder.Host,
		e.Holder.Since.UTC().Format(time.RFC3339))
}

// Unwrap returns ErrJobRunning.
func (e *RunningError) Unwrap() error { return ErrJobRunning }

// LockPoll is how often Lock asks again for a busy lock while it waits.
const LockPoll = 500 * time.Millisecond

// holderSettle is how long Lock looks for the holder's record of a lock it
// found taken (a PostgreSQL holder stores it in the statement that takes
// the lock, visible when that statement commits).
const holderSettle = 2 * time.Second

// Lock takes job's lock in l for a one-off run (`sluice run`, `sluice
// backfill`), the same lock serve takes before each run, so that these
// and serve exclude each other. When the lock is held elsewhere it returns
// a *RunningError naming the holder, unless wait is set: then it calls
// waiting once with that error and asks again every LockPoll until it gets
// the lock or ctx ends (ctx's error, wrapped). A failure to ask the lock
// database is returned as is (its text begins "job lock: ").
func Lock(ctx context.Context, l Locker, job string, wait bool, waiting func(*RunningError)) (unlock func(), err error) {
	told := false
	for {
		unlock, ok, err := l.TryLock(ctx, job)
		if err != nil {
			return nil, err
		}
		if ok {
			return unlock, nil
		}
		unlock, busy, err := holderOf(ctx, l, job)
		if err != nil {
			return nil, err
		}
		if unlock != nil {
			return unlock, nil // released meanwhile, and now ours
		}
		if !wait {
			return nil, busy
		}
		if !told && waiting != nil {
			waiting(busy)
			told = true
		}
		t := time.NewTimer(LockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("waiting for job %s: %w", job, ctx.Err())
		case <-t.C:
		}
	}
}

// holderOf returns the RunningError for a lock TryLock found taken, or the
// lock's unlock when it turned out free and this call took it. It waits up
// to holderSettle for the holder's record.
func holderOf(ctx context.Context, l Locker, job string) (unlock func(), busy *RunningError, err error) {
	hl, ok := l.(HolderLocker)
	if !ok {
		return nil, &RunningError{Job: job}, nil
	}
	deadline := time.Now().Add(holderSettle)
	for {
		h, ok, err := hl.Holder(ctx, job)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			return nil, &RunningError{Job: job, Holder: h, Known: true}, nil
		}
		// No live record: the lock may have been released, or its holder
		// has not stored its record yet.
		unlock, free, err := l.TryLock(ctx, job)
		if err != nil {
			return nil, nil, err
		}
		if free {
			return unlock, nil, nil
		}
		if time.Now().After(deadline) {
			return nil, &RunningError{Job: job}, nil
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("job lock: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// self is this process as lock records name it.
type self struct {
	pid   int
	host  string
	pidNS string // the pid namespace ("" where there is none or it is unknown)
}

func thisProcess() self {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return self{pid: os.Getpid(), host: host, pidNS: pidNamespace()}
}
