package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

func init() { register(newPlanCmd) }

func newPlanCmd(e *env) *cobra.Command {
	var conn, format string
	c := &cobra.Command{
		Use:   "plan [flags] JOB…",
		Short: "print the stages, connections, SQL and warnings of a job, without running it",
		Long: "Print each job's plan: its source → filter → project → sink stages, connections (passwords\n" +
			"masked), the SQL a pushed-down run executes, and warnings. `sluice run` executes exactly\n" +
			"this plan. Reads the source's schema; moves no offset.",
		ValidArgsFunction: jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// plan writes nothing: a missing sink database is not created.
			return cmdPlan(runner.WithCreate(cmd.Context(), runner.CreateNone), e, conn, format, args)
		},
	}
	c.Flags().StringVar(&conn, "conn", "", "default connection `URL` for jobs that name none")
	c.Flags().StringVar(&format, "format", "text", "output `FORMAT`: text or json (an array of plans)")
	return c
}

func cmdPlan(ctx context.Context, e *env, conn, format string, paths []string) error {
	if len(paths) == 0 {
		return usageErr("name a job file")
	}
	if err := checkFormat(format, "text", "json"); err != nil {
		return err
	}
	plans := []planJSON{}
	files, err := loadJobs(paths, e.maxJobSize)
	if err != nil {
		return err
	}
	r := newRunner(e, conn)
	defer r.Close()
	failed, invalid := false, false
	for i, f := range files {
		if i > 0 && format == "text" {
			fmt.Fprintln(e.stdout)
		}
		// As validate: every error of the file at once; a file whose
		// expressions or schedule do not parse is invalid (exit 2).
		if f.err = f.check(); f.err != nil {
			fmt.Fprintln(e.stderr, f.err)
			invalid = true
			continue
		}
		prep, err := r.Plan(ctx, f.job)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", f.job.Name, err)
			failed = true
			continue
		}
		if format == "json" {
			plans = append(plans, newPlanJSON(prep.Plan))
			continue
		}
		if err := plan.Format(e.stdout, prep.Plan); err != nil {
			return err
		}
	}
	if format == "json" {
		if err := writeJSON(e.stdout, plans); err != nil {
			return err
		}
	}
	switch {
	case invalid:
		return errInvalid
	case failed:
		return errFailed
	}
	return nil
}
