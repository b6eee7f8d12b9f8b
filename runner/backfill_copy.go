package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// ErrNoPassThrough wraps the reason a backfill cannot stream its chunks
// from the source's COPY into the sink's (CopySnapshot, CopySinkTx); its
// rows then go through sluice.
var ErrNoPassThrough = errors.New("backfill chunks cannot pass through as COPY text")

// DefaultPassThroughChunk is the number of source rows per chunk of a
// pass-through backfill when BackfillOptions.Chunk is not set: its rows
// never pass through sluice's memory, so a chunk can be larger than
// DefaultBackfillChunk and pay the per-transaction cost less often.
const DefaultPassThroughChunk = 100_000

// CopySnapshot is a SnapshotReader that can write its chunks, filtered and
// projected in the source database, in a COPY text format (a
// pass-through backfill: no row is decoded in sluice).
type CopySnapshot interface {
	SnapshotReader
	// PrepareCopy compiles p's filter and projection into the chunk
	// query. An error wrapping ErrNoPassThrough means the plan cannot run
	// as the source's SQL (rows then go through sluice); other errors are
	// the database's.
	PrepareCopy(ctx context.Context, p *plan.Plan) (CopyChunks, error)
}

// CopyChunks writes the chunks of one snapshot in a COPY text format.
type CopyChunks interface {
	// Format names the text format, e.g. "postgres" (PostgreSQL's COPY
	// text format with its types' output functions).
	Format() string
	// Types is the database type of each output column (as the source
	// names it, e.g. "numeric(12,2)"), aligned with SinkStage.Schema.
	Types() []string
	// Bound returns the primary key (canonical values) of the n-th row
	// after `after` (nil: from the start) in key order, with ok true; when
	// fewer than n rows follow, ok is false and rows is how many do. On
	// ok, rows is n.
	Bound(ctx context.Context, after []any, n int) (key []any, rows int64, ok bool, err error)
	// Copy writes the rows whose key is in (after, upTo] (nil bounds are
	// open), filtered and projected, in key order, to w. A failure leaves
	// the snapshot usable.
	Copy(ctx context.Context, w io.Writer, after, upTo []any) error
	// Steps describes the statements, for --dry-run.
	Steps() []plan.Step
}

// CopySinkTx is a SinkTx that can load COPY text straight into its
// target.
type CopySinkTx interface {
	SinkTx
	// TargetEmpty reports whether the target has no row, in the
	// transaction.
	TargetEmpty(ctx context.Context) (bool, error)
	// AcceptCopy reports whether CopyFrom can load rows in format whose
	// columns have the database types types (aligned with
	// SinkStage.Schema); newKeys tells that no row's key is in the target
	// yet (a merge may then insert them as they are). When it cannot, why
	// says so.
	AcceptCopy(ctx context.Context, format string, types []string, newKeys bool) (ok bool, why string, err error)
	// CopyFrom loads the rows r holds (as accepted) into the target and
	// returns how many it read. On error the transaction is unusable
	// (roll it back).
	CopyFrom(ctx context.Context, r io.Reader) (int64, error)
}

// NewKeysSink is a CopySinkTx that can tell, for a merge into a target
// that had rows when the backfill began, that a chunk's keys are new to
// the target, so the chunk is loaded as it is (as into an empty target)
// instead of being staged and merged.
type NewKeysSink interface {
	// NoKeysIn reports whether the chunk whose source primary keys (the
	// columns keys, of types types, compared as rows in that order) lie
	// in (after, upTo] (nil: open) may be loaded straight into the
	// target: the target holds none of them, and a key it holds after
	// all (the two databases order keys differently) fails CopyFrom
	// rather than being stored twice.
	NoKeysIn(ctx context.Context, keys []string, types []cdc.Type, after, upTo []any) (bool, error)
}

// CopyRefusal returns why a sink that loads COPY text in format accepted
// cannot load a chunk in format with ntypes columns into the target of
// st, whose rows have ncols columns, whatever the sink (a
// CopySinkTx.AcceptCopy's shared refusals): another format, a SQL MERGE
// INTO job, a history sink or one that adds columns of its own (soft
// deletes), a column count that differs. "" when none applies.
func CopyRefusal(st *plan.SinkStage, format, accepted string, ntypes, ncols int) string {
	switch {
	case format != accepted:
		return fmt.Sprintf("the source writes %q COPY text", format)
	case st.Merge != nil:
		return "a SQL MERGE INTO job"
	case st.Mode == plan.ModeHistory || len(st.AddedColumns()) > 0:
		return fmt.Sprintf("mode %s writes columns of its own", st.Mode)
	case ntypes != ncols:
		return fmt.Sprintf("the source writes %d columns, the sink %d", ntypes, ncols)
	}
	return ""
}

// passThrough is a backfill's pass-through state.
type passThrough struct {
	src   CopyChunks
	size  int // source rows per chunk
	goLen int // chunks of the sluice path left before trying again after a failure
	// staged: every chunk of a merge into a target with rows is staged
	// (NewKeysSink is not asked again) since a chunk loaded straight
	// into the target failed.
	staged bool
}

// passThrough prepares the pass-through of snap, or returns nil when the
// source or the plan cannot have it (logged).
func (b *backfill) passThrough(ctx context.Context, snap SnapshotReader) (*passThrough, error) {
	cs, ok := snap.(CopySnapshot)
	if !ok {
		return nil, nil
	}
	cc, err := cs.PrepareCopy(ctx, b.prep.Plan)
	if errors.Is(err, ErrNoPassThrough) {
		b.r.log().Info("backfill: rows go through sluice", "job", b.job, "why", err.Error())
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	size := b.opt.Chunk
	if !b.chunkSet {
		size = DefaultPassThroughChunk
	}
	return &passThrough{src: cc, size: size}, nil
}

// errCopyFailed wraps a pass-through chunk's failure that the sluice path
// may explain (a value the target refuses) or avoid.
type errCopyFailed struct {
	err    error
	direct bool // the chunk was loaded straight into a merge target (NewKeysSink)
}

func (e *errCopyFailed) Error() string { return e.err.Error() }
func (e *errCopyFailed) Unwrap() error { return e.err }

// copyChunk copies the next chunk after `after` through the pass-through
// and commits it with the state (or, when it is the last, the hand-off
// checkpoint off). It returns the chunk's last key and whether it was the
// last. An error wrapping ErrNoPassThrough means the target cannot take
// the rows as COPY text; an *errCopyFailed, that the COPY failed (nothing
// committed, the snapshot still usable).
func (b *backfill) copyChunk(ctx context.Context, pt *passThrough, after []any, off cdc.Offset, res *BackfillResult) ([]any, bool, error) {
	bound, n, ok, err := pt.src.Bound(ctx, after, pt.size)
	if err != nil {
		return nil, false, err
	}
	final := !ok
	sp := b.cont
	if b.state.Chunks == 0 {
		sp = b.first
	}
	tx, err := b.beginChunk(ctx, sp, final)
	if err != nil {
		return nil, false, err
	}
	defer tx.Rollback(ctx)
	ct, isCopy := tx.(CopySinkTx)
	if !isCopy {
		return nil, false, fmt.Errorf("%w: the sink cannot load COPY text", ErrNoPassThrough)
	}
	next := *b.state
	if next.Chunks == 0 && !b.resume {
		// A merge into a target that is empty when the backfill starts
		// receives new keys only, in key order: chunks insert them as they
		// are (a resume's catch-up touches only keys already copied).
		if next.TargetEmpty, err = ct.TargetEmpty(ctx); err != nil {
			return nil, false, err
		}
	}
	newKeys, direct := next.TargetEmpty, false
	if ks, ok := ct.(NewKeysSink); ok && b.merge && !newKeys && !pt.staged {
		if direct, err = ks.NoKeysIn(ctx, b.keyNames, b.keyT, after, bound); err != nil {
			return nil, false, err
		}
		newKeys = direct
	}
	accept, why, err := ct.AcceptCopy(ctx, pt.src.Format(), pt.src.Types(), newKeys)
	if err != nil {
		return nil, false, err
	}
	if !accept {
		return nil, false, fmt.Errorf("%w: %s", ErrNoPassThrough, why)
	}
	pr, pw := io.Pipe()
	srcErr := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(pw, 256<<10)
		err := pt.src.Copy(ctx, bw, after, bound)
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
		srcErr <- err
	}()
	_, err = ct.CopyFrom(ctx, pr)
	if err != nil {
		// Let the source finish its COPY (its connection must not be cut
		// mid-stream: the snapshot lives on it).
		_, _ = io.Copy(io.Discard, pr)
		<-srcErr
		return nil, false, &errCopyFailed{err: err, direct: direct}
	}
	if err := <-srcErr; err != nil {
		return nil, false, &errCopyFailed{err: err}
	}
	next.Chunks++
	next.Rows += n
	if !final {
		next.LastKey = encodeKey(bound, b.keyT)
	}
	cp := stateOffset(&next)
	if final {
		cp = off
	}
	if err := b.commit(ctx, tx, cp, res); err != nil {
		return nil, false, err
	}
	res.Chunks++
	res.PassThrough++
	if direct {
		res.Direct++
	}
	res.Rows += n
	res.TotalRows, *b.state = next.Rows, next
	if final {
		return after, true, nil
	}
	return bound, false, nil
}

// passThroughSteps lists the pass-through's steps for --dry-run, for a
// sink of the given backend ("postgres" loads the text with COPY FROM
// STDIN; "sqlite" parses it and writes each value's storage form with
// prepared multi-row INSERTs, sinks/sqlite CopyFrom).
func passThroughSteps(pt *passThrough, backend string) []plan.Step {
	out := slices.Clone(pt.src.Steps())
	if backend == "sqlite" {
		return append(out,
			plan.Step{Where: "sluice", What: "stream each chunk's COPY text from the source's COPY to the sink, through a pipe; each value's text is turned into the form the SQLite target stores without decoding the row; a chunk that fails is done again through sluice, which names the row and column"},
			plan.Step{Where: "sink", What: "per chunk: in one transaction, multi-row INSERT INTO target of the chunk's rows (a merge target only while it was empty at the start; else the rows go through sluice), with the job's checkpoint"})
	}
	return append(out,
		plan.Step{Where: "sluice", What: "stream each chunk's COPY text from the source's COPY into the sink's, through a pipe (no row is decoded); a chunk whose COPY fails is done again through sluice, which names the row and column"},
		plan.Step{Where: "sink", What: "per chunk: in one transaction, COPY target FROM STDIN (a merge target that was not empty at the start: when it holds no key of the chunk's key range and has a unique index on the keys, COPY into the target too; else COPY into a TEMP table, then INSERT … ON CONFLICT (keys) DO UPDATE), with the job's checkpoint"})
}
