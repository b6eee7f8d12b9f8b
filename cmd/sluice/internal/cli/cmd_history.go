package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicedata/sluice/internal/redact"
	"github.com/sluicedata/sluice/internal/sqlitex"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/serve"
	"github.com/sluicedata/sluice/sinks/stdout"
)

func init() { register(newHistoryCmd) }

func newHistoryCmd(e *env) *cobra.Command {
	var state, format string
	var limit int
	c := &cobra.Command{
		Use:   "history [flags] [JOB]",
		Short: "print the run history that sluice serve and sluice run record",
		Long: "Print the newest runs that sluice serve and sluice run recorded in their state database, newest first: job,\n" +
			"start, duration, status, changes read and written by change type, offsets, and the error.\n" +
			"Runs that found nothing pending are not recorded; the header gives each job's last such check.",
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdHistory(cmd.Context(), e, state, format, limit, args)
		},
	}
	c.Flags().StringVar(&state, "state", "", "database `URL` holding the history (default: the default connection)")
	c.Flags().IntVar(&limit, "limit", 20, "show the newest `N` runs")
	c.Flags().StringVar(&format, "format", "table", "output `FORMAT`: table or json")
	return c
}

func openStore(ctx context.Context, e *env, r *runner.Runner, state string) (serve.Store, error) {
	url, err := r.Resolve(state)
	if err != nil {
		return nil, err
	}
	st, err := serve.OpenStore(ctx, url, serve.StoreOptions{Log: e.log, MustExist: true})
	if errors.Is(err, sqlitex.ErrNoDatabase) {
		// Besides the path, the way on: runs are recorded where serve or
		// run keeps them.
		return nil, fmt.Errorf("state database %s: %w; no run was recorded there: give --state the database that sluice serve and sluice run record runs in (their --state, else their default connection)", redact.Conn(url), redact.Error(err, url))
	}
	if err != nil {
		return nil, fmt.Errorf("state database %s: %w", redact.Conn(url), redact.Error(err, url))
	}
	return st, nil
}

func cmdHistory(ctx context.Context, e *env, state, format string, limit int, rest []string) error {
	if len(rest) > 1 {
		return usageErr("at most one job name")
	}
	if err := checkFormat(format, "table", "json"); err != nil {
		return err
	}
	if limit < 1 {
		return usageErr("--limit must be at least 1")
	}
	job := ""
	if len(rest) == 1 {
		job = rest[0]
	}
	r := newRunner(e, "")
	defer r.Close()
	st, err := openStore(ctx, e, r, state)
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := st.List(ctx, job, limit)
	if err != nil {
		return err
	}
	if format == "json" {
		return writeJSON(e.stdout, struct {
			Runs []serve.Run `json:"runs"`
		}{append([]serve.Run{}, runs...)})
	}
	if err := serve.WriteEmptyChecks(ctx, e.stdout, st, job); err != nil {
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
		if note == "" {
			note = run.Note
		}
		rows = append(rows, []any{run.Job, run.Start, fmt.Sprintf("%.3f", run.Duration().Seconds()), string(run.Status),
			counts(run.Read), written(run), offsetText(run.From, time.Time{}) + " -> " + offsetText(run.To, run.End), note})
	}
	return stdout.Table(e.stdout, cols, rows)
}

// written is the history's written cell: the rows by change type, and
// the rows dead-lettered when there were any.
func written(run serve.Run) string {
	if run.DeadLettered == 0 {
		return counts(run.Written)
	}
	return fmt.Sprintf("%s; dead-lettered %d", counts(run.Written), run.DeadLettered)
}
