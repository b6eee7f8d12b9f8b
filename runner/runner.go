package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/redact"
	"github.com/sluicedata/sluice/plan"
)

// DefaultConn is the connection used when neither the job, the Runner nor
// SLUICE_CONN names one: an embedded SQLite file in the working directory.
const DefaultConn = "sqlite:sluice.db"

// DefaultBatchSize is the number of changes per batch of a run that moves
// rows through sluice; such a run holds about three batches in memory at
// once (one being read, one queued, one being written).
const DefaultBatchSize = 10000

// DefaultCommitStep is how long a pushed-down run that commits in steps
// (SteppedPushdown) aims to hold the database's write lock per step.
const DefaultCommitStep = 100 * time.Millisecond

// Runner plans and runs jobs. The zero value is not usable; set Log at
// least. A Runner caches open backends by connection URL; Close closes them.
// It is safe for concurrent use by several goroutines running different
// jobs.
type Runner struct {
	// Log receives run events; nil discards them.
	Log *slog.Logger
	// Conn is the default connection for jobs that name none ("" →
	// $SLUICE_CONN → DefaultConn).
	Conn string
	// LookupEnv expands ${VAR} in connection strings; nil → os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// BatchSize bounds a batch; 0 → DefaultBatchSize.
	BatchSize int
	// CommitStep is how long a pushed-down run that can commit in steps
	// (SteppedPushdown: a SQLite merge of net changes) aims to hold the
	// database's write lock per step, so that an application writing the
	// same file waits about that long at most; 0 → DefaultCommitStep; a
	// negative value runs the whole run in one transaction.
	CommitStep time.Duration
	// Stdout receives rows of stdout sinks; nil → os.Stdout.
	Stdout io.Writer
	// Observer, when set, is told about every run (metrics hook).
	Observer Observer
	// MaxConns bounds the connection pool of each PostgreSQL database the
	// Runner opens whose URL sets no pool_max_conns; 0 → DefaultMaxConns.
	MaxConns int

	mu       sync.Mutex
	backends map[string]Backend
}

// Observer is the metrics hook: it is called after every run, failed or
// not.
type Observer interface {
	RunDone(r *Result, err error)
}

// Result reports one run.
type Result struct {
	Job     string
	Start   time.Time // UTC
	End     time.Time // UTC
	Stats   Stats
	From    cdc.Offset // offset the run read from
	To      cdc.Offset // offset after the run ("" partitions: unchanged when Skipped)
	Skipped string     // why nothing was consumed, "" when the run consumed
	// Note is a remark for the run history ("" for none): Stats.Note.
	Note string
}

func (r *Runner) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

func (r *Runner) stdout() io.Writer {
	if r.Stdout == nil {
		return os.Stdout
	}
	return r.Stdout
}

func (r *Runner) commitStep() time.Duration {
	if r.CommitStep == 0 {
		return DefaultCommitStep
	}
	return r.CommitStep
}

func (r *Runner) batchSize() int {
	if r.BatchSize <= 0 {
		return DefaultBatchSize
	}
	return r.BatchSize
}

// Backend returns the open backend for conn (after ${ENV} expansion),
// opening it on first use. conn "" means the Runner's default connection.
// A missing SQLite database is created only under WithCreate(ctx,
// CreateAll); otherwise it is an error naming its path.
func (r *Runner) Backend(ctx context.Context, conn string) (Backend, error) {
	url, err := r.Resolve(conn)
	if err != nil {
		return nil, err
	}
	return r.open(ctx, url, sourceMode(ctx))
}

// sourceMode is how a missing source database is opened under ctx.
func sourceMode(ctx context.Context) openMode {
	if createPolicy(ctx) >= CreateAll {
		return openCreate
	}
	return openMustExist
}

// JobBackend is Backend for a connection written in a job file: a relative
// SQLite path in it is relative to the job file's directory, so a job runs
// the same from any working directory. conn "" is the default connection
// (relative to the working directory, as Backend).
// A missing SQLite database is created only under WithCreate(ctx,
// CreateAll); otherwise it is an error naming its path (see
// sinkBackend for a job's sink).
func (r *Runner) JobBackend(ctx context.Context, job *plan.Job, conn string) (Backend, error) {
	return r.jobBackend(ctx, job, conn, sourceMode(ctx))
}

// sinkBackend is JobBackend for a job's sink: a missing SQLite database
// is created (the default policy, CreateSinks, and CreateAll), or under
// CreateNone stood in for by an empty in-memory one (plan shows what the
// run would do to a new database).
func (r *Runner) sinkBackend(ctx context.Context, job *plan.Job, conn string) (Backend, error) {
	m := openCreate
	if createPolicy(ctx) == CreateNone {
		m = openStandIn
	}
	return r.jobBackend(ctx, job, conn, m)
}

func (r *Runner) jobBackend(ctx context.Context, job *plan.Job, conn string, m openMode) (Backend, error) {
	url, err := r.Resolve(conn)
	if err != nil {
		return nil, err
	}
	if conn != "" && job.File != "" {
		url = relativeSQLite(url, filepath.Dir(job.File))
	}
	return r.open(ctx, url, m)
}

// relativeSQLite joins a relative sqlite:PATH (or sqlite://PATH) to dir.
func relativeSQLite(url, dir string) string {
	for _, prefix := range []string{"sqlite://", "sqlite:"} {
		if !strings.HasPrefix(url, prefix) {
			continue
		}
		path := strings.TrimPrefix(url, prefix)
		if path == "" || filepath.IsAbs(path) || strings.HasPrefix(path, ":memory:") || strings.HasPrefix(path, "file:") {
			return url
		}
		return prefix + filepath.Join(dir, path)
	}
	return url
}

// open returns the cached backend of a resolved URL, opening it on first
// use.
func (r *Runner) open(ctx context.Context, url string, m openMode) (Backend, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.backends[url]; ok {
		return b, nil
	}
	ctx = withMaxConns(withOpenMode(ctx, m), r.MaxConns)
	b, err := Open(ctx, url, r.log())
	if err != nil {
		return nil, err
	}
	if o, ok := b.(interface{ SetOutput(io.Writer) }); ok {
		o.SetOutput(r.stdout())
	}
	if r.backends == nil {
		r.backends = map[string]Backend{}
	}
	r.backends[url] = b
	return b, nil
}

// Close closes every backend the Runner opened.
func (r *Runner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for k, b := range r.backends {
		errs = append(errs, b.Close())
		delete(r.backends, k)
	}
	return errors.Join(errs...)
}

// Resolve returns the connection URL a job with connection conn uses:
// conn, else the Runner's Conn, else $SLUICE_CONN, else DefaultConn, with
// ${ENV} expanded. The error names the missing variable, never its value.
func (r *Runner) Resolve(conn string) (string, error) {
	if conn == "" {
		conn = r.Conn
	}
	lookup := r.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if conn == "" {
		if v, ok := lookup("SLUICE_CONN"); ok && v != "" {
			conn = v
		}
	}
	if conn == "" {
		conn = DefaultConn
	}
	out, err := expandEnv(conn, lookup)
	if err != nil {
		return "", fmt.Errorf("connection %q: %w", redact.Conn(conn), redact.Error(err, conn))
	}
	return out, nil
}

// RunJob runs a parsed job once: its setup statements, then Plan, then Run.
func (r *Runner) RunJob(ctx context.Context, job *plan.Job) (*Result, error) {
	if err := r.Setup(ctx, job); err != nil {
		return nil, err
	}
	p, err := r.Plan(ctx, job)
	if err != nil {
		return nil, err
	}
	return r.Run(ctx, p)
}

// TrimLogs bounds the change logs of the jobs' sources: it calls
// LogKeeper.TrimLogs once on every distinct source backend of jobs that
// keeps a change log, and returns their logs' sizes. Backends it cannot
// open or trim are reported in the joined error; the others' sizes are
// still returned. sluice serve calls it on every lag poll.
func (r *Runner) TrimLogs(ctx context.Context, jobs []*plan.Job) ([]LogSize, error) {
	seen := map[Backend]bool{}
	var out []LogSize
	var errs []error
	for _, j := range jobs {
		b, err := r.JobBackend(ctx, j, j.Conn)
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", j.Name, err))
			continue
		}
		lk, ok := b.(LogKeeper)
		if !ok || seen[b] {
			continue
		}
		seen[b] = true
		sizes, err := lk.TrimLogs(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", j.Name, err))
		}
		out = append(out, sizes...)
	}
	return out, errors.Join(errs...)
}
