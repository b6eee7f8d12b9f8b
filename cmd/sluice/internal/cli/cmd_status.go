package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/serve"
	"github.com/sluicedata/sluice/sinks/stdout"
)

func init() { register(newStatusCmd) }

func newStatusCmd(e *env) *cobra.Command {
	var conn, state, format string
	c := &cobra.Command{
		Use:   "status [flags] DIR|FILE…",
		Short: "list jobs with schedule, last run, next fire, pending changes and health",
		Long: "List each job with its schedule, last run (from the state database sluice serve writes),\n" +
			"next fire time, pending changes (read, not consumed) and health.\n\n" +
			"Exit status: 0 when every job is healthy (ok, never run, retrying, or unknown without a\n" +
			"history); 1 when a job is stopped, failing or has an invalid schedule, or a job file\n" +
			"does not load (the table is printed first), so a monitoring check can run it as it is.",
		ValidArgsFunction: jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdStatus(cmd.Context(), e, conn, state, format, args)
		},
	}
	c.Flags().StringVar(&conn, "conn", "", "default connection `URL` for jobs that name none")
	c.Flags().StringVar(&state, "state", "", "database `URL` holding the history (default: the default connection)")
	c.Flags().StringVar(&format, "format", "table", "output `FORMAT`: table or json (as /healthz lists jobs)")
	return c
}

func cmdStatus(ctx context.Context, e *env, conn, state, format string, paths []string) error {
	if len(paths) == 0 {
		return usageErr("name a directory or job files")
	}
	if err := checkFormat(format, "table", "json"); err != nil {
		return err
	}
	files, err := loadJobs(paths, e.maxJobSize)
	if err != nil {
		return err
	}
	r := newRunner(e, conn)
	defer r.Close()
	var hist serve.History
	st, err := openStore(ctx, e, r, state)
	switch {
	case errors.Is(err, sqlitex.ErrNoDatabase) && state == "":
		// No history database (the default one is a SQLite file that
		// nothing created): show the rest, and say why no run is known.
		// A --state that names a missing file is an error (a typo).
		fmt.Fprintf(e.stderr, "sluice status: no run history: %v\n", err)
	case err != nil:
		return err
	default:
		defer st.Close()
		hist = st
	}
	var jobs []*plan.Job
	bad := 0 // job files that do not load
	for _, f := range files {
		if f.err != nil {
			fmt.Fprintln(e.stderr, f.err)
			bad++
			continue
		}
		jobs = append(jobs, f.job)
	}
	sts, err := serve.StatusOf(ctx, jobs, hist, lagFunc(r), time.Now())
	if err != nil {
		return err
	}
	if format == "json" {
		if err := writeJSON(e.stdout, struct {
			Jobs []serve.JobStatus `json:"jobs"`
		}{sts}); err != nil {
			return err
		}
		return unhealthy(e, sts, bad)
	}
	cols := []cdc.Column{{Name: "job", Type: cdc.TypeString}, {Name: "schedule", Type: cdc.TypeString}, {Name: "last run", Type: cdc.TypeString},
		{Name: "next fire", Type: cdc.TypeString}, {Name: "pending", Type: cdc.TypeString}, {Name: "health", Type: cdc.TypeString}}
	rows := make([][]any, 0, len(sts))
	for _, s := range sts {
		last, next, pending := "never", "-", "?"
		if s.Health == serve.HealthUnknown {
			last = "?"
		}
		if s.LastRun != nil {
			last = fmt.Sprintf("%s %s", s.LastRun.Start.Format(time.DateTime), s.LastRun.Status)
		}
		if s.Next != nil {
			next = s.Next.Format("2006-01-02 15:04:05 MST")
		}
		if s.Lag != nil {
			pending = fmt.Sprint(s.Lag.Changes)
			if s.Lag.Age > 0 {
				pending += " (oldest " + s.Lag.Age.Round(time.Second).String() + ")"
			}
		} else if s.LagError != "" {
			pending = "error: " + s.LagError
		}
		health := s.Health
		if s.NextTry != nil {
			health += " (next try " + s.NextTry.Local().Format("2006-01-02 15:04:05 MST") + ")"
		}
		if s.LastError != "" {
			health += ": " + s.LastError
		}
		rows = append(rows, []any{s.Job, s.Schedule, last, next, pending, health})
	}
	if err := stdout.Table(e.stdout, cols, rows); err != nil {
		return err
	}
	return unhealthy(e, sts, bad)
}

// unhealthy returns errFailed (exit code 1), after a line on stderr
// counting them, when a job of sts is not healthy (stopped, failing, an
// invalid schedule, or retrying past serve's limit) or bad job files did
// not load; nil otherwise.
func unhealthy(e *env, sts []serve.JobStatus, bad int) error {
	n := 0
	for _, s := range sts {
		if !s.Healthy {
			n++
		}
	}
	if n == 0 && bad == 0 {
		return nil
	}
	switch {
	case bad == 0:
		fmt.Fprintf(e.stderr, "sluice status: %d of %d jobs unhealthy\n", n, len(sts))
	case n == 0:
		fmt.Fprintf(e.stderr, "sluice status: %d job files do not load\n", bad)
	default:
		fmt.Fprintf(e.stderr, "sluice status: %d of %d jobs unhealthy; %d job files do not load\n", n, len(sts), bad)
	}
	return errFailed
}
