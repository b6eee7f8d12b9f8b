package runner

import (
	"context"
	"sync"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// CatalogVersioner is a backend that can tell, in one cheap statement,
// whether what planning a job read from its catalogs may have changed
// (PlanCache).
type CatalogVersioner interface {
	Backend
	// CatalogVersion returns a text that changes whenever anything planning
	// reads about stream (its record and its table, change log and
	// tracking; "" for none) or about the tables (as a sink names them:
	// the target, a dead-letter table) may have changed: DDL on any of
	// them, a table created or dropped under one of the names, the stream
	// dropped or created again. It may also change when nothing relevant
	// did (the plan is then made again, which is harmless). Errors are
	// the database's (connection, permission), wrapped.
	CatalogVersion(ctx context.Context, stream string, tables []string) (string, error)
}

// PlanCache keeps each job's prepared plan between its runs in one
// process (sluice serve), so that a run of an unchanged job costs one
// catalog-version statement per database instead of the dozen or more
// catalog statements of Runner.Plan (issue #19). A plan is reused only
// while
//
//   - the job is the same definition (the same *plan.Job: a reload plans
//     again),
//   - the CatalogVersion of its source database (the stream) and of its
//     sink database (the target and dead-letter tables), read before
//     every run, is the one read before the plan was made, and
//   - the last run with it succeeded without planning again.
//
// Jobs whose source or sink backend is not a CatalogVersioner
// (Tablestore, stdout) are planned for every run, as Runner.RunJob does.
// Every run still checks the stream and its table against the plan at
// its read (Runner.Run: ErrPlanStale plans again), as an uncached run
// does. Setup statements are not run (serve runs them at load).
//
// It is safe for concurrent use by runs of different jobs; runs of one
// job must not overlap (serve never overlaps them).
type PlanCache struct {
	r *Runner

	mu    sync.Mutex
	plans map[string]*cachedPlan // by job name
}

// cachedPlan is one job's plan and the catalog versions read before it
// was made.
type cachedPlan struct {
	job     *plan.Job
	version string
	prep    *Prepared
}

// NewPlanCache returns an empty cache whose runs use r.
func NewPlanCache(r *Runner) *PlanCache {
	return &PlanCache{r: r, plans: map[string]*cachedPlan{}}
}

// Run runs job once, as Runner.Plan followed by Runner.Run, reusing the
// job's plan from an earlier Run when nothing it was made from changed.
// It returns what Runner.Run returns; a failed catalog-version statement
// (a lost connection) is returned at the job's source position, as
// Runner.Plan's errors are: the run did not start.
func (c *PlanCache) Run(ctx context.Context, job *plan.Job) (*Result, error) {
	version, cacheable, err := c.version(ctx, job)
	if err != nil {
		c.forget(job.Name)
		return nil, pos.Errorf(job.Source.Pos, "%w", err)
	}
	prep := c.lookup(job, version, cacheable)
	if prep == nil {
		if prep, err = c.r.Plan(ctx, job); err != nil {
			c.forget(job.Name)
			return nil, err
		}
	}
	replanned := false
	res, err := c.r.run(ctx, prep, &replanned)
	if err != nil || replanned || !cacheable {
		c.forget(job.Name)
		return res, err
	}
	c.mu.Lock()
	c.plans[job.Name] = &cachedPlan{job: job, version: version, prep: prep}
	c.mu.Unlock()
	return res, nil
}

// lookup returns the cached plan of job when it was made for this
// definition under version, else nil.
func (c *PlanCache) lookup(job *plan.Job, version string, cacheable bool) *Prepared {
	if !cacheable {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := c.plans[job.Name]
	if cp == nil || cp.job != job || cp.version != version {
		return nil
	}
	return cp.prep
}

// Cached returns the plan the next Run of the job named name would reuse
// if the catalogs did not change (nil: none), for tests and tools.
func (c *PlanCache) Cached(name string) *Prepared {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp := c.plans[name]; cp != nil {
		return cp.prep
	}
	return nil
}

// forget drops the plan of the job named name.
func (c *PlanCache) forget(name string) {
	c.mu.Lock()
	delete(c.plans, name)
	c.mu.Unlock()
}

// Forget drops every cached plan of jobs not in keep (by name), e.g.
// after a reload removed jobs.
func (c *PlanCache) Forget(keep map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.plans {
		if !keep[name] {
			delete(c.plans, name)
		}
	}
}

// version reads the catalog versions job's plan depends on: its source
// database's (the stream) and, when the sink is another database, its
// sink database's (the target and dead-letter tables). cacheable is
// false when a backend cannot tell (the job is then planned every run).
func (c *PlanCache) version(ctx context.Context, job *plan.Job) (version string, cacheable bool, err error) {
	if job.Sink.Stdout || job.Sink.Table == "" {
		return "", false, nil
	}
	srcB, err := c.r.JobBackend(ctx, job, job.Conn)
	if err != nil {
		return "", false, err
	}
	conn := job.Sink.Conn
	if conn == "" {
		conn = job.Conn
	}
	sinkB, err := c.r.sinkBackend(ctx, job, conn)
	if err != nil {
		return "", false, err
	}
	src, ok1 := srcB.(CatalogVersioner)
	sink, ok2 := sinkB.(CatalogVersioner)
	if !ok1 || !ok2 {
		return "", false, nil
	}
	tables := []string{job.Sink.Table}
	if job.Sink.DeadLetter != "" {
		tables = append(tables, job.Sink.DeadLetter)
	}
	if src.Identity() == sink.Identity() && src.Scheme() == sink.Scheme() {
		v, err := src.CatalogVersion(ctx, job.Source.Stream, tables)
		return v, err == nil, err
	}
	sv, err := src.CatalogVersion(ctx, job.Source.Stream, nil)
	if err != nil {
		return "", false, err
	}
	tv, err := sink.CatalogVersion(ctx, "", tables)
	if err != nil {
		return "", false, err
	}
	return sv + "\n" + tv, true, nil
}
