package serve

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicedata/sluice/runner"
)

// EventKind names a scheduling event.
type EventKind string

// The scheduling events passed to Config.OnEvent.
const (
	// EventScheduled: a timed job armed its timer for Event.Next.
	EventScheduled EventKind = "scheduled"
	// EventSkipped: a fire did not run; Reason is "running" (still running
	// in this process), "locked" (running in another process), "closing",
	// or "unchanged" (its Positioner shows nothing new since its last
	// committed run began; Config.QuietMax).
	EventSkipped EventKind = "skipped"
	// EventStarted: a run started (the lock is held).
	EventStarted EventKind = "started"
	// EventDone: a run ended and the job is no longer running; Run is
	// what was recorded, Err its error. Transient failures that are
	// retried emit EventRetry instead.
	EventDone EventKind = "done"
	// EventRetry: a transient failure (Run, Err); the next attempt is in
	// Delay.
	EventRetry EventKind = "retry"
	// EventIdle: a continuous job found nothing to do and waits Delay (or
	// its Waker).
	EventIdle EventKind = "idle"
	// EventStopped: a permanent failure stopped the job; Err says why.
	// It follows the failed run's EventDone: the job is no longer running.
	EventStopped EventKind = "stopped"
	// EventShutdown: Shutdown began; no new runs start.
	EventShutdown EventKind = "shutdown"
)

// Event is a scheduling event (Config.OnEvent).
type Event struct {
	Kind   EventKind
	Job    string
	At     time.Time     // clock time of the event
	Next   time.Time     // EventScheduled: the fire time
	Delay  time.Duration // EventRetry, EventIdle
	Reason string        // EventSkipped
	Run    *Run          // EventDone
	Err    error         // EventDone, EventRetry, EventStopped
}

// outcome is the end of one attempt or of a retried execution.
type outcome struct {
	status  Status
	run     *Run // the recorded run; nil when nothing ran
	locked  bool // someone else holds the lock: nothing ran
	moved   bool // committed and the offset or rows moved
	stopped bool // the failure stopped the job (stopJob)
	history bool // the run goes into the History (an empty poll does not)
	empty   bool // the run found nothing pending (isEmpty)
	quiet   bool // skipped: nothing changed since the last committed run began (quiet.go)
	err     error
}

// timedLoop fires a cron or @every job on its schedule until ctx ends.
// Fires stay on the schedule's grid (schedule.NextAfter): a late wake-up or
// a long run never shifts later fires.
func (s *Server) timedLoop(ctx context.Context, e *entry, st *state) {
	name := e.job.Name
	if w := s.waker(ctx, e); w != nil {
		// A timed job uses only its waker's position (quiet.go).
		defer w.Close()
	}
	next := e.sched.Next(s.clock.Now())
	for {
		if next.IsZero() {
			s.log.Warn("schedule has no further fire times", "job", name, "schedule", e.sched.String())
			return
		}
		st.setNext(next)
		t := s.clock.NewTimerAt(next)
		s.emit(Event{Kind: EventScheduled, Job: name, Next: next})
		select {
		case <-ctx.Done():
			t.Stop()
			st.setNext(time.Time{})
			return
		case <-t.C():
		}
		fired := next
		s.fire(ctx, e, st)
		var missed int
		next, missed = e.sched.NextAfter(fired, s.clock.Now())
		if missed > 0 {
			s.log.Warn("fires missed (the process was late or suspended)", "job", name, "missed", missed, "next", next)
		}
	}
}

// fire starts a run of a timed job in the background, or skips it when the
// job is still running.
func (s *Server) fire(ctx context.Context, e *entry, st *state) {
	name := e.job.Name
	if why := s.begin(name, st); why != "" {
		if why == "running" {
			level := slog.LevelInfo
			if st.retrying() {
				level = slog.LevelDebug // the retry was logged; a line per fire adds nothing
			}
			s.log.Log(ctx, level, "fire skipped: the previous run is still going", "job", name)
			s.metrics.FireSkipped(name, why)
		}
		s.emit(Event{Kind: EventSkipped, Job: name, Reason: why})
		return
	}
	go func() {
		out := s.execute(ctx, e, st)
		s.end(name, st)
		s.emitDone(name, out)
	}()
}

// continuousLoop runs a continuous job back to back while it moves rows,
// and polls with IdleBackoff (or waits for its Waker) while idle.
func (s *Server) continuousLoop(ctx context.Context, e *entry, st *state) {
	name := e.job.Name
	var wake <-chan struct{}
	if w := s.waker(ctx, e); w != nil {
		defer w.Close()
		wake = w.C()
	}
	idle := 0
	for ctx.Err() == nil {
		var out outcome
		switch why := s.begin(name, st); why {
		case "":
			out = s.execute(ctx, e, st)
			s.end(name, st)
			s.emitDone(name, out)
		case "closing":
			return
		default: // an earlier definition's run is still going
			out = outcome{locked: true}
		}
		if out.status == StatusFailed || ctx.Err() != nil {
			return
		}
		if out.moved {
			idle = 0
			continue
		}
		backoff := s.cfg.IdleBackoff
		if wake != nil {
			// A waker announces changes; polling is only a safety net.
			backoff.Max = max(backoff.Max, WakerIdlePoll)
		}
		d := backoff.Delay(idle, nil)
		idle++
		st.setNext(s.clock.Now().Add(d))
		t := s.clock.NewTimer(d)
		s.emit(Event{Kind: EventIdle, Job: name, Delay: d})
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		case <-wake:
			t.Stop()
			idle = 0
		}
	}
}

// waker returns the job's Waker from Config.Waker (nil when there is none
// or it failed, which is logged) and, when it is a Positioner, lets the
// job's runs be skipped while nothing changes (quiet.go).
func (s *Server) waker(ctx context.Context, e *entry) Waker {
	if s.cfg.Waker == nil {
		return nil
	}
	w, err := s.cfg.Waker(ctx, e.job)
	if err != nil {
		s.log.Warn("no wake-ups for the job; polling only", "job", e.job.Name, "err", err)
		return nil
	}
	if w == nil {
		return nil
	}
	if p, ok := w.(Positioner); ok {
		e.quiet.setWatch(p)
	}
	return closeFunc{w, func() { e.quiet.setWatch(nil) }}
}

// closeFunc is a Waker whose Close also runs done.
type closeFunc struct {
	Waker
	done func()
}

func (c closeFunc) Close() error {
	c.done()
	return c.Waker.Close()
}

// execute runs a job, retrying transient failures with RetryBackoff until
// it succeeds, fails permanently (the job stops) or ctx ends. The caller
// holds the job's running mark. Every run is recorded in the History, a
// transient one with the time of its retry (Run.RetryAt).
func (s *Server) execute(ctx context.Context, e *entry, st *state) outcome {
	for attempt := 0; ; attempt++ {
		out := s.attempt(e, st)
		switch out.status {
		case StatusTransient:
			d := s.cfg.RetryBackoff.Delay(attempt, s.rnd)
			retryAt := s.clock.Now().Add(d)
			st.setRetry(retryAt)
			if out.run != nil {
				// A copy: the job's state holds out.run, which /healthz
				// and the status page read concurrently.
				rc := *out.run
				rc.RetryAt = retryAt.UTC()
				out.run = &rc
			}
			s.record(out)
			s.log.Warn("transient failure; retrying", "job", e.job.Name, "attempt", attempt+1, "in", d, "err", out.err)
			t := s.clock.NewTimer(d)
			s.emit(Event{Kind: EventRetry, Job: e.job.Name, Delay: d, Run: out.run, Err: out.err})
			select {
			case <-ctx.Done():
				t.Stop()
				st.setRetry(time.Time{})
				return out
			case <-t.C():
			}
			continue
		case StatusFailed:
			s.record(out)
			s.stopJob(e, st, out.err)
			out.stopped = true
		default:
			s.record(out)
		}
		st.setRetry(time.Time{})
		return out
	}
}

// attempt runs the job once under its lock; the caller records the run
// (Server.record).
func (s *Server) attempt(e *entry, st *state) outcome {
	ctx := s.runCtx
	name := e.job.Name
	skip, pos, posOK := e.quiet.before(s.clock.Now(), s.quietMax())
	if skip {
		s.log.Debug("fire skipped: nothing changed since the last run began", "job", name)
		s.metrics.FireSkipped(name, "unchanged")
		return outcome{status: StatusCommitted, empty: true, quiet: true}
	}
	if s.slots != nil {
		// Wait for a run slot before taking the job's lock, so that a
		// waiting job does not keep another process from running it.
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		default:
			s.metrics.RunSlotWait(name)
			select {
			case s.slots <- struct{}{}:
				defer func() { <-s.slots }()
			case <-ctx.Done():
				return outcome{status: StatusCancelled, err: ctx.Err()}
			}
		}
	}
	if s.cfg.Locker != nil {
		unlock, ok, err := s.cfg.Locker.TryLock(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				return outcome{status: StatusCancelled, err: ctx.Err()}
			}
			st.failed(s.clock.Now(), err)
			s.metrics.observe(name, nil, err, StatusTransient)
			return outcome{status: StatusTransient, err: err} // the lock database is down: retry
		}
		if !ok {
			s.log.Info("fire skipped: the job is running in another process", "job", name)
			s.metrics.FireSkipped(name, "locked")
			return outcome{locked: true} // emitDone reports the skip, once the job is no longer marked running
		}
		defer unlock()
	}
	s.emit(Event{Kind: EventStarted, Job: name})
	start := s.clock.Now()
	res, err := s.cfg.Run(ctx, e.job)
	end := s.clock.Now()

	st0 := classify(err)
	if err != nil && ctx.Err() != nil {
		st0 = StatusCancelled
	}
	if err == nil && res != nil && res.Skipped != "" {
		st0 = StatusSkipped
	}
	if res == nil {
		res = &runner.Result{Job: name}
	}
	if res.Job == "" {
		res.Job = name
	}
	if res.Start.IsZero() || res.End.IsZero() {
		res.Start, res.End = start.UTC(), end.UTC()
	}
	r := &Run{Job: name, Node: s.node, Start: res.Start.UTC(), End: res.End.UTC(), Status: st0,
		Read: res.Stats.Read, Written: res.Stats.Written, DeadLettered: res.Stats.DeadLettered, From: res.From, Skipped: res.Skipped, Note: res.Note}
	if err == nil {
		r.To = res.To
	} else {
		r.Error = err.Error()
	}
	// A run that found nothing (nothing read, offset unchanged) is not
	// history: a continuous job would add a row per poll (empty.go).
	emptyPoll := isEmpty(r)
	if emptyPoll {
		s.metrics.observeEmpty(name, res)
	} else {
		s.metrics.observe(name, res, err, st0)
	}
	out := outcome{status: st0, err: err, run: r, history: !emptyPoll, empty: emptyPoll}
	// For skipping, every committed run remembers the position read
	// before it (quiet.go): it consumed every change logged before that
	// read, whether it read some or none. So the run a continuous job
	// starts at once after a run that read changes ("moved"), and the next
	// fire of a timed one, are skipped while nothing was logged since the
	// run began (that run read nothing, at the cost of a plan and a read:
	// issue #19).
	e.quiet.after(start, st0 == StatusCommitted, pos, posOK)
	switch st0 {
	case StatusCommitted:
		out.moved = Rows(r.Read) > 0 || !r.From.Equal(r.To)
		if Rows(r.Read) > 0 {
			s.consumed.Store(true)
		}
		st.succeeded(r)
		level := slog.LevelInfo
		if emptyPoll {
			level = slog.LevelDebug
		}
		s.log.Log(ctx, level, "run committed", "job", name, "read", Rows(r.Read), "written", Rows(r.Written), "dead_lettered", r.DeadLettered,
			"from", r.From.String(), "to", r.To.String(), "duration", r.Duration())
	case StatusSkipped:
		st.succeeded(r)
		s.log.Info("run consumed nothing", "job", name, "why", r.Skipped)
	case StatusCancelled:
		st.recordOnly(r)
		s.log.Warn("run cancelled; nothing committed", "job", name)
	default:
		st.recordOnly(r)
		st.failed(end, err)
	}
	return out
}

// emitDone reports the end of an execution, after the job's running mark
// is cleared: EventDone for a run, then EventStopped when its failure
// stopped the job, or EventSkipped (reason "locked") for an execution that
// found the job's lock held by another process. Reporting these here
// rather than where they happened means an observer of any of them finds
// the job no longer running (a reload right after EventStopped would
// otherwise find the stopped run still marked and skip its first fire).
func (s *Server) emitDone(name string, out outcome) {
	switch {
	case out.run != nil:
		s.emit(Event{Kind: EventDone, Job: name, Run: out.run, Err: out.err})
		if out.stopped {
			s.emit(Event{Kind: EventStopped, Job: name, Err: out.err})
		}
	case out.locked:
		s.emit(Event{Kind: EventSkipped, Job: name, Reason: "locked"})
	case out.quiet:
		s.emit(Event{Kind: EventSkipped, Job: name, Reason: "unchanged"})
	}
}

// stopJob stops a job after a permanent failure, leaving the others;
// emitDone reports it (EventStopped) once the run is no longer marked.
func (s *Server) stopJob(e *entry, st *state, err error) {
	name := e.job.Name
	st.mu.Lock()
	st.stopped, st.next = true, time.Time{}
	st.mu.Unlock()
	s.metrics.SetStopped(name, true)
	s.log.Error("job stopped after a permanent failure; fix it and reload (SIGHUP)", "job", name, "err", err)
	s.mu.Lock()
	s.stopEntry(e)
	s.mu.Unlock()
}

// setRetry sets (or, with the zero time, clears) the time of the job's
// next retry.
func (st *state) setRetry(t time.Time) {
	st.mu.Lock()
	st.retryAt = t
	st.mu.Unlock()
}

// retrying reports whether a retry of a transient failure is pending.
func (st *state) retrying() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return !st.retryAt.IsZero()
}

func (st *state) setNext(t time.Time) {
	st.mu.Lock()
	st.next = t
	st.mu.Unlock()
}

func (st *state) succeeded(r *Run) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last, st.failures = r, 0
}

func (st *state) recordOnly(r *Run) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last = r
}

func (st *state) failed(at time.Time, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.failures++
	st.lastErr, st.lastErrAt = err.Error(), at.UTC()
}
