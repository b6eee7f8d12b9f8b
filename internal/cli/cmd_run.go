package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

func init() {
	register(verb{name: "run", usage: "[--conn URL] JOB|DIR…", short: "run each job once; exit non-zero if any failed", run: cmdRun})
}

func cmdRun(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "run")
	conn := fs.String("conn", "", "default connection for jobs that name none")
	batch := fs.Int("batch", runner.DefaultBatchSize, "changes per batch when rows travel through sluice")
	paths, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("%w: name at least one job file or directory", errUsage)
	}
	files, err := loadJobs(paths)
	if err != nil {
		return err
	}
	r := newRunner(e, *conn)
	r.BatchSize = *batch
	defer r.Close()
	failed := 0
	for _, f := range files {
		if f.err != nil {
			fmt.Fprintf(e.stderr, "%v\n", f.err)
			failed++
			continue
		}
		res, err := runWarned(ctx, e.stderr, r, f.job)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: FAILED (offset not moved): %v\n", f.job.Name, err)
			failed++
			continue
		}
		printResult(e.stdout, res)
	}
	if failed > 0 {
		fmt.Fprintf(e.stderr, "%d of %d jobs failed\n", failed, len(files))
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
	fmt.Fprintf(w, "%s: read %s; wrote %s; offset %s -> %s\n", res.Job, counts(res.Stats.Read), counts(res.Stats.Written), res.From, res.To)
	if res.Skipped != "" {
		fmt.Fprintf(w, "%s: note: %s\n", res.Job, res.Skipped)
	}
}
