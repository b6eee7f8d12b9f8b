package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// ErrStateUnreachable: the state database (run history and job locks) has
// not been opened yet; RetryingStore keeps trying.
var ErrStateUnreachable = errors.New("state database not reachable yet (retrying)")

// RetryingStore is a Store whose database was not reachable when serve
// started: it opens it in the background, again and again with capped
// exponential backoff (DefaultRetryBackoff: 1 s doubling to 1 min), and
// forwards to it once open. Until then TryLock, Record, List and the
// EmptyChecks fail with an error wrapping ErrStateUnreachable and the last
// attempt's error, which the Server treats as transient: jobs retry (their
// /healthz entries say retrying, with that error and the next try) and
// runs wait in memory to be recorded. Unreachable says whether it is still
// trying, for /healthz.
type RetryingStore struct {
	mu    sync.Mutex
	st    Store
	last  error
	next  time.Time
	tries int

	cancel context.CancelFunc
	done   chan struct{}
}

// OpenStoreRetrying opens the state database as OpenStore does. When that
// fails with a transient error (IsTransient: refused or reset connection,
// a server starting up, an authentication failure, a busy or unopenable
// SQLite file) it logs a warning and returns a RetryingStore that keeps
// trying in the background; other errors (a scheme without a store, a
// malformed URL) are returned. describe redacts an error for the log (it
// may hold the URL); nil logs errors as they are.
func OpenStoreRetrying(ctx context.Context, url string, opt StoreOptions, describe func(error) error) (Store, error) {
	st, err := OpenStore(ctx, url, opt)
	if err == nil || !IsTransient(err) {
		return st, err
	}
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if describe == nil {
		describe = func(err error) error { return err }
	}
	return newRetryingStore(ctx, describe(err), func(ctx context.Context) (Store, error) {
		st, err := OpenStore(ctx, url, opt)
		if err != nil {
			return nil, describe(err)
		}
		return st, nil
	}, DefaultRetryBackoff(), log), nil
}

// newRetryingStore starts the background opener after a first failure
// first.
func newRetryingStore(ctx context.Context, first error, open func(context.Context) (Store, error), bo Backoff, log *slog.Logger) *RetryingStore {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &RetryingStore{last: first, tries: 1, cancel: cancel, done: make(chan struct{})}
	r.next = time.Now().Add(bo.Delay(0, nil))
	log.Warn("state database not reachable; serving jobs and retrying it", "err", first, "next_try", r.next.UTC().Format(time.RFC3339))
	go func() {
		defer close(r.done)
		for {
			r.mu.Lock()
			wait := time.Until(r.next)
			r.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-rctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			st, err := open(rctx)
			r.mu.Lock()
			if err == nil {
				r.st, r.last = st, nil
				r.mu.Unlock()
				log.Info("state database reachable", "after_tries", r.tries+1)
				return
			}
			r.last = err
			r.next = time.Now().Add(bo.Delay(r.tries, rand.Float64))
			r.tries++
			next := r.next
			r.mu.Unlock()
			if rctx.Err() != nil {
				return
			}
			log.Warn("state database still not reachable", "err", err, "next_try", next.UTC().Format(time.RFC3339))
		}
	}()
	return r
}

// store returns the open store, or an error wrapping ErrStateUnreachable
// and the last attempt's error.
func (r *RetryingStore) store() (Store, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st != nil {
		return r.st, nil
	}
	return nil, &unreachableError{last: r.last, next: r.next}
}

// unreachableError is a call before the state database was opened.
type unreachableError struct {
	last error
	next time.Time
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("%v: %v; next try at %s", ErrStateUnreachable, e.last, e.next.UTC().Format(time.RFC3339))
}

// Unwrap returns ErrStateUnreachable and the last attempt's error.
func (e *unreachableError) Unwrap() []error { return []error{ErrStateUnreachable, e.last} }

// Transient marks the error as worth retrying (IsTransient).
func (e *unreachableError) Transient() bool { return true }

// Unreachable reports whether the database is still not open (down), and
// then when the next attempt is due and the last attempt's error.
func (r *RetryingStore) Unreachable() (down bool, next time.Time, last error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st != nil {
		return false, time.Time{}, nil
	}
	return true, r.next, r.last
}

// TryLock forwards to the store once it is open.
func (r *RetryingStore) TryLock(ctx context.Context, job string) (func(), bool, error) {
	st, err := r.store()
	if err != nil {
		return nil, false, fmt.Errorf("job lock: %w", err)
	}
	return st.TryLock(ctx, job)
}

// Holder forwards to the store once it is open.
func (r *RetryingStore) Holder(ctx context.Context, job string) (Holder, bool, error) {
	st, err := r.store()
	if err != nil {
		return Holder{}, false, fmt.Errorf("job lock: %w", err)
	}
	if hl, ok := st.(HolderLocker); ok {
		return hl.Holder(ctx, job)
	}
	return Holder{}, false, nil
}

// Record forwards to the store once it is open.
func (r *RetryingStore) Record(ctx context.Context, run *Run) (int64, error) {
	st, err := r.store()
	if err != nil {
		return 0, fmt.Errorf("record run of %s: %w", run.Job, err)
	}
	return st.Record(ctx, run)
}

// List forwards to the store once it is open.
func (r *RetryingStore) List(ctx context.Context, job string, limit int) ([]Run, error) {
	st, err := r.store()
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return st.List(ctx, job, limit)
}

// NoteEmpty forwards to the store once it is open (EmptyChecks).
func (r *RetryingStore) NoteEmpty(ctx context.Context, job string, at time.Time) error {
	st, err := r.store()
	if err != nil {
		return err
	}
	if ec, ok := st.(EmptyChecks); ok {
		return ec.NoteEmpty(ctx, job, at)
	}
	return nil
}

// LastEmpty forwards to the store once it is open (EmptyChecks).
func (r *RetryingStore) LastEmpty(ctx context.Context) (map[string]time.Time, error) {
	st, err := r.store()
	if err != nil {
		return nil, err
	}
	if ec, ok := st.(EmptyChecks); ok {
		return ec.LastEmpty(ctx)
	}
	return nil, nil
}

// Close stops the background opener and closes the store if it opened.
func (r *RetryingStore) Close() error {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st != nil {
		return r.st.Close()
	}
	return nil
}
