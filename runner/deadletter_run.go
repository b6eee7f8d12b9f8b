package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/redact"
	"github.com/sluicedata/sluice/pos"
)

// RowRejecter is a Sink that tells an error caused by one row's value
// from the others (Rejection); a sink whose transactions are DeadLetterTx
// implements it.
type RowRejecter interface {
	Rejection(err error) Rejection
}

// deadLettering reports whether a failed run of prep should run again
// with dead letters: the job has a dead-letter table and its sink says err
// is about a row's value (a pushed-down run's ErrPushdownValue counts).
func (prep *Prepared) deadLettering(err error) bool {
	if err == nil || prep.Plan.Sink.DeadLetter == "" {
		return false
	}
	if errors.Is(err, ErrPushdownValue) {
		return true
	}
	rj, ok := prep.sink.(RowRejecter)
	return ok && rj.Rejection(err) != NotRejected
}

// runDeadLetters runs prep's window again through sluice after a run
// failed on a row's value: it reads the window in commit order (no change
// left out), applies each batch under a savepoint and, when the sink
// rejects it, bisects it down to the changes (an UPDATE_BEFORE stays with
// its UPDATE_AFTER) that fail alone. A change that fails alone on a unique
// violation is tried again after the rest of the window (another change
// may have vacated the value: retryUnique). The rejected changes go to the
// dead-letter table, and the rows, the dead letters and the checkpoint
// commit in one sink transaction; then the stream's offset moves, as in
// runThrough.
func (r *Runner) runDeadLetters(ctx context.Context, prep *Prepared, res *Result) (*Result, error) {
	p := prep.Plan
	sp := prep.sinkPlan
	if sp == nil { // a pushed-down plan: compile the sink as runThrough would
		var err error
		if sp, err = prep.sink.PrepareSink(ctx, &p.Sink); err != nil {
			return res, err
		}
	}
	stx, err := sp.Begin(ctx, p.Job.Name)
	if err != nil {
		return res, err
	}
	committed := false
	defer func() {
		if !committed {
			_ = stx.Rollback(ctx)
		}
	}()
	tx, ok := stx.(DeadLetterTx)
	rj, rok := prep.sink.(RowRejecter)
	if !ok || !rok {
		return res, fmt.Errorf("%w: %s", ErrNoDeadLetter, p.Sink.Backend)
	}
	info, err := prep.source.Stream(ctx, p.Job.Source)
	if err != nil {
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
	// No change left out: the bisection relies on commit order.
	rd, err := prep.source.Changes(ctx, info, from, ReadOptions{BatchSize: r.batchSize()})
	if err != nil {
		return res, err
	}
	c := &careful{DeadLetterTx: tx, rj: rj, prep: prep, r: r, now: time.Now().UTC()}
	to, read, err := prep.pipeline(ctx, rd, c)
	if err != nil {
		return res, err
	}
	if err := c.retryUnique(ctx); err != nil {
		return res, err
	}
	if len(c.dead) > 0 {
		if err := tx.StoreDeadLetters(ctx, p.Sink.DeadLetter, c.dead); err != nil {
			return res, err
		}
	}
	stats, err := tx.Commit(ctx, Checkpoint{Job: p.Job.Name, Stream: info.Name, StreamID: info.ID, Offset: to, Updated: time.Now().UTC()})
	if err != nil {
		return res, err
	}
	committed = true
	stats.Read, stats.Note, stats.DeadLettered = read, note, int64(len(c.dead))
	res.Stats, res.To = stats, to
	r.log().Warn("rows dead-lettered", "job", p.Job.Name, "table", p.Sink.DeadLetter, "rows", len(c.dead))
	if !to.Equal(info.Offset) {
		if err := prep.source.Advance(ctx, info, info.Offset, to); err != nil {
			r.log().Warn("stream offset not advanced; the sink checkpoint is ahead and will be used", "job", p.Job.Name, "stream", info.Name, "err", err)
		}
	}
	return res, nil
}

// careful is the SinkTx the pipeline writes to in runDeadLetters: each
// Write applies its batch at once, under a savepoint, and bisects it on a
// rejection.
type careful struct {
	DeadLetterTx
	rj     RowRejecter
	prep   *Prepared
	r      *Runner
	now    time.Time
	dead   []DeadLetter
	unique []unit // changes that failed alone on a unique violation, in commit order
	// onReject, when set, is told about each rejected unit instead of
	// recording it as a dead letter (a replay).
	onReject func(u unit, err error)
}

// unit is a change, or an UPDATE_BEFORE with its UPDATE_AFTER: what the
// bisection never splits.
type unit []cdc.Change

// attemptError is an error of the savepoint machinery itself: never a
// rejection.
type attemptError struct{ err error }

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// Write applies batch: at once when the sink takes it, else bisected.
func (c *careful) Write(ctx context.Context, batch []cdc.Change) error {
	return c.apply(ctx, units(batch))
}

// units groups batch into units.
func units(batch []cdc.Change) []unit {
	var out []unit
	for i := 0; i < len(batch); i++ {
		if batch[i].Op == cdc.OpUpdateBefore && i+1 < len(batch) && batch[i+1].Op == cdc.OpUpdateAfter {
			out = append(out, unit(batch[i:i+2]))
			i++
			continue
		}
		out = append(out, unit(batch[i:i+1]))
	}
	return out
}

func (c *careful) apply(ctx context.Context, us []unit) error {
	if len(us) == 0 {
		return nil
	}
	err := c.try(ctx, us)
	if err == nil {
		return nil
	}
	var ae *attemptError
	if errors.As(err, &ae) {
		return ae.err
	}
	kind := c.rj.Rejection(err)
	switch {
	case kind == NotRejected:
		return err
	case len(us) > 1:
		mid := len(us) / 2
		if err := c.apply(ctx, us[:mid]); err != nil {
			return err
		}
		return c.apply(ctx, us[mid:])
	case kind == RejectedUnique:
		c.unique = append(c.unique, us[0])
	default:
		c.reject(us[0], err)
	}
	return nil
}

// try writes and applies us under a savepoint; on an error it rolls back
// to the savepoint and returns the error.
func (c *careful) try(ctx context.Context, us []unit) error {
	if err := c.Savepoint(ctx); err != nil {
		return &attemptError{err}
	}
	var batch []cdc.Change
	for _, u := range us {
		batch = append(batch, u...)
	}
	err := c.DeadLetterTx.Write(ctx, batch)
	if err == nil {
		err = c.Flush(ctx)
	}
	if err != nil {
		if rerr := c.RollbackTo(ctx); rerr != nil {
			return &attemptError{errors.Join(err, rerr)}
		}
		return err
	}
	if err := c.Release(ctx); err != nil {
		return &attemptError{err}
	}
	return nil
}

// retryUnique applies the changes that failed alone on a unique
// violation, now that the rest of the window is in place: all together
// first (the sink's own reordering applies swapped values), then each
// alone for as long as one goes in; when none does, it leaves out one
// change at a time to find one whose removal lets the others go in. What
// still fails is dead-lettered.
func (c *careful) retryUnique(ctx context.Context) error {
	pending := c.unique
	errs := map[int]error{}
	for len(pending) > 0 {
		err := c.try(ctx, pending)
		if err == nil {
			return nil
		}
		if fatal := c.fatal(err); fatal != nil {
			return fatal
		}
		var rest []unit
		for _, u := range pending {
			err := c.try(ctx, []unit{u})
			if err == nil {
				continue
			}
			if fatal := c.fatal(err); fatal != nil {
				return fatal
			}
			errs[len(rest)] = err
			rest = append(rest, u)
		}
		if len(rest) < len(pending) {
			pending, errs = rest, remap(errs, len(rest))
			continue
		}
		for i := range rest {
			others := append(append([]unit(nil), rest[:i]...), rest[i+1:]...)
			err := c.try(ctx, others)
			if err == nil {
				c.reject(rest[i], errs[i])
				return nil
			}
			if fatal := c.fatal(err); fatal != nil {
				return fatal
			}
		}
		for i, u := range rest {
			c.reject(u, errs[i])
		}
		return nil
	}
	return nil
}

func remap(errs map[int]error, n int) map[int]error {
	out := make(map[int]error, n)
	for i := 0; i < n; i++ {
		out[i] = errs[i]
	}
	return out
}

// fatal returns the error that ends the run when err is not a rejection.
func (c *careful) fatal(err error) error {
	var ae *attemptError
	if errors.As(err, &ae) {
		return ae.err
	}
	if c.rj.Rejection(err) == NotRejected {
		return err
	}
	return nil
}

// reject records the changes of u as dead letters with err's text,
// without the connection's secrets. A sink that ignores UPDATE_BEFORE
// (a merge) records the UPDATE_AFTER only.
func (c *careful) reject(u unit, err error) {
	if c.onReject != nil {
		c.onReject(u, err)
		return
	}
	st := &c.prep.Plan.Sink
	idx, _ := st.RowKey(cdc.Schema{Key: c.prep.stream.TableSchema.Key})
	text := err.Error()
	for _, conn := range []string{c.prep.Plan.Job.Conn, c.prep.Plan.Job.Sink.Conn} {
		if url, rerr := c.r.Resolve(conn); rerr == nil {
			text = redact.Text(text, url)
		}
	}
	for _, ch := range u {
		if ch.Op == cdc.OpUpdateBefore && len(u) > 1 && st.IgnoresUpdateBefore() {
			continue
		}
		c.dead = append(c.dead, DeadLetter{
			Job: c.prep.Plan.Job.Name, Key: KeyJSON(st.Schema, ch.Row, idx), Op: ch.Op, CommitVersion: ch.CommitVersion,
			Row: RowJSON(st.Schema, ch.Row, ch.Present), Error: text, At: c.now,
		})
	}
}

// planDeadLetter completes the plan of a job with a dead-letter table: the
// sink stage names it, the sink must be able to store dead letters, and
// the steps say what a rejected row makes the run do. A pushed-down run
// stays pushed down: only a window whose one statement fails on a value
// runs again through sluice.
func planDeadLetter(prep *Prepared) error {
	p := prep.Plan
	if p.Job.Sink.DeadLetter == "" {
		return nil
	}
	if _, ok := prep.sink.(RowRejecter); !ok {
		return pos.Errorf(p.Job.Sink.DeadLetterPos, "%w: %s sinks have no dead-letter table", ErrNoDeadLetter, p.Sink.Backend)
	}
	p.Sink.DeadLetter = p.Job.Sink.DeadLetter
	for i, w := range p.Warnings { // narrowing: such a value no longer fails the run
		p.Warnings[i] = strings.ReplaceAll(w, "fails the run (the offset does not move)", "goes to the dead-letter table "+p.Sink.DeadLetter)
	}
	step := DeadLetterStep(&p.Sink)
	if p.Pushdown {
		step.What = "on a value the target refuses: roll the pushed-down transaction back and run the window through sluice instead (the sink's own statements), " + step.What
	}
	p.Steps = append(p.Steps, step)
	return nil
}
