package serve

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// MaxUnrecorded is how many runs a Server keeps in memory while its
// History cannot store them (the history database is down). Past it the
// oldest are dropped, each logged at error level with its outcome; below
// it no run is lost while the process lives.
const MaxUnrecorded = 10000

// recordTimeout bounds one History.Record call.
const recordTimeout = 10 * time.Second

// historyWriter stores runs in the History in the order they ended. A run the
// History refuses (a lost connection, a restarting server, a full disk)
// stays in memory and is retried: at the next run's record and by
// retryLoop with the server's RetryBackoff, until it is stored. The
// runs still unrecorded when the server stops are logged at error level,
// one line per run, so that none is dropped silently.
type historyWriter struct {
	hist    History
	log     *slog.Logger
	metrics *Metrics

	flushMu sync.Mutex // serializes flushes: runs are stored in order
	mu      sync.Mutex
	pending []*Run
	failing bool          // the last flush failed (logged once per outage)
	kick    chan struct{} // wakes retryLoop
}

func newHistoryWriter(h History, log *slog.Logger, m *Metrics) *historyWriter {
	return &historyWriter{hist: h, log: log, metrics: m, kick: make(chan struct{}, 1)}
}

// add queues r and stores every queued run it can; it returns after one
// attempt at each, never waiting for the History to come back.
func (rc *historyWriter) add(ctx context.Context, r *Run) {
	rc.mu.Lock()
	rc.pending = append(rc.pending, r)
	if over := len(rc.pending) - MaxUnrecorded; over > 0 {
		for _, old := range rc.pending[:over] {
			rc.log.Error("run history: run dropped unrecorded (too many runs waiting for the history database)",
				runAttrs(old)...)
		}
		rc.pending = append([]*Run(nil), rc.pending[over:]...)
	}
	rc.mu.Unlock()
	rc.flush(ctx)
}

// flush stores queued runs in order until one fails. It reports whether
// the queue is empty.
func (rc *historyWriter) flush(ctx context.Context) bool {
	rc.flushMu.Lock()
	defer rc.flushMu.Unlock()
	for {
		rc.mu.Lock()
		n := len(rc.pending)
		rc.metrics.setUnrecorded(n)
		if n == 0 {
			if rc.failing {
				rc.log.Info("run history stored again; no run was lost")
			}
			rc.failing = false
			rc.mu.Unlock()
			return true
		}
		r := rc.pending[0]
		rc.mu.Unlock()
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		id, err := rc.hist.Record(hctx, r)
		cancel()
		if err != nil {
			rc.mu.Lock()
			first := !rc.failing
			rc.failing = true
			rc.mu.Unlock()
			if first {
				rc.log.Warn("recording the run in the history failed; keeping it in memory and retrying", "job", r.Job, "waiting", n, "err", err)
			} else {
				rc.log.Debug("recording the run in the history failed again", "job", r.Job, "waiting", n, "err", err)
			}
			select {
			case rc.kick <- struct{}{}:
			default:
			}
			return false
		}
		r.ID = id
		rc.mu.Lock()
		rc.pending = rc.pending[1:]
		rc.mu.Unlock()
	}
}

// retryLoop retries the queued runs with backoff whenever a flush failed,
// until ctx ends.
func (rc *historyWriter) retryLoop(ctx context.Context, clock Clock, backoff Backoff, rnd func() float64) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-rc.kick:
		}
		for attempt := 0; ; attempt++ {
			t := clock.NewTimer(backoff.Delay(attempt, rnd))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			if rc.flush(ctx) {
				break
			}
			// flush kicked again: drain it, this loop already retries.
			select {
			case <-rc.kick:
			default:
			}
		}
	}
}

// close makes a last attempt to store the queued runs (until ctx ends)
// and logs each run still unrecorded at error level.
func (rc *historyWriter) close(ctx context.Context) {
	if rc.flush(ctx) {
		return
	}
	rc.mu.Lock()
	left := rc.pending
	rc.pending = nil
	rc.mu.Unlock()
	for _, r := range left {
		rc.log.Error("run history: run not recorded (the history database was unavailable until shutdown)", runAttrs(r)...)
	}
}

// runAttrs are the log attributes of an unrecorded run: enough to rebuild
// its history row.
func runAttrs(r *Run) []any {
	return []any{"job", r.Job, "node", r.Node, "start", r.Start, "end", r.End, "status", string(r.Status),
		"read", Rows(r.Read), "written", Rows(r.Written), "from", r.From.String(), "to", r.To.String(), "err", r.Error}
}
