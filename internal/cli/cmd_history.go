package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/jobschema"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/serve"
	"github.com/sluicedata/sluice/sinks/stdout"
)

func init() {
	register(verb{name: "history", usage: "[--state URL] [--limit N] [JOB]", short: "print the run history that sluice serve records", run: cmdHistory})
	register(verb{name: "status", usage: "[--conn URL] [--state URL] DIR|FILE…", short: "list jobs with schedule, last run, next fire, pending changes and health", run: cmdStatus})
	register(verb{name: "schema", usage: "", short: "print the JSON Schema of job YAML files (for editors)", run: cmdSchema})
}

func openStore(ctx context.Context, e *env, r *runner.Runner, state string) (serve.Store, error) {
	url, err := r.Resolve(state)
	if err != nil {
		return nil, err
	}
	st, err := serve.OpenStore(ctx, url, serve.StoreOptions{Log: e.log})
	if err != nil {
		return nil, fmt.Errorf("state database %s: %w", runner.Redact(url), err)
	}
	return st, nil
}

func cmdHistory(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "history")
	state := fs.String("state", "", "database holding the history (default: the default connection)")
	limit := fs.Int("limit", 20, "newest N runs")
	rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 1 {
		return fmt.Errorf("%w: at most one job name", errUsage)
	}
	job := ""
	if len(rest) == 1 {
		job = rest[0]
	}
	r := newRunner(e, "")
	defer r.Close()
	st, err := openStore(ctx, e, r, *state)
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := st.List(ctx, job, *limit)
	if err != nil {
		return err
	}
	cols := []cdc.Column{{Name: "job", Type: cdc.TypeString}, {Name: "start", Type: cdc.TypeTimestamp}, {Name: "seconds", Type: cdc.TypeString},
		{Name: "status", Type: cdc.TypeString}, {Name: "read", Type: cdc.TypeString}, {Name: "written", Type: cdc.TypeString},
		{Name: "offset", Type: cdc.TypeString}, {Name: "error", Type: cdc.TypeString}}
	rows := make([][]any, 0, len(runs))
	for _, run := range runs {
		note := run.Error
		if note == "" {
			note = run.Skipped
		}
		rows = append(rows, []any{run.Job, run.Start, fmt.Sprintf("%.3f", run.Duration().Seconds()), string(run.Status),
			counts(run.Read), counts(run.Written), run.From.String() + " -> " + run.To.String(), note})
	}
	return stdout.Table(e.stdout, cols, rows)
}

func cmdStatus(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "status")
	conn := fs.String("conn", "", "default connection for jobs that name none")
	state := fs.String("state", "", "database holding the history (default: the default connection)")
	paths, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("%w: name a directory or job files", errUsage)
	}
	files, err := loadJobs(paths)
	if err != nil {
		return err
	}
	r := newRunner(e, *conn)
	defer r.Close()
	st, err := openStore(ctx, e, r, *state)
	if err != nil {
		return err
	}
	defer st.Close()
	var jobs []*plan.Job
	for _, f := range files {
		if f.err != nil {
			fmt.Fprintln(e.stderr, f.err)
			continue
		}
		jobs = append(jobs, f.job)
	}
	sts, err := serve.StatusOf(ctx, jobs, st, lagFunc(r), time.Now())
	if err != nil {
		return err
	}
	cols := []cdc.Column{{Name: "job", Type: cdc.TypeString}, {Name: "schedule", Type: cdc.TypeString}, {Name: "last run", Type: cdc.TypeString},
		{Name: "next fire", Type: cdc.TypeString}, {Name: "pending", Type: cdc.TypeString}, {Name: "health", Type: cdc.TypeString}}
	rows := make([][]any, 0, len(sts))
	for _, s := range sts {
		last, next, pending := "never", "-", "?"
		if s.LastRun != nil {
			last = fmt.Sprintf("%s %s", s.LastRun.Start.Format(time.DateTime), s.LastRun.Status)
		}
		if s.Next != nil {
			next = s.Next.Format("2006-01-02 15:04:05 MST")
		}
		if s.Lag != nil {
			pending = fmt.Sprint(s.Lag.Changes)
		} else if s.LagError != "" {
			pending = "error: " + s.LagError
		}
		health := s.Health
		if s.LastError != "" {
			health += ": " + s.LastError
		}
		rows = append(rows, []any{s.Job, s.Schedule, last, next, pending, health})
	}
	return stdout.Table(e.stdout, cols, rows)
}

func cmdSchema(_ context.Context, e *env, args []string) error {
	fs := flags(e, "schema")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	_, err := e.stdout.Write(jobschema.JSON())
	return err
}
