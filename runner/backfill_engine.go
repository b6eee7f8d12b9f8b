package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// EngineCopier is a SnapshotReader that can copy a backfill's chunks inside
// the sink's database, so that no row passes through sluice: SQLite into
// SQLite (the same file, or another file attached to the sink's
// connection). Runner.Backfill uses it when the snapshot implements it and
// EngineCopy does not refuse.
type EngineCopier interface {
	// EngineCopy compiles the copy of the snapshot's table to the sink of
	// p (the job's plan: its filter, projection and sink stage; sink is
	// the job's sink). It returns an error wrapping ErrNoPushdown when the
	// copy cannot run in the sink's database (another kind of sink, a
	// filter or projection without SQL form, a key it cannot page by);
	// the backfill then reads the rows through sluice.
	EngineCopy(ctx context.Context, p *plan.Plan, sink Sink) (EngineCopy, error)
}

// EngineCopy copies chunks of a snapshot's table inside the sink's
// database. It is not safe for concurrent use.
type EngineCopy interface {
	// Steps describes the statements of one chunk (for --dry-run); sp is
	// the sink plan of the chunk.
	Steps(sp SinkPlan) []plan.Step
	// Chunk runs one write transaction of the sink's database, on the job
	// job's sink plan sp (whose mode effects — creating the target,
	// overwrite's DELETE, errorifexists — happen in it as in
	// SinkPlan.Begin). In it, it calls check with the transaction (the
	// backfill's compare-and-set of the job's checkpoint), then reads the
	// source change log's last position: when it is no longer the
	// snapshot's Offset (the table changed since the snapshot), it rolls
	// back and returns Moved. Otherwise it copies the source rows with a
	// primary key after `after` (nil: from the first), in key order, at
	// most n, through p's filter and projection as INSERT changes at the
	// snapshot's offset, and commits them with the checkpoint
	// checkpoint(last, rows, final) returns: last is the key of the last
	// row read (canonical values), rows how many were read, final whether
	// they were the table's last. On error nothing is committed; an error
	// about a row's value wraps ErrPushdownValue (the caller copies the
	// chunk through sluice to name the row).
	Chunk(ctx context.Context, sp SinkPlan, job string, after []any, n int,
		check func(context.Context, SinkTx) error,
		checkpoint func(last []any, rows int64, final bool) Checkpoint) (EngineChunk, error)
	// Close releases the copy's connection.
	Close() error
}

// EngineChunk reports one EngineCopy.Chunk.
type EngineChunk struct {
	Moved   bool             // the source table changed since the snapshot: nothing was done
	Rows    int64            // source rows read (before the filter)
	Last    []any            // primary key of the last row read; nil when none
	Final   bool             // the rows read were the table's last
	Written map[cdc.Op]int64 // rows written at the sink, by change type
}

// engineCopy returns the snapshot's EngineCopy for this backfill, or nil
// (with the reason logged) when the rows must travel through sluice.
func (b *backfill) engineCopy(ctx context.Context, snap SnapshotReader) EngineCopy {
	ec, ok := snap.(EngineCopier)
	if !ok {
		return nil
	}
	p := *b.prep.Plan
	c, err := ec.EngineCopy(ctx, &p, b.prep.sink)
	if err != nil {
		b.r.log().Info("backfill: chunks cannot be copied inside the sink's database", "job", b.job, "reason", err.Error())
		return nil
	}
	return c
}

// engineChunk commits one chunk copied inside the sink's database.
func (b *backfill) engineChunk(ctx context.Context, ec EngineCopy, after []any, off cdc.Offset, res *BackfillResult) (EngineChunk, error) {
	sp := b.cont
	if b.state.Chunks == 0 {
		sp = b.first
	}
	var next backfillState
	check := func(ctx context.Context, tx SinkTx) error {
		cp, ok, err := tx.Checkpoint(ctx)
		if err == nil && (ok && cp.Offset.Encode() != b.expect || !ok && b.expect != "") {
			err = fmt.Errorf("%w: expected %s, found %s (another backfill or run of job %s?)", ErrCheckpointMoved, b.expect, cp.Offset.Encode(), b.job)
		}
		return err
	}
	var stored cdc.Offset
	checkpoint := func(last []any, rows int64, final bool) Checkpoint {
		next = *b.state
		if rows > 0 || next.Chunks == 0 {
			next.Chunks++
		}
		next.Rows += rows
		if last != nil {
			next.LastKey = encodeKey(last, b.keyT)
		}
		stored = stateOffset(&next)
		if final {
			stored = off
		}
		return Checkpoint{Job: b.job, Stream: b.info.Name, StreamID: b.info.ID, Offset: stored, Updated: time.Now().UTC()}
	}
	r, err := ec.Chunk(ctx, sp, b.job, after, b.opt.Chunk, check, checkpoint)
	if err != nil || r.Moved {
		return r, err
	}
	for op, n := range r.Written {
		res.Written[op] += n
	}
	b.expect = stored.Encode()
	res.Chunks += next.Chunks - b.state.Chunks
	res.Rows += r.Rows
	res.TotalRows, *b.state = next.Rows, next
	return r, nil
}

// engineStep copies the chunk after `after` inside the sink's database.
// It returns the key of the last row copied, whether that was the last
// chunk, and keep false when ec was closed and the rest must go through
// sluice: the source table changed since the snapshot, or a value of the
// chunk does not fit (copied through sluice, its error names the row).
func (b *backfill) engineStep(ctx context.Context, ec EngineCopy, after []any, total int64, off cdc.Offset, res *BackfillResult) (next []any, final, keep bool, err error) {
	r, err := b.engineChunk(ctx, ec, after, off, res)
	switch {
	case err == nil && r.Moved:
		b.r.log().Info("backfill: the source table changed since the snapshot; the rest is read from the snapshot through sluice", "job", b.job, "after", fmt.Sprint(after))
		_ = ec.Close()
		return after, false, false, nil
	case errors.Is(err, ErrPushdownValue):
		b.r.log().Info("backfill: a value does not fit; copying the chunk through sluice to name its row", "job", b.job, "err", err.Error())
		_ = ec.Close()
		return after, false, false, nil
	case err != nil:
		return after, false, false, fmt.Errorf("chunk after key %v: %w", after, err)
	}
	next = after
	if r.Last != nil {
		next = r.Last
	}
	if !r.Final {
		b.progress(ctx, "copy", total, res, next)
	}
	return next, r.Final, true, nil
}
