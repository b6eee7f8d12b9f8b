package serve

import (
	"sync"
	"time"
)

// DefaultQuietMax is Config.QuietMax when it is 0.
const DefaultQuietMax = 5 * time.Minute

// quietState remembers, for one job definition, the position its change
// log had before its last committed run, so that later fires can
// be skipped while the position stays the same (issue #19: 1,000 idle jobs
// on one SQLite file cost a lock, a plan and a read per fire otherwise).
//
// Skipping is exact because the position is read before the run: every
// change logged after that read moves the position, and every change
// logged before it was committed before the run's read point was fixed,
// so a committed run consumed it (read it, or found it filtered out).
// So every committed run remembers its position, whether it read
// something or not: the run that would follow one that read changes,
// and read nothing, is skipped too while nothing was logged since.
// A failed run remembers nothing.
type quietState struct {
	mu    sync.Mutex
	watch Positioner // nil: never skip
	pos   string     // the position before the last committed run
	ok    bool       // pos is set
	ran   time.Time  // when the job last really ran
}

// setWatch sets (or, with nil, clears) the job's Positioner.
func (q *quietState) setWatch(p Positioner) {
	q.mu.Lock()
	q.watch, q.ok = p, false
	q.mu.Unlock()
}

// before is called before a run: skip is true when the run can be skipped
// (the position is the remembered one and the last real run is younger
// than max); otherwise pos/ok is the position to remember if the run
// finds nothing.
func (q *quietState) before(now time.Time, max time.Duration) (skip bool, pos string, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.watch == nil || max < 0 {
		return false, "", false
	}
	pos, ok = q.watch.Position()
	if ok && q.ok && pos == q.pos && now.Sub(q.ran) < max {
		return true, "", false
	}
	return false, pos, ok
}

// after records the end of a run that started at start: a committed run
// (empty true) remembers the position read before it; any other run
// forgets it.
func (q *quietState) after(start time.Time, empty bool, pos string, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ran = start
	q.pos, q.ok = pos, ok && empty
}

// unchanged reports whether the job's last run committed and its
// position has not moved since: no change is pending.
func (q *quietState) unchanged() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.watch == nil || !q.ok {
		return false
	}
	pos, ok := q.watch.Position()
	return ok && pos == q.pos
}

// quietMax is the configured QuietMax.
func (s *Server) quietMax() time.Duration {
	if s.cfg.QuietMax == 0 {
		return DefaultQuietMax
	}
	return s.cfg.QuietMax
}
