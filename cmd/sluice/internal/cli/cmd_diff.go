package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/runner"
)

func init() { register(newDiffCmd) }

// diffFlags are the flags of `sluice diff`.
type diffFlags struct {
	conn   string
	limit  int
	format string
	bits   int
}

func newDiffCmd(e *env) *cobra.Command {
	var f diffFlags
	c := &cobra.Command{
		Use:   "diff [flags] JOB",
		Short: "check that a merge or history job's target equals its source",
		Long: "Compare a merge or history job's target with its source table: the table's current rows,\n" +
			"filtered (on values) and projected as the job does, against the target's rows (a history's\n" +
			"current versions; a soft-delete merge's rows without __deleted_at), matched by the job's keys,\n" +
			"across any two databases. Both databases hash their rows by key bucket; only the rows of\n" +
			"buckets that differ are read. Prints the counts of missing, extra and different rows, up to\n" +
			"--limit example keys with the differing columns, and the changes still pending in the stream\n" +
			"(which may explain a difference). Reads only; moves no offset.\n" +
			"Exit code 0 when the target equals the source, 1 when they differ, 2 on an error.",
		ValidArgsFunction: jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// diff writes nothing: a missing sink database is not created.
			return cmdDiff(runner.WithCreate(cmd.Context(), runner.CreateNone), e, f, args)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.conn, "conn", "", "default connection `URL` for jobs that name none")
	fl.IntVar(&f.limit, "limit", 10, "show at most `N` example rows")
	fl.StringVar(&f.format, "format", "text", "output `FORMAT`: text or json")
	fl.IntVar(&f.bits, "bits", runner.DefaultDiffBits, "key-hash bits per bucket (`N`, 1-24: 2^N buckets)")
	return c
}

// cmdDiff runs Runner.Diff for one job and prints the result; it returns
// errFailed when the target differs and a configError (exit code 2) when
// the diff could not be made.
func cmdDiff(ctx context.Context, e *env, f diffFlags, paths []string) error {
	if len(paths) != 1 {
		return usageErr("name exactly one job file")
	}
	if f.limit < 0 {
		return usageErr("--limit must be at least 0")
	}
	if f.bits < 1 || f.bits > 24 {
		return usageErr("--bits must be 1 to 24")
	}
	if err := checkFormat(f.format, "text", "json"); err != nil {
		return err
	}
	files, err := loadJobs(paths, e.maxJobSize)
	if err != nil {
		// Exit 2, not 1: 1 means "the target differs" to a script.
		return configError{err}
	}
	if len(files) != 1 {
		return usageErr("name exactly one job file, not a directory of %d", len(files))
	}
	if files[0].err != nil {
		return configError{files[0].check()} // every error of the file, as validate
	}
	r := newRunner(e, f.conn)
	defer r.Close()
	prep, err := r.Plan(ctx, files[0].job)
	if err != nil {
		return configError{err}
	}
	res, err := r.Diff(ctx, prep, runner.DiffOptions{Limit: f.limit, Bits: f.bits})
	if err != nil {
		return configError{err}
	}
	if f.format == "json" {
		if err := writeJSON(e.stdout, newDiffJSON(res)); err != nil {
			return err
		}
	} else {
		printDiff(e.stdout, res)
	}
	if !res.Equal() {
		return errFailed
	}
	return nil
}

func printDiff(w io.Writer, d *runner.DiffResult) {
	verdict := "EQUAL"
	if !d.Equal() {
		verdict = "DIFFERENT"
	}
	fmt.Fprintf(w, "%s: %s → %s (%s by %s): %s\n", d.Job, d.Source, d.Target, d.Mode, strings.Join(d.Keys, ", "), verdict)
	fmt.Fprintf(w, "  rows: source %d, target %d; missing %d, extra %d, different %d\n", d.SourceRows, d.TargetRows, d.Missing, d.Extra, d.Different)
	fmt.Fprintf(w, "  compared: %s\n", strings.Join(d.Columns, ", "))
	if len(d.Skipped) > 0 {
		fmt.Fprintf(w, "  not compared (read the stream's metadata): %s\n", strings.Join(d.Skipped, ", "))
	}
	if d.ExtraExpected && d.Extra > 0 {
		fmt.Fprintf(w, "  extra rows are expected: the job keeps deleted rows (on_delete: ignore)\n")
	}
	p := d.Pending
	if p.Total == 0 {
		fmt.Fprintf(w, "  pending: none (offset %s)\n", offsetText(p.Offset, time.Time{}))
	} else {
		fmt.Fprintf(w, "  pending: %s changes after offset %s, the oldest committed %s ago: differences they explain are not drift\n",
			counts(p.Changes), offsetText(p.Offset, time.Time{}), p.Lag.Round(time.Second))
	}
	if len(d.Examples) > 0 {
		n := d.Missing + d.Extra + d.Different
		fmt.Fprintf(w, "  examples (%d of %d):\n", len(d.Examples), n)
		for _, ex := range d.Examples {
			fmt.Fprintf(w, "    %-9s %s", ex.Kind, keyText(d.Keys, ex.Key))
			for i, c := range ex.Columns {
				sep := ": "
				if i > 0 {
					sep = "; "
				}
				fmt.Fprintf(w, "%s%s source %s, target %s", sep, c.Column, diffValueText(c.Source), diffValueText(c.Target))
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "  checked %d key buckets, read the rows of %d, in %.2fs\n", d.Buckets, d.BucketsDiffer, d.End.Sub(d.Start).Seconds())
}

func keyText(names []string, vals []*string) string {
	parts := make([]string, len(names))
	for i := range names {
		parts[i] = names[i] + "=" + diffValueText(vals[i])
	}
	return strings.Join(parts, ", ")
}

// diffValueText shows a value of a diff: NULL for NULL, the text as is when it
// is plain, else quoted (the empty string, the text NULL, spaces, commas,
// quotes, control characters).
func diffValueText(v *string) string {
	switch {
	case v == nil:
		return "NULL"
	case *v == "" || strings.EqualFold(*v, "NULL") || strings.ContainsAny(*v, " ,;=\"\\") || strconv.Quote(*v) != `"`+*v+`"`:
		return strconv.Quote(*v)
	}
	return *v
}

// diffJSON is `sluice diff --format json`.
type diffJSON struct {
	Job           string          `json:"job"`
	Equal         bool            `json:"equal"`
	Source        string          `json:"source"`
	Target        string          `json:"target"`
	Mode          string          `json:"mode"`
	Keys          []string        `json:"keys"`
	Columns       []string        `json:"columns"`
	Skipped       []string        `json:"not_compared"`
	SourceRows    int64           `json:"source_rows"`
	TargetRows    int64           `json:"target_rows"`
	Missing       int64           `json:"missing"`
	Extra         int64           `json:"extra"`
	Different     int64           `json:"different"`
	ExtraExpected bool            `json:"extra_expected"`
	Examples      []diffExJSON    `json:"examples"`
	Pending       diffPendingJSON `json:"pending"`
	Buckets       int             `json:"buckets"`
	BucketsRead   int             `json:"buckets_read"`
	Seconds       float64         `json:"seconds"`
	Checked       string          `json:"checked_at"`
}

type diffExJSON struct {
	Kind    string             `json:"kind"`
	Key     map[string]*string `json:"key"`
	Columns []diffColJSON      `json:"columns,omitempty"`
}

type diffColJSON struct {
	Column string  `json:"column"`
	Source *string `json:"source"`
	Target *string `json:"target"`
}

type diffPendingJSON struct {
	Offset     string           `json:"offset"`
	Changes    int64            `json:"changes"`
	ByType     map[string]int64 `json:"by_change_type"`
	Oldest     *time.Time       `json:"oldest,omitempty"`
	LagSeconds float64          `json:"lag_seconds"`
}

func newDiffJSON(d *runner.DiffResult) diffJSON {
	j := diffJSON{
		Job: d.Job, Equal: d.Equal(), Source: d.Source, Target: d.Target, Mode: string(d.Mode),
		Keys: d.Keys, Columns: d.Columns, Skipped: d.Skipped, SourceRows: d.SourceRows, TargetRows: d.TargetRows,
		Missing: d.Missing, Extra: d.Extra, Different: d.Different, ExtraExpected: d.ExtraExpected,
		Examples: []diffExJSON{}, Buckets: d.Buckets, BucketsRead: d.BucketsDiffer,
		Seconds: d.End.Sub(d.Start).Seconds(), Checked: d.Start.Format(time.RFC3339),
	}
	if j.Skipped == nil {
		j.Skipped = []string{}
	}
	for _, ex := range d.Examples {
		e := diffExJSON{Kind: ex.Kind, Key: map[string]*string{}}
		for i, k := range d.Keys {
			e.Key[k] = ex.Key[i]
		}
		for _, c := range ex.Columns {
			e.Columns = append(e.Columns, diffColJSON(c))
		}
		j.Examples = append(j.Examples, e)
	}
	p := d.Pending
	j.Pending = diffPendingJSON{Offset: p.Offset.String(), Changes: p.Total, ByType: map[string]int64{}, LagSeconds: p.Lag.Seconds()}
	for op, n := range p.Changes {
		j.Pending.ByType[op.String()] = n
	}
	if !p.Oldest.IsZero() {
		t := p.Oldest.UTC()
		j.Pending.Oldest = &t
	}
	return j
}
