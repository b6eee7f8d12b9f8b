package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/schedule"
)

// RunFunc runs one job once and reports it, as runner.Runner.RunJob does.
// It must honour ctx: when ctx is cancelled before its commit it must
// return without committing (the runner guarantees this).
type RunFunc func(ctx context.Context, job *plan.Job) (*runner.Result, error)

// Waker tells an idle continuous job that changes may be pending, so it
// runs before its poll backoff ends (PGListener: one LISTEN session per database).
type Waker interface {
	// C receives a value when the job should look for changes.
	C() <-chan struct{}
	// Close releases the waker.
	Close() error
}

// WakerFunc returns the Waker of a continuous job, or nil when its source
// has none (the job then only polls). It is called when the job's loop
// starts; ctx ends when the loop ends.
type WakerFunc func(ctx context.Context, job *plan.Job) (Waker, error)

// LagFunc measures a job's stream lag without moving its offset (optional;
// the CLI implements it with the source backend).
type LagFunc func(ctx context.Context, job *plan.Job) (Lag, error)

// TrimLogsFunc purges what no stream can read from the change logs of the
// sources of jobs (runner.LogKeeper) and returns their sizes.
type TrimLogsFunc func(ctx context.Context, jobs []*plan.Job) ([]runner.LogSize, error)

// Lag is how far a job's stream is behind.
type Lag struct {
	Changes int64         `json:"changes"` // changes pending after the job's offset
	Age     time.Duration `json:"-"`       // age of the oldest pending change, 0 when none
}

// Config configures a Server. Only Run is required.
type Config struct {
	// Run runs a job once (runner.Runner.RunJob in production).
	Run RunFunc
	// Log receives server events; nil discards them.
	Log *slog.Logger
	// Clock drives schedules and backoffs; nil → SystemClock.
	Clock Clock
	// Locker keeps a job from running in two processes; nil → in-process
	// exclusion only.
	Locker Locker
	// History records every run; nil → runs are only logged.
	History History
	// Metrics receives every run; nil → NewMetrics().
	Metrics *Metrics
	// Lag measures stream lag for /metrics, /healthz and Status; optional.
	Lag LagFunc
	// LagInterval is how often Lag is called per job; 0 → 15s.
	LagInterval time.Duration
	// TrimLogs bounds the change logs of the jobs' sources and measures
	// them, every LagInterval, for sluice_change_log_rows and
	// sluice_change_log_bytes; optional.
	TrimLogs TrimLogsFunc
	// Waker gives jobs a wake-up source; optional. Continuous jobs wait on
	// it while idle; a Waker that is also a Positioner (PollWatcher, PGListener) lets
	// timed and continuous jobs skip runs while their change log stays
	// where it was before their last committed run (QuietMax).
	Waker WakerFunc
	// QuietMax bounds how long a job's runs may be skipped because its
	// Positioner says nothing changed: after QuietMax since its last run,
	// the job runs anyway (so what the position does not show, such as a
	// job's checkpoint reset in its sink, is seen within QuietMax). 0 →
	// DefaultQuietMax; negative → never skip.
	QuietMax time.Duration
	// Listen is the address of /healthz and /metrics (":9464"); "" → no
	// HTTP listener (Handler can still be mounted elsewhere).
	Listen string
	// Node names this process in the run history; "" → host:pid.
	Node string
	// RetryBackoff spaces retries of transient failures; zero →
	// DefaultRetryBackoff().
	RetryBackoff Backoff
	// IdleBackoff spaces polls of an idle continuous job; zero →
	// DefaultIdleBackoff().
	IdleBackoff Backoff
	// MaxRuns is how many runs of different jobs may be under way at once
	// in this process; the others wait for a slot (their fires are late,
	// never lost). It bounds the connections and memory that runs take,
	// whatever the number of jobs. 0 → DefaultMaxRuns; negative → no
	// bound.
	MaxRuns int
	// UnhealthyAfter is how many consecutive transient failures make a job
	// unhealthy in /healthz; 0 → 3. A stopped job is always unhealthy.
	UnhealthyAfter int
	// CancelWait bounds how long Shutdown waits for cancelled runs to
	// return after the grace period; 0 → 10s.
	CancelWait time.Duration
	// Rand returns uniform numbers in [0,1) for retry jitter; nil →
	// math/rand/v2.
	Rand func() float64
	// OnEvent, when set, is called synchronously for every scheduling event
	// (tests, UIs). It must not block or call back into the Server.
	OnEvent func(Event)
}

// Def is one job file's outcome for Reload: the parsed (and, if the caller
// wants, planned) job, or the reason the file is broken.
type Def struct {
	// File identifies the job file; a broken file keeps the jobs it
	// defined before.
	File string
	// Job is the parsed job; nil when Err is set.
	Job *plan.Job
	// Err is why the file could not be loaded (parse or validation errors).
	Err error
}

// Server runs jobs on their schedules. Create it with New, give it jobs
// with Reload, then Start; stop it with Shutdown. Its methods are safe for
// concurrent use.
type Server struct {
	// consumed: a run committed changes it read since the last trim of
	// the change logs, so the next lag poll trims though every job is
	// quiet (a run that read leaves its job quiet: quiet.go).
	consumed atomic.Bool

	cfg     Config
	log     *slog.Logger
	clock   Clock
	metrics *Metrics
	node    string
	rnd     func() float64
	slots   chan struct{} // one value per run under way (Config.MaxRuns); nil → no bound

	mu         sync.Mutex
	entries    map[string]*entry
	states     map[string]*state
	started    bool
	closing    bool
	runCtx     context.Context
	cancelRuns context.CancelFunc
	loopCtx    context.Context
	stopLoops  context.CancelFunc
	loops      sync.WaitGroup
	runs       sync.WaitGroup
	httpSrv    *http.Server
	ln         net.Listener
	rec        *historyWriter       // nil without a History
	emptyNoted map[string]time.Time // per job, the last empty check stored (noteEmpty)
}

// entry is a loaded job definition and its scheduling loop.
type entry struct {
	job   *plan.Job
	file  string
	sched schedule.Schedule
	stop  context.CancelFunc // ends the loop; nil until started
	done  chan struct{}      // closed when the loop has exited

	quiet quietState // runs skipped while nothing changed (quiet.go)
}

// state is what the server knows about a job name; it survives reloads.
type state struct {
	running atomic.Bool

	mu        sync.Mutex
	last      *Run
	lastErr   string
	lastErrAt time.Time
	failures  int // consecutive failed runs
	stopped   bool
	next      time.Time
	retryAt   time.Time // when a transient failure is retried; zero when none is pending
	lag       *Lag
	lagErr    string
	lagHist   []LagPoint // the last LagWindow of measurements, for the status page
}

// DefaultMaxRuns is Config.MaxRuns when it is 0: a run waits on its
// database as much as it computes, so a few runs keep two cores busy; a run
// holds at most two connections of one PostgreSQL pool, and the pools hold
// runner.DefaultMaxConns (10), so four runs never exhaust a pool.
const DefaultMaxRuns = 4

// New returns a Server with no jobs. It returns an error wrapping
// ErrNoRunFunc when cfg.Run is nil.
func New(cfg Config) (*Server, error) {
	if cfg.Run == nil {
		return nil, ErrNoRunFunc
	}
	s := &Server{cfg: cfg, log: cfg.Log, clock: cfg.Clock, metrics: cfg.Metrics, node: nodeName(cfg.Node), rnd: cfg.Rand,
		entries: map[string]*entry{}, states: map[string]*state{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.clock == nil {
		s.clock = SystemClock()
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	if s.rnd == nil {
		s.rnd = rand.Float64
	}
	s.cfg.RetryBackoff = cfg.RetryBackoff.orDefault(DefaultRetryBackoff())
	s.cfg.IdleBackoff = cfg.IdleBackoff.orDefault(DefaultIdleBackoff())
	if s.cfg.UnhealthyAfter <= 0 {
		s.cfg.UnhealthyAfter = 3
	}
	if s.cfg.MaxRuns == 0 {
		s.cfg.MaxRuns = DefaultMaxRuns
	}
	if s.cfg.MaxRuns > 0 {
		s.slots = make(chan struct{}, s.cfg.MaxRuns)
	}
	if s.cfg.LagInterval <= 0 {
		s.cfg.LagInterval = 15 * time.Second
	}
	if s.cfg.CancelWait <= 0 {
		s.cfg.CancelWait = 10 * time.Second
	}
	if cfg.History != nil {
		s.rec = newHistoryWriter(cfg.History, s.log, s.metrics)
	}
	return s, nil
}

// Metrics returns the server's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Reload replaces the job set with defs, one per job file (call it once
// before Start with the initial set). For each file:
//
//   - a good definition (Err nil, schedule valid, name not taken by another
//     file) is loaded; if it equals the running definition the job keeps
//     its schedule state, otherwise its loop is restarted with the new
//     definition (a run in progress finishes first and is never
//     overlapped);
//   - a broken one (Err set, bad schedule, duplicate name) keeps the jobs
//     that file defined before, unchanged, and is logged;
//   - jobs of files absent from defs are removed (their running runs
//     finish).
//
// Jobs stopped by a permanent failure restart on every Reload — reloading
// is how an operator says "fixed". It returns the broken files' errors
// joined (each wrapping ErrKeptOld, with the file name), or ErrClosed after
// Shutdown; the good files are applied in either case.
func (s *Server) Reload(defs []Def) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ErrClosed
	}
	next := map[string]*entry{}
	var good []*entry
	var broken []Def
	for _, d := range defs {
		if d.Err == nil && d.Job == nil {
			d.Err = errors.New("no job in file")
		}
		if d.Err == nil {
			sched, err := schedule.Parse(d.Job.Schedule, d.Job.ScheduleTZ)
			if err != nil {
				d.Err = pos.Errorf(d.Job.SchedulePos, "%w", err)
			} else {
				good = append(good, &entry{job: d.Job, file: d.File, sched: sched})
				continue
			}
		}
		broken = append(broken, d)
	}
	var errs []error
	// keepOld keeps the jobs a broken file defined before, unless their
	// name is taken by now.
	keepOld := func(d Def) {
		var kept []string
		for name, old := range s.entries {
			if _, taken := next[name]; !taken && old.file == d.File {
				next[name] = old
				kept = append(kept, name)
			}
		}
		sort.Strings(kept)
		s.log.Error("job file not loaded; keeping its previous jobs", "file", d.File, "kept", kept, "err", d.Err)
		errs = append(errs, fmt.Errorf("%s: %w (kept: %v): %w", d.File, ErrKeptOld, kept, d.Err))
	}
	// Broken files first: the names they defined stay theirs, so a job
	// cannot silently move to another file while its own file is broken.
	for _, d := range broken {
		keepOld(d)
	}
	for _, e := range good {
		if other, dup := next[e.job.Name]; dup {
			keepOld(Def{File: e.file, Err: fmt.Errorf("%w %q: also defined in %s", ErrDuplicateJob, e.job.Name, other.file)})
			continue
		}
		next[e.job.Name] = e
	}

	for name, old := range s.entries {
		nw, ok := next[name]
		st := s.states[name]
		switch {
		case ok && nw == old:
			continue // kept from a broken file
		case ok && sameJob(old, nw) && !st.isStopped():
			next[name] = old // unchanged: keep the loop and its schedule
			continue
		}
		s.stopEntry(old)
		if !ok {
			s.log.Info("job removed", "job", name, "file", old.file)
			s.metrics.Forget(name)
		}
	}
	for name, e := range next {
		if old := s.entries[name]; old == e {
			continue
		}
		st := s.stateLocked(name)
		st.mu.Lock()
		wasStopped := st.stopped
		st.stopped, st.failures, st.next = false, 0, time.Time{}
		st.mu.Unlock()
		s.metrics.SetStopped(name, false)
		if _, existed := s.entries[name]; existed {
			s.log.Info("job reloaded", "job", name, "file", e.file, "schedule", e.sched.String(), "was_stopped", wasStopped)
		} else {
			s.log.Info("job loaded", "job", name, "file", e.file, "schedule", e.sched.String())
		}
		if s.started {
			s.startLoop(e)
		}
	}
	s.entries = next
	return errors.Join(errs...)
}

// sameJob reports whether two definitions are identical.
func sameJob(a, b *entry) bool {
	return a.file == b.file && a.sched.String() == b.sched.String() && reflect.DeepEqual(a.job, b.job)
}

// stopEntry ends an entry's loop (not its running run); s.mu is held.
func (s *Server) stopEntry(e *entry) {
	if e.stop != nil {
		e.stop()
	}
}

// stateLocked returns the state of a job name, creating it; s.mu is held.
func (s *Server) stateLocked(name string) *state {
	st, ok := s.states[name]
	if !ok {
		st = &state{}
		s.states[name] = st
	}
	return st
}

func (st *state) isStopped() bool {
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.stopped
}

// Start starts the scheduling loops of the loaded jobs, the lag poller and
// the HTTP listener (Config.Listen). ctx bounds the whole server: cancelling
// it aborts running jobs at once, so stop gracefully with Shutdown instead.
// It returns ErrStarted on a second call, ErrClosed after Shutdown, or the
// listen error.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return ErrStarted
	}
	if s.closing {
		return ErrClosed
	}
	if s.cfg.Listen != "" {
		ln, err := net.Listen("tcp", s.cfg.Listen)
		if err != nil {
			return fmt.Errorf("listen for the status page, /healthz and /metrics: %w", err)
		}
		s.ln = ln
		s.httpSrv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("HTTP listener failed", "addr", ln.Addr().String(), "err", err)
			}
		}()
		s.log.Info("serving the status page, /healthz, /livez, /readyz and /metrics", "addr", ln.Addr().String(), "status_page", pageURL(ln.Addr()))
	}
	s.runCtx, s.cancelRuns = context.WithCancel(ctx)
	s.loopCtx, s.stopLoops = context.WithCancel(s.runCtx)
	s.started = true
	for _, e := range s.entries {
		s.startLoop(e)
	}
	if s.rec != nil {
		s.loops.Add(1)
		go func() {
			defer s.loops.Done()
			s.rec.retryLoop(s.loopCtx, s.clock, s.cfg.RetryBackoff, s.rnd)
		}()
	}
	if s.cfg.Lag != nil || s.cfg.TrimLogs != nil {
		s.loops.Add(1)
		go func() {
			defer s.loops.Done()
			s.lagLoop(s.loopCtx)
		}()
	}
	s.log.Info("server started", "jobs", len(s.entries), "node", s.node)
	return nil
}

// Addr is the address the HTTP listener is bound to, "" when none.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// startLoop starts an entry's scheduling loop; s.mu is held, s.started.
func (s *Server) startLoop(e *entry) {
	if e.sched.IsManual() {
		return
	}
	ctx, cancel := context.WithCancel(s.loopCtx)
	e.stop, e.done = cancel, make(chan struct{})
	st := s.stateLocked(e.job.Name)
	s.loops.Add(1)
	go func() {
		defer s.loops.Done()
		defer close(e.done)
		defer cancel()
		if e.sched.IsContinuous() {
			s.continuousLoop(ctx, e, st)
		} else {
			s.timedLoop(ctx, e, st)
		}
	}()
}

// Shutdown stops the server gracefully: no new runs start (scheduled fires,
// retries and continuous polls stop at once), runs in progress may finish
// until ctx is done (the grace period), then their contexts are cancelled —
// a cancelled run commits nothing and moves no offset — and Shutdown waits
// up to Config.CancelWait for them to return. Finally the HTTP listener
// closes. It returns nil when every run finished in time, an error wrapping
// ErrForcedShutdown when runs were cancelled, ErrClosed on a second call.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closing = true
	if !s.started {
		s.mu.Unlock()
		return nil
	}
	s.stopLoops()
	running := 0
	for _, st := range s.states {
		if st.running.Load() {
			running++
		}
	}
	s.mu.Unlock()
	s.log.Info("shutting down: no new runs; waiting for running jobs", "running", running)
	s.emit(Event{Kind: EventShutdown})

	done := make(chan struct{})
	go func() {
		s.loops.Wait()
		s.runs.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn("grace period over; cancelling running jobs (they commit nothing)")
		s.cancelRuns()
		t := s.clock.NewTimer(s.cfg.CancelWait)
		select {
		case <-done:
			t.Stop()
			err = ErrForcedShutdown
		case <-t.C():
			err = fmt.Errorf("%w; some runs did not return within %v", ErrForcedShutdown, s.cfg.CancelWait)
		}
	}
	s.cancelRuns()
	if s.rec != nil {
		s.rec.close(ctx)
	}
	if s.httpSrv != nil {
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if herr := s.httpSrv.Shutdown(hctx); herr != nil {
			_ = s.httpSrv.Close()
		}
	}
	s.log.Info("server stopped", "forced", err != nil)
	return err
}

// begin marks st running for a new run. It returns "" on success, else
// the reason the run may not start: "running" or "closing".
func (s *Server) begin(name string, st *state) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return "closing"
	}
	if !st.running.CompareAndSwap(false, true) {
		return "running"
	}
	s.runs.Add(1)
	s.metrics.SetRunning(name, true)
	return ""
}

// end clears the running mark set by begin.
func (s *Server) end(name string, st *state) {
	st.running.Store(false)
	s.metrics.SetRunning(name, false)
	s.runs.Done()
}

// record stores an attempt's run in the History (see historyWriter), unless it
// is not history (an empty poll) or there is no History.
func (s *Server) record(out outcome) {
	if out.empty && out.run != nil && s.cfg.History != nil {
		s.noteEmpty(out.run)
	}
	if s.rec == nil || out.run == nil || !out.history {
		return
	}
	// A copy: the history writer sets its ID when stored, while the job's
	// state holds out.run for /healthz and the status page to read.
	r := *out.run
	s.rec.add(s.runCtx, &r)
}

// emit calls the OnEvent hook.
func (s *Server) emit(ev Event) {
	if s.cfg.OnEvent != nil {
		if ev.At.IsZero() {
			ev.At = s.clock.Now()
		}
		s.cfg.OnEvent(ev)
	}
}

// lagLoop refreshes every job's lag, and trims and measures the change
// logs, each LagInterval. While every job is quiet (its last run
// committed and its position has not moved since, quiet.go) the logs are
// trimmed at most once per QuietMax: nothing was logged that a trim could
// remove, and a trim of a PostgreSQL database of 1,000 tracked tables
// takes thousands of statements (issue #19: it ran back to back, 60 s
// each, on an idle server).
func (s *Server) lagLoop(ctx context.Context) {
	var lastTrim time.Time
	for {
		s.mu.Lock()
		jobs := make([]*plan.Job, 0, len(s.entries))
		entries := make([]*entry, 0, len(s.entries))
		for _, e := range s.entries {
			jobs, entries = append(jobs, e.job), append(entries, e)
		}
		s.mu.Unlock()
		allQuiet := true
		for _, e := range entries {
			if !e.quiet.unchanged() {
				allQuiet = false
				break
			}
		}
		if s.cfg.Lag != nil {
			for _, e := range entries {
				if e.quiet.unchanged() {
					// Its last run committed and nothing was logged
					// since: no change is pending (quiet.go).
					s.setLag(e.job, Lag{}, nil)
					continue
				}
				s.refreshLag(ctx, e.job)
			}
		}
		consumed := s.consumed.Swap(false)
		if now := s.clock.Now(); s.cfg.TrimLogs != nil && (!allQuiet || consumed || lastTrim.IsZero() || now.Sub(lastTrim) >= s.quietMax()) {
			s.trimLogs(ctx, jobs)
			lastTrim = now
		}
		t := s.clock.NewTimer(s.cfg.LagInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// trimLogs calls Config.TrimLogs and sets the change log metrics.
func (s *Server) trimLogs(ctx context.Context, jobs []*plan.Job) {
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	sizes, err := s.cfg.TrimLogs(tctx, jobs)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("trimming the change logs failed; the next poll tries again", "err", err)
	}
	for _, sz := range sizes {
		s.metrics.SetLogSize(sz)
	}
}

// refreshLag measures one job's lag into its state and the metrics.
func (s *Server) refreshLag(ctx context.Context, j *plan.Job) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lag, err := s.cfg.Lag(lctx, j)
	if err != nil && ctx.Err() != nil {
		return
	}
	s.setLag(j, lag, err)
}

// setLag stores a measured lag (or the error measuring it) in the job's
// state and the metrics.
func (s *Server) setLag(j *plan.Job, lag Lag, err error) {
	s.mu.Lock()
	st := s.stateLocked(j.Name)
	s.mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	if err != nil {
		st.lagErr = err.Error()
		s.log.Debug("measuring stream lag failed", "job", j.Name, "err", err)
		return
	}
	st.lag, st.lagErr = &lag, ""
	st.recordLag(LagPoint{At: s.clock.Now(), Changes: lag.Changes, Age: lag.Age})
	s.metrics.SetLag(j.Name, lag)
}

// pageURL is the status page's URL on the listener's address for a person
// on the same machine: "http://localhost:9464/" when the listener takes
// every address (":9464"), else "http://HOST:PORT/".
func pageURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String() + "/"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
