package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sinks/stdout"
)

func init() { register(newDeadLetterCmd) }

// deadLetterFlags are the flags of `sluice dead-letter`.
type deadLetterFlags struct {
	conn, format  string
	replay, purge bool
	wide          bool
}

func newDeadLetterCmd(e *env) *cobra.Command {
	var f deadLetterFlags
	c := &cobra.Command{
		Use:   "dead-letter [flags] JOB",
		Short: "list, replay or purge the rows a job's sink rejected (sink: {dead_letter: TABLE})",
		Long: "List the dead letters of a job — the rows its sink rejected for their value, stored in the\n" +
			"job's dead-letter table — oldest first: id, key, change type, commit version, error, time, row.\n" +
			"--replay applies them again through the sink (after the target was fixed): those it now takes\n" +
			"are written and moved out of the table, in one transaction; the others stay. --purge deletes them.\n" +
			"Exit code 1 if --replay left rows that are still rejected (0 when every row was written),\n" +
			"2 if the job file is invalid or has no dead_letter table.",
		ValidArgsFunction: jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdDeadLetter(cmd.Context(), e, f, args)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.conn, "conn", "", "default connection `URL` for jobs that name none")
	fl.StringVar(&f.format, "format", "table", "output `FORMAT`: table or json")
	fl.BoolVar(&f.replay, "replay", false, "apply the dead letters again through the sink; move those that succeed out of the table")
	fl.BoolVar(&f.purge, "purge", false, "delete the job's dead letters")
	fl.BoolVar(&f.wide, "wide", false, "print table cells whole (default: cut at 40 columns)")
	return c
}

// deadLetterJSON is one dead letter in --format json.
type deadLetterJSON struct {
	ID            int64           `json:"id"`
	Job           string          `json:"job"`
	Key           json.RawMessage `json:"key"`
	ChangeType    string          `json:"change_type"`
	CommitVersion int64           `json:"commit_version"`
	Row           json.RawMessage `json:"row"`
	Error         string          `json:"error"`
	At            string          `json:"dead_lettered_at"`
}

func cmdDeadLetter(ctx context.Context, e *env, f deadLetterFlags, paths []string) error {
	if len(paths) != 1 {
		return usageErr("name exactly one job file")
	}
	if f.replay && f.purge {
		return usageErr("--replay and --purge exclude each other")
	}
	if err := checkFormat(f.format, "table", "json"); err != nil {
		return err
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
	if job.Sink.DeadLetter == "" {
		return configError{fmt.Errorf("job %s has no dead-letter table: add dead_letter: TABLE to its sink", job.Name)}
	}
	r := newRunner(e, f.conn)
	defer r.Close()
	prep, err := r.Plan(ctx, job)
	if err != nil {
		return err
	}
	switch {
	case f.purge:
		n, err := r.PurgeDeadLetters(ctx, prep)
		if err != nil {
			return err
		}
		if f.format == "json" {
			return writeJSON(e.stdout, struct {
				Purged int64 `json:"purged"`
			}{n})
		}
		fmt.Fprintf(e.stdout, "%s: purged %d dead letters from %s\n", job.Name, n, prep.Plan.Sink.DeadLetter)
		return nil
	case f.replay:
		res, err := r.ReplayDeadLetters(ctx, prep)
		if err != nil {
			return err
		}
		if f.format == "json" {
			err = writeJSON(e.stdout, struct {
				Replayed  int64 `json:"replayed"`
				Remaining int64 `json:"remaining"`
			}{res.Replayed, res.Remaining})
		} else {
			fmt.Fprintf(e.stdout, "%s: replayed %d dead letters (wrote %s); %d still rejected, left in %s\n", job.Name, res.Replayed, counts(res.Written), res.Remaining, prep.Plan.Sink.DeadLetter)
		}
		if err == nil && res.Remaining > 0 {
			return errFailed // exit 1: some rows are still rejected (a script must not take the replay for done)
		}
		return err
	}
	dls, err := r.DeadLetters(ctx, prep)
	if err != nil {
		return err
	}
	if f.format == "json" {
		out := make([]deadLetterJSON, 0, len(dls))
		for _, d := range dls {
			out = append(out, deadLetterJSON{d.ID, d.Job, json.RawMessage(d.Key), d.Op.String(), d.CommitVersion, json.RawMessage(d.Row), d.Error, d.At.Format("2006-01-02T15:04:05.999999Z07:00")})
		}
		return writeJSON(e.stdout, struct {
			DeadLetters []deadLetterJSON `json:"dead_letters"`
		}{out})
	}
	cols := []cdc.Column{{Name: "id", Type: cdc.TypeBigInt}, {Name: "key", Type: cdc.TypeString}, {Name: "change_type", Type: cdc.TypeString},
		{Name: "commit_version", Type: cdc.TypeBigInt}, {Name: "error", Type: cdc.TypeString}, {Name: "dead_lettered_at", Type: cdc.TypeTimestamp}, {Name: "row", Type: cdc.TypeString}}
	rows := make([][]any, 0, len(dls))
	for _, d := range dls {
		rows = append(rows, []any{d.ID, d.Key, d.Op.String(), d.CommitVersion, d.Error, d.At, d.Row})
	}
	o := stdout.TableOptions{MaxCell: 40}
	if f.wide {
		o.MaxCell = 0
	}
	return stdout.TableWith(e.stdout, cols, rows, o)
}

var _ = runner.DeadLetter{}
