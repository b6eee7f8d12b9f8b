package runner

import (
	"context"
	"fmt"

	"github.com/sluicedata/sluice/cdc"
)

// Replay and purge of a job's dead letters (`sluice dead-letter`).

// ReplayResult reports a replay of a job's dead letters.
type ReplayResult struct {
	Replayed  int64            // dead letters the sink took, now moved out of the table
	Remaining int64            // dead letters the sink still rejects, left in the table
	Written   map[cdc.Op]int64 // rows applied at the sink, by change type
}

// deadLetterSink returns the job's dead-letter table and its sink, or an
// error when the job has none.
func deadLetterSink(prep *Prepared) (string, DeadLetterSink, error) {
	table := prep.Plan.Sink.DeadLetter
	if table == "" {
		return "", nil, fmt.Errorf("job %s has no dead-letter table (sink: {dead_letter: TABLE})", prep.Plan.Job.Name)
	}
	s, ok := prep.sink.(DeadLetterSink)
	if !ok {
		return "", nil, fmt.Errorf("%w: %s", ErrNoDeadLetter, prep.Plan.Sink.Backend)
	}
	return table, s, nil
}

// DeadLetters returns the dead letters of prep's job in the order they
// were stored (none when its table does not exist yet).
func (r *Runner) DeadLetters(ctx context.Context, prep *Prepared) ([]DeadLetter, error) {
	table, s, err := deadLetterSink(prep)
	if err != nil {
		return nil, err
	}
	return s.DeadLetters(ctx, table, prep.Plan.Job.Name)
}

// PurgeDeadLetters deletes the dead letters of prep's job and returns how
// many it deleted.
func (r *Runner) PurgeDeadLetters(ctx context.Context, prep *Prepared) (int64, error) {
	table, s, err := deadLetterSink(prep)
	if err != nil {
		return 0, err
	}
	return s.PurgeDeadLetters(ctx, table, prep.Plan.Job.Name)
}

// ReplayDeadLetters applies the dead letters of prep's job again through
// its sink, in the order they were stored, each under a savepoint (a
// unique violation is retried after the others, as in a run): those the
// sink now takes are written to the target and deleted from the
// dead-letter table, in one sink transaction that keeps the job's
// checkpoint as it is; those it still rejects stay. A replayed change
// carries its stored row, change type and commit version; its commit
// timestamp (for on_delete soft) is the time it was dead-lettered.
// Errors that are not a row's rejection (a lost connection) roll
// everything back.
func (r *Runner) ReplayDeadLetters(ctx context.Context, prep *Prepared) (*ReplayResult, error) {
	p := prep.Plan
	table, rj, err := deadLetterSink(prep)
	if err != nil {
		return nil, err
	}
	sp := prep.sinkPlan
	if sp == nil {
		if sp, err = prep.sink.PrepareSink(ctx, &p.Sink); err != nil {
			return nil, err
		}
	}
	stx, err := sp.Begin(ctx, p.Job.Name)
	if err != nil {
		return nil, err
	}
	committed := false
	defer func() {
		if !committed {
			_ = stx.Rollback(ctx)
		}
	}()
	tx, ok := stx.(DeadLetterTx)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoDeadLetter, p.Sink.Backend)
	}
	dls, err := tx.LoadDeadLetters(ctx, table, p.Job.Name)
	if err != nil || len(dls) == 0 {
		return &ReplayResult{}, err
	}
	cp, ok, err := tx.Checkpoint(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("job %s has dead letters in %s but no checkpoint in its sink database; run the job first", p.Job.Name, table)
	}
	batch := make([]cdc.Change, len(dls))
	for i, d := range dls {
		row, err := ParseRowJSON(p.Sink.Schema, d.Row)
		if err != nil {
			return nil, fmt.Errorf("dead letter %d of %s: %w", d.ID, table, err)
		}
		batch[i] = cdc.Change{Op: d.Op, CommitVersion: d.CommitVersion, CommitTime: d.At, Row: row}
	}
	failed := map[*cdc.Change]bool{}
	c := &careful{DeadLetterTx: tx, rj: rj, prep: prep, r: r, onReject: func(u unit, _ error) {
		for i := range u {
			failed[&u[i]] = true
		}
	}}
	// One dead letter at a time: two of one key (from two runs) must not
	// meet in one merge.
	for i := range batch {
		if err := c.apply(ctx, []unit{batch[i : i+1]}); err != nil {
			return nil, err
		}
	}
	if err := c.retryUnique(ctx); err != nil {
		return nil, err
	}
	var done []int64
	for i := range batch {
		if !failed[&batch[i]] {
			done = append(done, dls[i].ID)
		}
	}
	if err := tx.DeleteDeadLetters(ctx, table, done); err != nil {
		return nil, err
	}
	stats, err := tx.Commit(ctx, cp)
	if err != nil {
		return nil, err
	}
	committed = true
	return &ReplayResult{Replayed: int64(len(done)), Remaining: int64(len(dls) - len(done)), Written: stats.Written}, nil
}
