package serve

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Positioner is implemented by a Waker that knows where the change log a
// job reads stands. Position returns a text that changes whenever
// something the job could read was logged (or the stream or table
// changed), and ok false when the position is not known now (the watcher
// cannot read its database). A server skips a run of a job whose position
// is still the one it had before the job's last committed run
// (see Config.QuietMax): equal positions mean nothing new to read.
type Positioner interface {
	Position() (pos string, ok bool)
}

// DefaultWatchInterval is how often a PollWatcher asks its database where
// the change logs stand.
const DefaultWatchInterval = 100 * time.Millisecond

// PollWatcher is the one change watcher of a serve process on one
// database whose capture sends no notification (SQLite, issue #19): every
// Interval it calls its probe, which returns a position per table (e.g.
// sqlite.LogWatch.Positions: one PRAGMA while nothing was committed), and
// wakes the subscribers of each table whose position changed. Its
// subscriptions are Positioners, so idle timed and continuous jobs are not
// run at all while their table's position stays the same: the cost of an
// idle job no longer grows with the number of fires.
//
// While the probe fails, positions are unknown (no run is skipped) and
// every subscriber is woken once per FailWake, so continuous jobs poll as
// they would without a watcher.
type PollWatcher struct {
	probe    func(context.Context) (map[string]string, error)
	log      *slog.Logger
	interval time.Duration
	failWake time.Duration

	mu     sync.Mutex
	subs   map[string]map[*pollSub]struct{} // key → subscribers
	pos    map[string]string                // the last probe's answer; nil while unknown
	cancel context.CancelFunc
	done   chan struct{}
}

// NewPollWatcher starts a watcher that calls probe every interval (0 →
// DefaultWatchInterval) until Close or ctx ends; probe errors are logged
// (at Warn once per streak of failures, then at Debug) and retried. The
// first successful probe wakes nobody: it fixes the positions later probes
// are compared with.
func NewPollWatcher(ctx context.Context, interval time.Duration, probe func(context.Context) (map[string]string, error), log *slog.Logger) *PollWatcher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &PollWatcher{probe: probe, log: log, interval: interval, failWake: DefaultIdleBackoff().Max,
		subs: map[string]map[*pollSub]struct{}{}, cancel: cancel, done: make(chan struct{})}
	go w.loop(wctx)
	return w
}

// Subscribe returns a Waker (and Positioner) for the table whose probe key
// is key; its Close unsubscribes. It never blocks on the database.
func (w *PollWatcher) Subscribe(key string) Waker {
	s := &pollSub{w: w, key: key, ch: make(chan struct{}, 1)}
	w.mu.Lock()
	set := w.subs[key]
	if set == nil {
		set = map[*pollSub]struct{}{}
		w.subs[key] = set
	}
	set[s] = struct{}{}
	w.mu.Unlock()
	return s
}

// Close stops the watcher. It returns nil.
func (w *PollWatcher) Close() error {
	w.cancel()
	<-w.done
	return nil
}

func (w *PollWatcher) loop(ctx context.Context) {
	defer close(w.done)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	failing := false
	var lastFailWake time.Time
	for {
		pos, err := w.probe(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			if !failing {
				w.log.Warn("change watcher cannot read its database; jobs poll until it can", "err", err)
			} else {
				w.log.Debug("change watcher still cannot read its database", "err", err)
			}
			failing = true
			w.mu.Lock()
			w.pos = nil
			if time.Since(lastFailWake) >= w.failWake {
				lastFailWake = time.Now()
				for _, set := range w.subs {
					for s := range set {
						s.wake()
					}
				}
			}
			w.mu.Unlock()
		default:
			if failing {
				w.log.Info("change watcher reads its database again")
			}
			w.mu.Lock()
			old := w.pos
			w.pos = pos
			for key, set := range w.subs {
				// After a failure (old nil) every subscriber is woken: its
				// position may have moved unseen.
				if old == nil && !failing {
					break
				}
				if old == nil || old[key] != pos[key] {
					for s := range set {
						s.wake()
					}
				}
			}
			failing = false
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pollSub is one subscription: a Waker and a Positioner.
type pollSub struct {
	w   *PollWatcher
	key string
	ch  chan struct{}
}

func (s *pollSub) C() <-chan struct{} { return s.ch }

func (s *pollSub) wake() {
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// Position is the table's position as of the last successful probe; ok is
// false while the probe fails or before it first succeeded, and for a
// table the database does not track.
func (s *pollSub) Position() (string, bool) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.w.pos == nil {
		return "", false
	}
	p, ok := s.w.pos[s.key]
	return p, ok
}

func (s *pollSub) Close() error {
	s.w.mu.Lock()
	set := s.w.subs[s.key]
	delete(set, s)
	if len(set) == 0 {
		delete(s.w.subs, s.key)
	}
	s.w.mu.Unlock()
	return nil
}
