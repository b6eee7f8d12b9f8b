package cli

import (
	"context"
	"fmt"

	"github.com/sluicedata/sluice/plan"
)

func init() {
	register(verb{name: "plan", usage: "[--conn URL] JOB…", short: "print the stages, connections, SQL and warnings of a job, without running it", run: cmdPlan})
}

func cmdPlan(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "plan")
	conn := fs.String("conn", "", "default connection for jobs that name none")
	paths, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("%w: name a job file", errUsage)
	}
	files, err := loadJobs(paths)
	if err != nil {
		return err
	}
	r := newRunner(e, *conn)
	defer r.Close()
	failed := false
	for i, f := range files {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		if f.err != nil {
			fmt.Fprintln(e.stderr, f.err)
			failed = true
			continue
		}
		prep, err := r.Plan(ctx, f.job)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", f.job.Name, err)
			failed = true
			continue
		}
		if err := plan.Format(e.stdout, prep.Plan); err != nil {
			return err
		}
	}
	if failed {
		return errFailed
	}
	return nil
}
