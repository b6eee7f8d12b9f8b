package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/internal/redact"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/serve"
	"github.com/sluicedata/sluice/sources/postgres"
	"github.com/sluicedata/sluice/sources/sqlite"
)

func init() { register(newServeCmd) }

// serveFlags are the flags of `sluice serve`.
type serveFlags struct {
	conn, state, listen string
	grace               time.Duration
	watch               bool
	maxRuns             int
}

func newServeCmd(e *env) *cobra.Command {
	var f serveFlags
	c := &cobra.Command{
		Use:   "serve [flags] DIR|FILE…",
		Short: "run every job on its schedule (cron, @every, continuous) until SIGINT/SIGTERM",
		Long: "Run every job on its schedule — cron (with CRON_TZ=), @every DURATION, or continuous — until\n" +
			"SIGINT or SIGTERM; a job never overlaps itself, and several serve processes share the jobs by\n" +
			"database locks. Run history goes to --state. SIGHUP (or --watch) reloads the job files.\n" +
			"--listen serves a status page at / (its URL is in the start log), /healthz, /livez, /readyz\n" +
			"and /metrics.",
		Annotations:       map[string]string{defaultLevelKey: "info"},
		ValidArgsFunction: jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdServe(cmd.Context(), e, f, args)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.conn, "conn", "", "default connection `URL` for jobs that name none")
	fl.StringVar(&f.state, "state", "", "database `URL` for run history and job locks (default: the default connection)")
	fl.StringVar(&f.listen, "listen", "", "`ADDRESS` for the status page (/), /healthz, /livez, /readyz and /metrics, e.g. :9464 (default: none)")
	fl.DurationVar(&f.grace, "grace", 30*time.Second, "on SIGINT/SIGTERM, the `DURATION` running batches may take to commit before they are cancelled")
	fl.BoolVar(&f.watch, "watch", false, "reload job files when they change (also on SIGHUP)")
	fl.IntVar(&f.maxRuns, "max-runs", serve.DefaultMaxRuns, "at most `N` runs under way at once; other jobs wait for a slot (bounds connections and memory whatever the number of jobs)")
	return c
}

// serveGCPercent is the Go collector's target (GOGC) in sluice serve when
// the environment sets none: the heap may grow by half the live heap
// between collections, not by all of it (Go's default, 100). At 1,000
// SQLite jobs it took 13 MB off serve's peak RSS (212 -> 199 MB, median of
// 3 rounds; idle CPU 0.8 -> 1.2% of a core; docs/benchmarks.md, issue #19).
const serveGCPercent = 50

func cmdServe(ctx context.Context, e *env, f serveFlags, paths []string) error {
	if len(paths) == 0 {
		return usageErr("name a directory or job files")
	}
	if f.maxRuns < 1 {
		return usageErr("--max-runs must be at least 1")
	}
	if f.grace < 0 {
		return usageErr("--grace must not be negative")
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	log := e.log
	r := newRunner(e, f.conn)
	r.Log = log
	// Each run holds at most two connections of one pool: room for every
	// run at once, and one to spare, so runs never wait on each other.
	r.MaxConns = max(runner.DefaultMaxConns, 2*f.maxRuns+2)
	defer r.Close()
	stateURL, err := r.Resolve(f.state)
	if err != nil {
		return err
	}
	// An unreachable state database is transient: serve starts and keeps
	// trying it (serve.RetryingStore); a bad URL is not.
	store, err := serve.OpenStoreRetrying(ctx, stateURL, serve.StoreOptions{Log: log}, func(err error) error {
		return fmt.Errorf("state database %s: %w", redact.Conn(stateURL), redact.Error(err, stateURL))
	})
	if err != nil {
		return fmt.Errorf("state database %s: %w", redact.Conn(stateURL), redact.Error(err, stateURL))
	}
	defer store.Close()
	listeners := newPGListeners(ctx, r, log)
	defer listeners.Close()
	// A job's plan is kept between its runs while the catalogs it was made
	// from do not change (one catalog-version statement per run instead of
	// the plan's dozen or more; PostgreSQL jobs, issue #19).
	plans := runner.NewPlanCache(r)
	srv, err := serve.New(serve.Config{
		Run: plans.Run,
		Log: log, Locker: store, History: store, Listen: f.listen, MaxRuns: max(f.maxRuns, 1),
		Lag: lagFunc(r), Waker: listeners.waker, TrimLogs: r.TrimLogs,
	})
	if err != nil {
		return err
	}
	reload := func(runCtx context.Context) {
		defs := loadDefs(runCtx, r, paths, e.maxJobSize)
		keep := map[string]bool{}
		for _, d := range defs {
			if d.Job != nil {
				keep[d.Job.Name] = true
			}
		}
		plans.Forget(keep)
		if err := srv.Reload(defs); err != nil {
			log.Error("reload kept the previous definition of broken files", "err", err)
		}
	}
	reload(ctx)
	// Runs must outlive the signal: SIGINT/SIGTERM end ctx, and Shutdown
	// lets running batches commit for --grace before it cancels them.
	if err := srv.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if f.watch {
		go serve.Watch(ctx, nil, time.Second, paths, func() { reload(ctx) })
	}
	for {
		select {
		case <-hup:
			log.Info("SIGHUP: reloading job files")
			reload(ctx)
		case <-ctx.Done():
			log.Info("stopping: no new runs; running batches may commit", "grace", f.grace.String())
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.grace)
			err := srv.Shutdown(sctx)
			cancel()
			if errors.Is(err, serve.ErrForcedShutdown) {
				log.Warn("grace period over: cancelled running batches (their offsets did not move)")
				return nil
			}
			return err
		}
	}
}

// loadDefs parses every job file and runs SQL jobs' setup statements once
// (not on every fire). A file that fails either keeps its old job.
func loadDefs(ctx context.Context, r *runner.Runner, paths []string, maxSize int) []serve.Def {
	loaded, err := loadJobs(paths, maxSize)
	if err != nil {
		return []serve.Def{{File: fmt.Sprint(paths), Err: err}}
	}
	defs := make([]serve.Def, 0, len(loaded))
	for _, f := range loaded {
		d := serve.Def{File: f.path, Job: f.job, Err: f.err}
		if d.Err == nil {
			d.Err = checkJob(f.job)
		}
		if d.Err == nil {
			d.Err = r.Setup(ctx, f.job)
		}
		if d.Err != nil {
			d.Job = nil
		}
		defs = append(defs, d)
	}
	return defs
}

// pgListeners gives jobs their serve.Waker: jobs reading a PostgreSQL
// stream, timed or continuous, subscribe to the channel the capture
// trigger of the stream's table notifies (postgres.NotifyChannel) on one
// serve.PGListener, so one LISTEN session, per database whatever the
// number of jobs; jobs reading a SQLite stream subscribe to one
// serve.PollWatcher per database file (sqlite.LogWatch). Either wakes
// continuous jobs when their table logs a change and, being a
// serve.Positioner, lets serve skip the runs of idle jobs while nothing is
// logged. Other sources get no waker.
type pgListeners struct {
	ctx context.Context
	r   *runner.Runner
	log *slog.Logger

	mu     sync.Mutex
	all    map[string]*serve.PGListener  // by resolved connection URL
	sqlite map[string]*serve.PollWatcher // by database identity (the file's path)
	closer []func() error
}

func newPGListeners(ctx context.Context, r *runner.Runner, log *slog.Logger) *pgListeners {
	return &pgListeners{ctx: ctx, r: r, log: log, all: map[string]*serve.PGListener{}, sqlite: map[string]*serve.PollWatcher{}}
}

// waker is the serve.WakerFunc: a subscription to the job's table channel
// on the listener of the job's database, or to the job's table on the
// watcher of its SQLite file.
func (p *pgListeners) waker(ctx context.Context, job *plan.Job) (serve.Waker, error) {
	b, err := p.r.JobBackend(ctx, job, job.Conn)
	if err != nil {
		return nil, err
	}
	scheme := b.Scheme()
	if scheme != "postgres" && scheme != "sqlite" {
		return nil, nil
	}
	url, err := p.r.Resolve(job.Conn)
	if err != nil {
		return nil, err
	}
	if scheme == "sqlite" {
		// Keyed by stream name: no query per job (a thousand jobs starting
		// at once would each open a connection).
		return p.sqliteWaker(ctx, b.Identity(), url, job.Source.Stream)
	}
	src, ok := b.(runner.Source)
	if !ok {
		return nil, nil
	}
	info, err := src.Stream(ctx, job.Source)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	l, ok := p.all[url]
	if !ok {
		l = serve.NewPGListener(p.ctx, url, postgres.RegisterListeners, p.log.With("listener", redact.Conn(url)))
		p.all[url] = l
	}
	p.mu.Unlock()
	return l.Subscribe(postgres.NotifyChannel(info.Table)), nil
}

// sqliteWaker subscribes to stream on the watcher of the SQLite file id,
// starting the watcher (with its own connection) on first use.
func (p *pgListeners) sqliteWaker(ctx context.Context, id, url, stream string) (serve.Waker, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.sqlite[id]
	if !ok {
		lw, err := sqlite.OpenLogWatch(ctx, url)
		if err != nil {
			return nil, err
		}
		w = serve.NewPollWatcher(p.ctx, 0, lw.Positions, p.log.With("watcher", id))
		p.sqlite[id] = w
		p.closer = append(p.closer, w.Close, lw.Close)
	}
	return w.Subscribe(sqlite.WatchKey(stream)), nil
}

// Close stops every listener.
func (p *pgListeners) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.all {
		_ = l.Close()
	}
	for _, c := range p.closer { // each watcher before its LogWatch
		_ = c()
	}
}
