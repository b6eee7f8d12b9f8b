package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// Run executes a prepared plan once: exactly the steps Plan printed.
//
// Pushed-down plans run as one transaction in the database. Otherwise the
// run starts from the job's checkpoint in the sink database when it belongs
// to the same stream incarnation (else from the stream's offset when there
// is none, or fails with StreamReplacedError: Start), reads the
// changes up to a read point, filters and projects them in batches while
// the sink writes the previous batch (pipeline), ends the read, commits the
// sink rows with the new checkpoint in one sink transaction and then
// advances the stream's offset. On any error nothing is committed and the
// offset stays where it was — except that a job with a dead-letter table
// whose sink rejected a row's value runs the window again, storing the
// rejected rows in that table (runDeadLetters).
//
// When DDL on the source table ran between Plan and the run's read (the
// read's columns are not the plan's: ErrPlanStale), nothing is written;
// Run plans the job again and runs the new plan, up to maxReplans times,
// so that a column added meanwhile is projected (and, under evolve, added
// to the target) instead of being left out of rows that carry it.
func (r *Runner) Run(ctx context.Context, prep *Prepared) (*Result, error) {
	return r.run(ctx, prep, nil)
}

// run is Run; it sets *replanned (when not nil) when the run planned
// again (ErrPlanStale), so that a PlanCache drops prep.
func (r *Runner) run(ctx context.Context, prep *Prepared, replanned *bool) (res *Result, err error) {
	job := prep.Plan.Job
	start := time.Now().UTC()
	defer func() {
		if res == nil {
			res = &Result{Job: job.Name, Start: start}
		}
		res.Start, res.End = start, time.Now().UTC()
		if r.Observer != nil {
			r.Observer.RunDone(res, err)
		}
		if err != nil {
			err = &RunError{Job: job.Name, Err: err}
		}
	}()
	for replans := 0; ; replans++ {
		res, err = r.runPlanned(ctx, prep)
		if !errors.Is(err, ErrPlanStale) || replans == maxReplans {
			return res, err
		}
		r.log().Info("source table changed after the run was planned; planning again", "job", job.Name, "err", err)
		if replanned != nil {
			*replanned = true
		}
		if prep, err = r.Plan(ctx, job); err != nil {
			return nil, err
		}
	}
}

// maxReplans bounds how often one Run plans again after ErrPlanStale
// (DDL between each plan and its read).
const maxReplans = 3

// runPlanned is one attempt of Run with prep.
func (r *Runner) runPlanned(ctx context.Context, prep *Prepared) (*Result, error) {
	p := prep.Plan
	res := &Result{Job: p.Job.Name, Start: time.Now().UTC()}
	if p.Sink.Mode == plan.ModeIgnore && p.Sink.TableExists {
		res.Skipped = fmt.Sprintf("target %s exists and mode is ignore", p.Sink.Table)
		return res, nil
	}
	if prep.push != nil {
		stats, from, to, err := prep.push.Run(ctx, p.Job.Name)
		if !errors.Is(err, ErrNoPushdown) {
			if prep.deadLettering(err) {
				return r.runDeadLetters(ctx, prep, res)
			}
			if errors.Is(err, ErrPushdownValue) {
				if derr := r.replay(ctx, prep); derr != nil {
					return res, fmt.Errorf("%w (the pushed-down run failed: %v; replayed through sluice to name the row, nothing committed)", derr, err)
				}
			}
			if err != nil {
				return res, err
			}
			res.Stats, res.From, res.To, res.Note = stats, from, to, stats.Note
			r.log().Debug("sink and offset committed", "job", p.Job.Name, "pushdown", true, "from", from.String(), "to", to.String())
			return res, nil
		}
		// The database could not run the compiled SQL (a target column
		// of another type than the source's): nothing was written; the
		// rows go through sluice instead.
		r.log().Debug("pushed-down run refused; running through sluice", "job", p.Job.Name, "err", err)
		if prep, err = prep.throughSluice(ctx); err != nil {
			return res, err
		}
	}
	res, err := r.runThrough(ctx, prep, res)
	if prep.deadLettering(err) {
		return r.runDeadLetters(ctx, prep, &Result{Job: res.Job, Start: res.Start})
	}
	return res, err
}

// replay runs a pushed-down plan through sluice without committing, to
// find the row and column a failed pushdown could not name (the sink's
// Write checks and names each value). It returns the replay's error, or
// nil when the replay found nothing.
func (r *Runner) replay(ctx context.Context, prep *Prepared) error {
	through, err := prep.throughSluice(ctx)
	if err != nil {
		return nil
	}
	_, err = r.runThroughWith(ctx, through, &Result{}, true)
	return err
}

// throughSluice returns a copy of a pushed-down prep that runs through
// sluice (runThrough): its sink compiled, no pushdown.
func (prep *Prepared) throughSluice(ctx context.Context) (*Prepared, error) {
	sp, err := prep.sink.PrepareSink(ctx, &prep.Plan.Sink)
	if err != nil {
		return nil, err
	}
	through := *prep
	through.push, through.sinkPlan = nil, sp
	return &through, nil
}

// stagedApplier is a sink transaction that applies what it staged without
// committing; a dry replay runs it so that errors only the apply detects
// (a NOT NULL violation) are found and named too.
type stagedApplier interface {
	ApplyStaged(ctx context.Context) error
}

// runThrough moves rows through sluice (the cross-database path).
func (r *Runner) runThrough(ctx context.Context, prep *Prepared, res *Result) (*Result, error) {
	return r.runThroughWith(ctx, prep, res, false)
}

// runThroughWith is runThrough; with dry it rolls the sink transaction
// back instead of committing and leaves the offset alone.
func (r *Runner) runThroughWith(ctx context.Context, prep *Prepared, res *Result, dry bool) (*Result, error) {
	p := prep.Plan
	tx, err := prep.sinkPlan.Begin(ctx, p.Job.Name)
	if p.Sink.Mode == plan.ModeIgnore && errors.Is(err, ErrTargetExists) {
		res.Skipped = fmt.Sprintf("target %s exists and mode is ignore", p.Sink.Table)
		return res, nil
	}
	if err != nil {
		return res, err
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback(ctx)
		}
	}()
	// The stream may have moved since Plan; describe it again inside the
	// sink transaction so the checkpoint comparison is current.
	info, err := prep.source.Stream(ctx, p.Job.Source)
	if err != nil {
		return res, err
	}
	if err := PlanStaleError(info.Name, info.Table, prep.stream.TableSchema, info.TableSchema); err != nil {
		return res, err
	}
	cp, ok, err := tx.Checkpoint(ctx)
	if err != nil {
		return res, err
	}
	from, note, err := Start(ctx, p.Job.Name, cp, ok, info)
	if err != nil {
		return res, err
	}
	res.From, res.Note = from, note
	if err := r.fillColumns(ctx, prep, info, from, tx); err != nil {
		return res, err
	}
	opt := ReadOptions{BatchSize: r.batchSize(), OmitUpdateBefore: p.Sink.IgnoresUpdateBefore()}
	rd, err := prep.source.Changes(ctx, info, from, opt)
	if err != nil {
		return res, err
	}
	// The pipeline closes rd once the read ends: the source's read
	// transaction is gone before the sink commits and the offset advances.
	to, read, err := prep.pipeline(ctx, rd, tx)
	if err == nil && dry {
		if a, ok := tx.(stagedApplier); ok {
			err = a.ApplyStaged(ctx) // rolled back with the transaction
		}
	}
	if err != nil || dry {
		return res, err
	}
	stats, err := tx.Commit(ctx, Checkpoint{Job: p.Job.Name, Stream: info.Name, StreamID: info.ID, Offset: to, Updated: time.Now().UTC()})
	if err != nil {
		return res, err
	}
	committed = true
	stats.Read, stats.Note = read, note
	res.Stats, res.To = stats, to
	if p.Sink.Backend == "stdout" {
		res.To = from
		res.Skipped = "stdout sink: nothing consumed"
		return res, nil
	}
	// The rows and the checkpoint are durable; moving the stream's own
	// offset lets `preview` show nothing pending and the log be purged. If
	// it fails the next run still starts from the sink's checkpoint.
	if !to.Equal(info.Offset) {
		if err := prep.source.Advance(ctx, info, info.Offset, to); err != nil {
			r.log().Warn("stream offset not advanced; the sink checkpoint is ahead and will be used", "job", p.Job.Name, "stream", info.Name, "err", err)
		}
	}
	r.log().Debug("sink and offset committed", "job", p.Job.Name, "from", from.String(), "to", to.String())
	return res, nil
}

// transform filters and projects a batch, counting what was read.
func (prep *Prepared) transform(batch []cdc.Change, read map[cdc.Op]int64) ([]cdc.Change, error) {
	out := make([]cdc.Change, 0, len(batch))
	nmeta := len(cdc.MetadataColumns)
	pass := prep.passThrough(nmeta)
	for i := range batch {
		ch := &batch[i]
		read[ch.Op]++
		row := streamRow{ch: ch, nmeta: nmeta}
		if prep.filter != nil {
			v, err := prep.filter.Eval(row)
			if err != nil {
				return nil, prep.rowError(ch, "filter", err)
			}
			if v != true {
				continue
			}
		}
		if pass && len(ch.Row) == len(prep.project) {
			// The change is its own projection: its Row and Present are
			// handed on (the batch is this run's), a column a partial row
			// does not carry read as NULL, as evaluating it would.
			proj := cdc.Change{Op: ch.Op, CommitVersion: ch.CommitVersion, CommitTime: ch.CommitTime, Row: ch.Row, Present: ch.Present}
			for j := range proj.Present {
				if !proj.Present[j] {
					proj.Row[j] = nil
				}
			}
			out = append(out, proj)
			continue
		}
		proj := cdc.Change{Op: ch.Op, CommitVersion: ch.CommitVersion, CommitTime: ch.CommitTime, Row: make([]any, len(prep.project))}
		if ch.IsPartial() {
			proj.Present = make([]bool, len(prep.project))
		}
		for j, b := range prep.project {
			if ch.IsPartial() {
				present := true
				for _, c := range prep.present[j] {
					present = present && ch.Present[c]
				}
				proj.Present[j] = present
				if !present {
					continue
				}
			}
			v, err := b.Eval(row)
			if err != nil {
				return nil, prep.rowError(ch, prep.Plan.Project[j].Name, err)
			}
			proj.Row[j] = v
		}
		out = append(out, proj)
	}
	return out, nil
}

// passThrough reports whether the projection is the stream's table
// columns in their order, each a bare column reference (a job without a
// select list, or one naming every column in order): a change is then its
// own projection, with no evaluation and no copy (transform).
func (prep *Prepared) passThrough(nmeta int) bool {
	if prep.stream == nil || len(prep.project) != len(prep.stream.TableSchema.Columns) {
		return false
	}
	for j, b := range prep.project {
		ref, ok := b.Column()
		if !ok || ref.Rel != 0 || ref.Col != nmeta+j {
			return false
		}
	}
	return true
}

// rowError names the row's key in an evaluation error.
func (prep *Prepared) rowError(ch *cdc.Change, what string, err error) error {
	s := prep.stream.TableSchema
	idx, _ := s.KeyIndexes()
	return fmt.Errorf("%s: %s: %w", cdc.RowLabel(ch, s, idx, s.Key), what, err)
}

// streamRow presents a change as a row of the stream schema (metadata
// columns first) to expression evaluation.
type streamRow struct {
	ch    *cdc.Change
	nmeta int
}

func (s streamRow) Value(_, col int) any {
	switch col {
	case 0:
		return s.ch.Op.String()
	case 1:
		return s.ch.CommitVersion
	case 2:
		return s.ch.CommitTime
	}
	i := col - s.nmeta
	if !s.ch.Has(i) {
		return nil
	}
	return s.ch.Row[i]
}

// RunError is a failed run of a job. It wraps the cause.
type RunError struct {
	Job string
	Err error
}

func (e *RunError) Error() string { return "job " + e.Job + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *RunError) Unwrap() error { return e.Err }
