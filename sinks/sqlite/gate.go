package sqlite

import (
	"context"
	"sync"
	"time"

	"github.com/sluicedata/sluice/internal/sqlitex"
)

// enter waits until no other Begin of this sink holds its transaction
// (one writer per sink database in the process, issue #19) and returns
// the function that lets the next one in (safe to call more than once).
// Runs of many jobs into one SQLite file serialize on its write lock
// anyway; waiting here hands the lock over as soon as it is released,
// where SQLite's busy handler polls it with sleeps of up to 100 ms, which
// at 1,000 jobs left the file idle between runs and made runs fail with
// SQLITE_BUSY after the busy timeout.
//
// It waits at most sqlitex.BusyTimeout (or until ctx ends) and then lets
// the caller go on to BEGIN IMMEDIATE, whose busy timeout decides as
// before: a run that holds this sink's transaction and begins another in
// the same file is never stuck here.
func (s *Sink) enter(ctx context.Context) (release func()) {
	t := time.NewTimer(sqlitex.BusyTimeout)
	defer t.Stop()
	select {
	case s.writer <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-s.writer }) }
	case <-t.C:
	case <-ctx.Done():
	}
	return func() {}
}
