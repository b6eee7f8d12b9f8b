package serve

import (
	"context"
	"sync"
)

// Locker keeps a job from running in two processes at once. Servers that
// share work share a Locker backed by one database (SQLiteStore,
// PGStore); a Server also never overlaps a job with itself in-process,
// with or without a Locker.
type Locker interface {
	// TryLock tries to take job's lock without waiting. ok is false, with
	// a nil error, when someone else holds it; err is non-nil when the lock
	// database could not be asked (the Server treats that as a transient
	// failure); it says it is about the job lock (the stores' errors begin
	// "job lock: "). When ok, unlock releases the lock; it is safe to call more
	// than once.
	TryLock(ctx context.Context, job string) (unlock func(), ok bool, err error)
}

// MemLocker is an in-process Locker (a set of held job names), for tests
// and single-process setups that want the Locker code path.
type MemLocker struct {
	mu   sync.Mutex
	held map[string]bool
}

// TryLock takes job's lock if it is free.
func (m *MemLocker) TryLock(_ context.Context, job string) (func(), bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[job] {
		return nil, false, nil
	}
	if m.held == nil {
		m.held = map[string]bool{}
	}
	m.held[job] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			delete(m.held, job)
			m.mu.Unlock()
		})
	}, true, nil
}
