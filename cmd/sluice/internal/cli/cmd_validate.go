package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
	"github.com/sluicedata/sluice/schedule"
)

func init() { register(newValidateCmd) }

func newValidateCmd(e *env) *cobra.Command {
	var explain bool
	c := &cobra.Command{
		Use:   "validate [flags] PATH…",
		Short: "parse and check job files without touching a database",
		Long: "Parse and check job files and directories without touching a database: syntax, keys,\n" +
			"expressions, schedules and unique job names. Every error of a file is reported at once, as\n" +
			"file:line:col. Exit code 2 if a file is invalid.",
		ValidArgsFunction: jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdValidate(e, explain, args)
		},
	}
	c.Flags().BoolVar(&explain, "explain", false, "print each job's schedule and its next three fire times")
	return c
}

func cmdValidate(e *env, explain bool, paths []string) error {
	if len(paths) == 0 {
		return usageErr("name job files or directories")
	}
	files, err := loadJobs(paths, e.maxJobSize)
	if err != nil {
		return err
	}
	bad := 0
	seen := map[string]string{} // job name → file
	for _, f := range files {
		if f.err == nil {
			if first, dup := seen[f.job.Name]; dup {
				f.err = pos.Errorf(f.job.Pos, "job name %q is also used by %s: job names must be unique (runs, locks and checkpoints are per name)", f.job.Name, first)
			} else {
				seen[f.job.Name] = f.path
			}
		}
		if err := f.check(); err != nil {
			fmt.Fprintln(e.stderr, err)
			bad++
			continue
		}
		fmt.Fprintf(e.stdout, "%s: ok (job %s)\n", f.path, f.job.Name)
		if explain {
			explainSchedule(e, f.job)
		}
	}
	if bad > 0 {
		fmt.Fprintf(e.stderr, "%d of %s invalid\n", bad, plural(int64(len(files)), "file"))
		return errInvalid
	}
	return nil
}

// checkJob checks what needs no database: expression syntax and the
// schedule. All errors of the job are returned together.
func checkJob(j *plan.Job) error {
	var errs pos.List
	errs.Append(j.Pos, checkExprs(j))
	if _, err := schedule.Parse(j.Schedule, j.ScheduleTZ); err != nil {
		errs.Append(j.SchedulePos, pos.Errorf(j.SchedulePos, "schedule: %w", err))
	}
	return errs.Err()
}

// explainSchedule prints the job's schedule and next three fire times.
func explainSchedule(e *env, j *plan.Job) {
	s, err := schedule.Parse(j.Schedule, j.ScheduleTZ)
	if err != nil {
		return
	}
	fmt.Fprintf(e.stdout, "  schedule: %s\n", s)
	for _, t := range s.NextN(time.Now(), 3) {
		if loc := s.Location(); loc != nil {
			t = t.In(loc)
		}
		fmt.Fprintf(e.stdout, "  next: %s\n", t.Format("2006-01-02 15:04:05 MST (-07:00)"))
	}
}

// checkExprs parses every expression of a job (no binding: that needs the
// source's schema) and returns all syntax errors at once.
func checkExprs(j *plan.Job) error {
	var errs pos.List
	if j.Filter != nil {
		if _, err := expr.Parse(j.Filter.Text, j.Filter.Pos); err != nil {
			errs.Append(j.Filter.Pos, err)
		}
	}
	for _, it := range j.Select {
		if _, _, err := expr.ParseSelectItem(it.Expr.Text, it.Expr.Pos); err != nil {
			errs.Append(it.Expr.Pos, err)
		}
	}
	if m := j.Sink.Merge; m != nil {
		for _, c := range m.Clauses {
			var texts []plan.Expr
			if c.Cond != nil {
				texts = append(texts, *c.Cond)
			}
			for _, a := range c.Set {
				texts = append(texts, a.Value)
			}
			texts = append(texts, c.InsertValues...)
			for _, x := range texts {
				if _, err := expr.Parse(x.Text, x.Pos); err != nil {
					errs.Append(x.Pos, err)
				}
			}
		}
	}
	return errs.Err()
}
