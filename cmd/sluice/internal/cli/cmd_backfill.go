package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

func init() { register(newBackfillCmd) }

// progressEvery is how often a backfill logs its progress when stderr is
// not a terminal.
const progressEvery = 10 * time.Second

// backfillFlags are the flags of `sluice backfill`.
type backfillFlags struct {
	conn    string
	state   string
	wait    bool
	chunk   int
	dry     bool
	restart bool
}

func newBackfillCmd(e *env) *cobra.Command {
	var f backfillFlags
	c := &cobra.Command{
		Use:   "backfill [flags] JOB",
		Short: "copy the source table to a new target, then hand off to the stream",
		Long: "Copy the source table's current rows to the job's target as INSERTs, in chunks of --chunk rows\n" +
			"(one sink transaction each, bounded memory), then hand off to the stream without a gap or a\n" +
			"duplicate. An interrupted backfill resumes where it stopped when run again. It takes the job's\n" +
			"lock as run and serve do: a job running elsewhere fails at once ('job X is running …'), or\n" +
			"with --wait waits for it.",
		ValidArgsFunction: jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdBackfill(cmd.Context(), e, f, args)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.conn, "conn", "", "default connection `URL` for jobs that name none")
	fl.IntVar(&f.chunk, "chunk", runner.DefaultBackfillChunk, "`N` rows per chunk (one sink transaction each)")
	fl.BoolVar(&f.dry, "dry-run", false, "show the row count and the plan; copy nothing")
	fl.BoolVar(&f.restart, "restart", false, "discard an incomplete backfill and start over (deletes the partial copy when the backfill created the target)")
	addLockFlags(c, &f.state, &f.wait)
	return c
}

// cmdBackfill runs Runner.Backfill (or PlanBackfill with --dry-run) for
// one job and prints a summary line: rows copied, chunks, seconds, rows/s
// and the hand-off offset.
func cmdBackfill(ctx context.Context, e *env, f backfillFlags, paths []string) error {
	if len(paths) != 1 {
		return usageErr("name exactly one job file")
	}
	if f.chunk <= 0 {
		return usageErr("--chunk must be at least 1")
	}
	files, err := loadJobs(paths, e.maxJobSize)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return usageErr("name exactly one job file, not a directory of %d", len(files))
	}
	if files[0].err != nil {
		return configError{files[0].check()} // every error of the file, as validate
	}
	job := files[0].job
	r := newRunner(e, f.conn)
	defer r.Close()
	opt := runner.BackfillOptions{Chunk: f.chunk, Restart: f.restart}
	if f.dry {
		prep, err := r.Plan(ctx, job)
		if err != nil {
			return err
		}
		bp, err := r.PlanBackfill(ctx, prep, opt)
		if err != nil {
			return err
		}
		return printBackfillPlan(e.stdout, bp)
	}
	locks := newJobLocks(e, r, f.state, f.wait)
	defer locks.close()
	unlock, err := locks.lock(ctx, job)
	if err != nil {
		return err
	}
	defer unlock()
	if err := r.Setup(ctx, job); err != nil {
		return err
	}
	prep, err := r.Plan(ctx, job)
	if err != nil {
		return err
	}
	pr := newProgress(ctx, e, job.Name)
	opt.Progress = pr.update
	res, err := r.Backfill(ctx, prep, opt)
	pr.finish(err == nil)
	if err != nil && ctx.Err() != nil {
		// Cancelled (Ctrl-C, SIGTERM): the committed chunks stay, and the
		// error (context canceled, naming a row) is not a data error.
		return fmt.Errorf("interrupted after %d rows were committed; resume with sluice backfill %s", pr.rows, paths[0])
	}
	if err != nil {
		return err
	}
	printBackfillResult(e.stdout, res)
	if res.Skipped == "" {
		// In the run history, as sluice run's runs: status then shows it
		// as the job's last run, not "never run".
		done := &runner.Result{Job: res.Job, Start: res.Start, End: res.End, To: res.HandOff,
			Stats: runner.Stats{Written: res.Written},
			Note:  fmt.Sprintf("backfill: %s copied in %s, hand-off at offset %s", plural(res.Rows, "row"), plural(int64(res.Chunks), "chunk"), offsetText(res.HandOff, time.Time{})),
		}
		if err := recordRun(ctx, e, r, f.state, done, nil); err != nil {
			fmt.Fprintf(e.stderr, "%s: warning: backfilled, but the run history did not record it: %v\n", res.Job, err)
		}
	}
	return nil
}

func printBackfillPlan(w io.Writer, bp *runner.BackfillPlan) error {
	if err := plan.Format(w, bp.Plan); err != nil {
		return err
	}
	chunks := (bp.Rows + int64(bp.Chunk) - 1) / int64(bp.Chunk)
	fmt.Fprintf(w, "backfill: %d rows in the snapshot, in chunks of %d (about %s); hand-off at offset %s\n", bp.Rows, bp.Chunk, plural(max(chunks, 1), "chunk"), offsetText(bp.Offset, time.Time{}))
	if bp.Resume {
		fmt.Fprintf(w, "backfill: resumes an incomplete backfill: %d rows copied, last key %v\n", bp.Copied, bp.LastKey)
	}
	if bp.Skipped != "" {
		fmt.Fprintf(w, "backfill: would do nothing: %s\n", bp.Skipped)
	}
	return nil
}

func printBackfillResult(w io.Writer, res *runner.BackfillResult) {
	if res.Skipped != "" {
		fmt.Fprintf(w, "%s: skipped: %s\n", res.Job, res.Skipped)
		return
	}
	secs := res.End.Sub(res.Start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(res.Rows) / secs
	}
	how := ""
	switch {
	case res.Resumed:
		how = fmt.Sprintf(" (resumed: %d rows in all; caught up %d changes)", res.TotalRows, res.CaughtUp)
	case res.Restarted:
		how = " (restarted)"
	}
	fmt.Fprintf(w, "%s: backfilled %d rows in %s in %.2fs (%.0f rows/s); wrote %s; hand-off offset %s%s\n",
		res.Job, res.Rows, plural(int64(res.Chunks), "chunk"), secs, rate, counts(res.Written), offsetText(res.HandOff, res.End), how)
}

// progress shows a backfill's progress: a bar when stderr is a terminal,
// else an slog line every progressEvery.
type progress struct {
	ctx  context.Context
	job  string
	bar  *progressbar.ProgressBar
	tty  bool
	w    io.Writer
	log  *slog.Logger
	last time.Time
	t0   time.Time
	rows int64 // rows committed so far
}

func newProgress(ctx context.Context, e *env, job string) *progress {
	p := &progress{ctx: ctx, job: job, w: e.stderr, log: e.log, t0: time.Now()}
	w := e.stderr
	if d, ok := w.(dedupLines); ok {
		w = d.w
	}
	if f, ok := w.(*os.File); ok {
		p.tty = isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
	}
	if !p.log.Enabled(ctx, slog.LevelInfo) {
		// Progress lines are the point of this verb: show them at the
		// default level too.
		p.log = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return p
}

func (p *progress) update(_ context.Context, bp runner.BackfillProgress) {
	p.rows = bp.Rows
	if p.tty {
		if p.bar == nil {
			p.bar = progressbar.NewOptions64(bp.Total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(p.job),
				progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("rows"),
				progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSetPredictTime(true), progressbar.OptionFullWidth())
		}
		if bp.Rows > p.bar.GetMax64() {
			p.bar.ChangeMax64(bp.Rows)
		}
		_ = p.bar.Set64(bp.Rows)
		return
	}
	if bp.Phase == "copy" && time.Since(p.last) < progressEvery {
		return
	}
	p.last = time.Now()
	pct := 100.0
	if bp.Total > 0 {
		pct = min(100, 100*float64(bp.Rows)/float64(bp.Total))
	}
	p.log.InfoContext(p.ctx, "backfill", "job", p.job, "phase", bp.Phase, "rows", bp.Rows, "total", bp.Total,
		"percent", fmt.Sprintf("%.1f", pct), "chunks", bp.Chunks, "elapsed", time.Since(p.t0).Round(time.Second).String())
}

func (p *progress) finish(ok bool) {
	if p.bar == nil {
		return
	}
	if ok {
		_ = p.bar.Finish()
	}
	fmt.Fprintln(p.w)
}
