package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicedata/sluice/internal/redact"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/serve"
)

// jobLocks takes the job locks of `sluice run` and `sluice backfill`: the
// same locks `sluice serve` takes before each run (serve.Lock on a
// serve.Store), so that none of them runs a job another is running.
type jobLocks struct {
	e      *env
	r      *runner.Runner
	state  string // --state, "" → lockURL's default
	wait   bool   // --wait
	stores map[string]serve.Store
}

func newJobLocks(e *env, r *runner.Runner, state string, wait bool) *jobLocks {
	return &jobLocks{e: e, r: r, state: state, wait: wait, stores: map[string]serve.Store{}}
}

// lockURL is the database holding job's lock: --state when given, else
// serve's default state database (the default connection) — unless that is
// a SQLite file that does not exist, where no serve keeps its locks (and
// which a run does not create): then the job's own database, so that two
// runs of a job still exclude each other. create is always false: a
// missing SQLite file is never created for a lock.
func (l *jobLocks) lockURL(job *plan.Job) (url string, create bool, err error) {
	def, err := l.r.Resolve(l.state)
	if err != nil {
		return "", false, err
	}
	if runner.Scheme(def) == "sqlite" {
		if loc, err := sqlitex.ParseURL(def); err == nil && errors.Is(loc.MustExist(), sqlitex.ErrNoDatabase) {
			url, err = l.r.Resolve(job.Conn)
			return url, false, err
		}
	}
	return def, false, nil
}

// lock takes job's lock: at once, or an error "job X is running (pid N on
// HOST since T)" (a *serve.RunningError); with --wait it says so on stderr
// once and waits until the holder finishes or ctx ends.
func (l *jobLocks) lock(ctx context.Context, job *plan.Job) (unlock func(), err error) {
	url, create, err := l.lockURL(job)
	if err != nil {
		return nil, err
	}
	if runner.Scheme(url) != "sqlite" && runner.Scheme(url) != "postgres" && runner.Scheme(url) != "postgresql" {
		// No lock store for this database (Tablestore): the job runs
		// without the lock, as before, unless --state names one.
		l.e.log.DebugContext(ctx, "no job lock: the database has no lock store", "job", job.Name, "conn", redact.Conn(url))
		return func() {}, nil
	}
	st := l.stores[url]
	if st == nil {
		st, err = serve.OpenStore(ctx, url, serve.StoreOptions{Log: l.e.log, MustExist: !create})
		if err != nil {
			return nil, fmt.Errorf("job lock in %s: %w", redact.Conn(url), redact.Error(err, url))
		}
		l.stores[url] = st
	}
	return serve.Lock(ctx, st, job.Name, l.wait, func(busy *serve.RunningError) {
		fmt.Fprintf(l.e.stderr, "%v; waiting for it to finish (Ctrl-C to stop)\n", busy)
	})
}

// close closes the lock databases (after every unlock).
func (l *jobLocks) close() {
	for _, st := range l.stores {
		_ = st.Close()
	}
}
