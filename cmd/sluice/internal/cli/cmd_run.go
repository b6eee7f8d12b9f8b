package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/redact"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/serve"
)

func init() { register(newRunCmd) }

func newRunCmd(e *env) *cobra.Command {
	var conn, state string
	var batch int
	var step time.Duration
	var accept, wait bool
	c := &cobra.Command{
		Use:   "run [flags] JOB|DIR…",
		Short: "run each job once; exit non-zero if any failed",
		Long: "Run each job once: read its stream's pending changes, write them to the sink, and move the\n" +
			"offset in the sink's transaction. A directory runs each of its job files in name order.\n" +
			"A job that is running elsewhere (another run, a backfill, serve) is not run: it fails at once\n" +
			"with 'job X is running (pid N on HOST since T)', or, with --wait, waits for it to finish.\n" +
			"Exit code 1 if a job failed (its offset did not move), 2 if a job file is invalid (every\n" +
			"error of the file printed at once, as sluice validate prints them).\n" +
			"A job whose checkpoint belongs to an earlier incarnation of its stream (dropped and created\n" +
			"again, replaced, restored) fails; --accept-new-stream starts it at the new stream's offset\n" +
			"instead, losing the changes in between, and records that in the run history (--state).\n" +
			"A run that read changes, or failed, is recorded in the run history (sluice status, sluice\n" +
			"history) when the --state database exists; a failed one with status 'error' and its error.",
		ValidArgsFunction: jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if accept {
				ctx = runner.WithAcceptNewStream(ctx)
			}
			return cmdRun(ctx, e, runFlags{conn: conn, state: state, batch: batch, step: step, wait: wait}, args)
		},
	}
	c.Flags().StringVar(&conn, "conn", "", "default connection `URL` for jobs that name none")
	c.Flags().IntVar(&batch, "batch", runner.DefaultBatchSize, "`N` changes per batch when rows travel through sluice")
	c.Flags().DurationVar(&step, "commit-step", runner.DefaultCommitStep, "a SQLite merge pushed down into its own database commits in steps holding the write lock about `DURATION` each (an application writing the file waits about that long at most); -1s: one transaction")
	c.Flags().BoolVar(&accept, "accept-new-stream", false, "start a job whose checkpoint names another incarnation of its stream at the stream's offset (changes in between are lost)")
	addLockFlags(c, &state, &wait)
	return c
}

// addLockFlags adds the job lock's flags (run, backfill).
func addLockFlags(c *cobra.Command, state *string, wait *bool) {
	c.Flags().StringVar(state, "state", "", "database `URL` of the job locks and the run history, as serve's (default: the default connection; for the locks, the job's own if that is a missing SQLite file)")
	c.Flags().BoolVar(wait, "wait", false, "wait for the job to finish where it runs, instead of failing")
}

// runFlags are the flags of `sluice run`.
type runFlags struct {
	conn, state string
	batch       int
	step        time.Duration
	wait        bool
}

func cmdRun(ctx context.Context, e *env, fl runFlags, paths []string) error {
	if len(paths) == 0 {
		return usageErr("name at least one job file or directory")
	}
	if fl.batch < 1 {
		return usageErr("--batch must be at least 1")
	}
	files, err := loadJobs(paths, e.maxJobSize)
	if err != nil {
		return err
	}
	r := newRunner(e, fl.conn)
	r.BatchSize = fl.batch
	r.CommitStep = fl.step
	defer r.Close()
	locks := newJobLocks(e, r, fl.state, fl.wait)
	defer locks.close()
	failed, invalid := 0, 0
	for _, f := range files {
		// As validate: every error of the file at once; a file whose
		// expressions or schedule do not parse is invalid (exit 2).
		if f.err = f.check(); f.err != nil {
			fmt.Fprintf(e.stderr, "%v\n", f.err)
			invalid++
			continue
		}
		unlock, err := locks.lock(ctx, f.job)
		if errors.Is(err, serve.ErrJobRunning) {
			fmt.Fprintf(e.stderr, "%v\n", err)
			failed++
			continue
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: FAILED (offset not moved): %v\n", f.job.Name, err)
			failed++
			continue
		}
		start := time.Now()
		res, err := runWarned(ctx, e.stderr, r, f.job)
		unlock()
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: FAILED (offset not moved): %v\n", f.job.Name, err)
			failed++
			if rerr := recordRun(ctx, e, r, fl.state, &runner.Result{Job: f.job.Name, Start: start.UTC(), End: time.Now().UTC()}, err); rerr != nil {
				fmt.Fprintf(e.stderr, "%s: warning: the run history did not record the failure: %v\n", f.job.Name, rerr)
			}
			continue
		}
		printResult(e.stdout, res)
		switch {
		case res.Note != "":
			if err := recordNote(ctx, e, r, fl.state, res); err != nil {
				fmt.Fprintf(e.stderr, "%s: committed, but the run history did not record it: %v\n", f.job.Name, err)
				failed++
			}
		case res.Skipped != "" || total(res.Stats.Read) > 0 || !res.From.Equal(res.To):
			if err := recordRun(ctx, e, r, fl.state, res, nil); err != nil {
				fmt.Fprintf(e.stderr, "%s: warning: committed, but the run history did not record it: %v\n", f.job.Name, err)
			}
		}
	}
	if failed+invalid > 0 {
		fmt.Fprintf(e.stderr, "%d of %s failed\n", failed+invalid, plural(int64(len(files)), "job"))
	}
	switch {
	case invalid > 0:
		return errInvalid
	case failed > 0:
		return errFailed
	}
	return nil
}

// runWarned runs job as Runner.RunJob does (Setup, Plan, Run), printing
// the plan's warnings ("JOB: warning: …", the ones `sluice plan` shows) to
// w before the run.
func runWarned(ctx context.Context, w io.Writer, r *runner.Runner, job *plan.Job) (*runner.Result, error) {
	if err := r.Setup(ctx, job); err != nil {
		return nil, err
	}
	p, err := r.Plan(ctx, job)
	if err != nil {
		return nil, err
	}
	for _, warn := range p.Plan.Warnings {
		fmt.Fprintf(w, "%s: warning: %s\n", job.Name, warn)
	}
	return r.Run(ctx, p)
}

var opOrder = []cdc.Op{cdc.OpInsert, cdc.OpUpdateBefore, cdc.OpUpdateAfter, cdc.OpDelete}

func counts(m map[cdc.Op]int64) string {
	var parts []string
	var total int64
	for _, op := range opOrder {
		if n := m[op]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", op, n))
			total += n
		}
	}
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

// printResult prints one line per run: rows by change type and offsets.
func printResult(w io.Writer, res *runner.Result) {
	if res.Skipped != "" && res.Stats.Read == nil {
		fmt.Fprintf(w, "%s: skipped: %s\n", res.Job, res.Skipped)
		return
	}
	dead := ""
	if res.Stats.DeadLettered > 0 {
		dead = fmt.Sprintf("; dead-lettered %d", res.Stats.DeadLettered)
	}
	fmt.Fprintf(w, "%s: read %s; wrote %s%s; offset %s -> %s\n", res.Job, counts(res.Stats.Read), counts(res.Stats.Written), dead,
		offsetText(res.From, time.Time{}), offsetText(res.To, res.End))
	if res.Skipped != "" {
		fmt.Fprintf(w, "%s: note: %s\n", res.Job, res.Skipped)
	}
	if res.Note != "" {
		fmt.Fprintf(w, "%s: note: %s\n", res.Job, res.Note)
	}
}

// total is the sum of counts.
func total(counts map[cdc.Op]int64) int64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}

// recordRun stores a run that read changes or moved its offset (or was
// skipped), or that failed with failure (non-nil: status
// serve.StatusError, its Error the failure's text, which sluice's errors
// already hold redacted), in the run history at state ("" → the default
// connection), as serve records its runs, so that status and history show
// it: only in a history database that exists — a SQLite file is not
// created for it — and is a SQLite or PostgreSQL one; otherwise it does
// nothing. A run that found nothing pending (nothing read, offset
// unchanged) is not recorded, as under serve.
func recordRun(ctx context.Context, e *env, r *runner.Runner, state string, res *runner.Result, failure error) error {
	url, err := r.Resolve(state)
	if err != nil {
		return err
	}
	switch runner.Scheme(url) {
	case "sqlite", "postgres", "postgresql":
	default:
		return nil
	}
	st, err := serve.OpenStore(ctx, url, serve.StoreOptions{Log: e.log, MustExist: true})
	if errors.Is(err, sqlitex.ErrNoDatabase) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("state database %s: %w", redact.Conn(url), redact.Error(err, url))
	}
	defer st.Close()
	run := &serve.Run{Job: res.Job, Start: res.Start, End: res.End, Status: serve.StatusCommitted,
		Read: res.Stats.Read, Written: res.Stats.Written, DeadLettered: res.Stats.DeadLettered, From: res.From, To: res.To, Skipped: res.Skipped, Note: res.Note}
	switch {
	case failure != nil:
		run.Status, run.Error = serve.StatusError, failure.Error()
	case res.Skipped != "":
		run.Status = serve.StatusSkipped
	}
	_, err = st.Record(ctx, run)
	return redact.Error(err, url)
}

// recordNote stores a committed run that carries a note (an accepted new
// stream) in the run history at state ("" → the default connection),
// creating the history if it does not exist.
func recordNote(ctx context.Context, e *env, r *runner.Runner, state string, res *runner.Result) error {
	url, err := r.Resolve(state)
	if err != nil {
		return err
	}
	st, err := serve.OpenStore(ctx, url, serve.StoreOptions{Log: e.log})
	if err != nil {
		return fmt.Errorf("state database %s: %w", redact.Conn(url), redact.Error(err, url))
	}
	defer st.Close()
	_, err = st.Record(ctx, &serve.Run{Job: res.Job, Start: res.Start, End: res.End, Status: serve.StatusCommitted,
		Read: res.Stats.Read, Written: res.Stats.Written, DeadLettered: res.Stats.DeadLettered, From: res.From, To: res.To, Note: res.Note})
	return redact.Error(err, url)
}
