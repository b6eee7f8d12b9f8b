package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// DefaultBackfillChunk is the number of rows per chunk when
// BackfillOptions.Chunk is not positive.
const DefaultBackfillChunk = 10000

// BackfillPartition is the partition of a job's checkpoint offset that
// holds the state of an incomplete backfill.
const BackfillPartition = "backfill"

// Errors of Backfill (test with errors.Is).
var (
	ErrNoSnapshot         = errors.New("source cannot snapshot its table for a backfill")
	ErrAlreadyConsumed    = errors.New("job has already consumed its stream")
	ErrBackfillInProgress = errors.New("a backfill of the job is incomplete")
	ErrBackfillResume     = errors.New("backfill cannot resume into this target")
	ErrBackfillRestart    = errors.New("backfill cannot restart")
	ErrCheckpointMoved    = errors.New("the job's checkpoint changed during the backfill")
)

// BackfillOptions tune Runner.Backfill.
type BackfillOptions struct {
	// Chunk is the number of source rows per chunk (one sink transaction
	// each); 0 → DefaultBackfillChunk.
	Chunk int
	// Restart discards an incomplete backfill and starts over (see
	// Runner.Backfill for when it is allowed).
	Restart bool
	// Progress, when set, is called after every committed chunk (and after
	// a resume's catch-up) on the goroutine running Backfill. Cancelling
	// Backfill's context from it stops the backfill after that commit.
	Progress func(ctx context.Context, p BackfillProgress)
}

// BackfillProgress reports a committed step of a backfill.
type BackfillProgress struct {
	Job     string
	Phase   string // "start", "catchup", "copy" or "done"
	Total   int64  // rows in the current snapshot
	Rows    int64  // source rows copied, by every attempt of this backfill
	Chunks  int    // chunks committed by this call
	LastKey []any  // primary key of the last row copied (canonical values)
}

// BackfillResult reports one call of Runner.Backfill.
type BackfillResult struct {
	Job        string
	Start, End time.Time // UTC
	Rows       int64     // source rows copied by this call
	TotalRows  int64     // source rows copied by every attempt
	Chunks     int       // chunks committed by this call
	CaughtUp   int64     // changes applied by a resume's catch-up
	Written    map[cdc.Op]int64
	Resumed    bool
	Restarted  bool
	HandOff    cdc.Offset // the job's checkpoint and the stream's offset after the backfill
	Skipped    string     // why nothing was done ("" when the backfill ran)

	// PassThrough counts the chunks of Chunks that streamed from the
	// source's COPY into the sink's without passing through sluice
	// (CopySnapshot, CopySinkTx).
	PassThrough int
	// Direct counts the chunks of PassThrough that a merge into a target
	// with rows loaded straight into the target, none of their keys
	// being there (NewKeysSink), instead of staging and merging them.
	Direct int
}

// BackfillPlan is what `sluice backfill --dry-run` shows.
type BackfillPlan struct {
	Plan    *plan.Plan // the job's plan with the backfill's steps
	Rows    int64      // rows in the snapshot (the whole table)
	Offset  cdc.Offset // the snapshot's offset: the hand-off if the copy finished with it
	Chunk   int        // rows per chunk
	Resume  bool       // an incomplete backfill would continue after LastKey
	Copied  int64      // rows it copied so far
	LastKey []any
	Skipped string // why a backfill would do nothing
}

// BackfillInProgress returns an error wrapping ErrBackfillInProgress when
// cp is the checkpoint of an incomplete backfill, nil otherwise. A run
// must not start from such a checkpoint.
func BackfillInProgress(cp Checkpoint) error {
	if _, ok := cp.Offset.Get(BackfillPartition); ok {
		return fmt.Errorf("job %s: %w: finish it with `sluice backfill JOBFILE` (the job file of %s; or start over with --restart) before running the job", cp.Job, ErrBackfillInProgress, cp.Job)
	}
	return nil
}

// backfillState is the JSON stored under BackfillPartition.
type backfillState struct {
	V             int       `json:"v"`
	StreamID      string    `json:"stream_id"`
	From          string    `json:"from"`     // the stream's offset when the backfill started
	First         string    `json:"first"`    // the first snapshot's offset
	Snapshot      string    `json:"snapshot"` // offset every copied row is at
	LastKey       []*string `json:"last_key"`
	Rows          int64     `json:"rows"`
	Chunks        int       `json:"chunks"`
	Started       time.Time `json:"started"`
	CreatedTarget bool      `json:"created_target"`
	// TargetEmpty: the target had no row when the first chunk was
	// copied, so a merge's chunks insert new keys (backfill_copy.go).
	TargetEmpty bool `json:"target_empty,omitempty"`
}

// backfill is one call of Runner.Backfill or PlanBackfill.
type backfill struct {
	r        *Runner
	prep     *Prepared
	opt      BackfillOptions
	job      string
	src      Snapshotter
	info     *StreamInfo
	first    SinkPlan // the first chunk's sink (the plan's mode; overwrite to restart)
	cont     SinkPlan // later chunks and the catch-up (append for append-like modes)
	merge    bool
	expect   string // the checkpoint offset (encoded) each transaction must find; "" none
	state    *backfillState
	resume   bool
	restart  bool
	wipe     bool       // restart: the first chunk deletes the target's rows
	from     cdc.Offset // the offset the snapshot is taken relative to
	skipped  string
	keyIdx   []int      // primary key columns in the table schema
	keyT     []cdc.Type // and their types
	keyNames []string   // and their names

	// chunkSet: BackfillOptions.Chunk was set (a pass-through
	// backfill otherwise uses DefaultPassThroughChunk).
	chunkSet bool
}

func (r *Runner) newBackfill(ctx context.Context, prep *Prepared, opt BackfillOptions) (*backfill, error) {
	p := prep.Plan
	chunkSet := opt.Chunk > 0
	if !chunkSet {
		opt.Chunk = DefaultBackfillChunk
	}
	b := &backfill{r: r, prep: prep, opt: opt, job: p.Job.Name, chunkSet: chunkSet}
	if p.Sink.Backend == "stdout" {
		return nil, fmt.Errorf("a stdout sink has nothing to backfill; use `sluice preview`")
	}
	var ok bool
	if b.src, ok = prep.source.(Snapshotter); !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoSnapshot, prep.source.Scheme())
	}
	info, err := prep.source.Stream(ctx, p.Job.Source)
	if err != nil {
		return nil, err
	}
	if len(info.TableSchema.Key) == 0 {
		return nil, fmt.Errorf("table %s has no primary key: a backfill pages through it by key", info.Table)
	}
	b.info = info
	b.keyIdx, _ = info.TableSchema.KeyIndexes()
	for _, k := range b.keyIdx {
		b.keyT = append(b.keyT, info.TableSchema.Columns[k].Type)
		b.keyNames = append(b.keyNames, info.TableSchema.Columns[k].Name)
	}
	b.merge = p.Sink.Mode == plan.ModeMerge && p.Sink.Merge == nil
	if err := b.load(ctx); err != nil {
		return nil, err
	}
	// Later chunks must not apply the mode's table-level effect again.
	mode, contMode := p.Sink.Mode, p.Sink.Mode
	switch mode {
	case plan.ModeOverwrite, plan.ModeErrorIfExists, plan.ModeIgnore:
		contMode = plan.ModeAppend
	}
	if b.wipe {
		mode = plan.ModeOverwrite // deletes the partial copy in the first chunk's transaction
	}
	if b.first, err = b.sinkPlan(ctx, mode); err != nil {
		return nil, err
	}
	b.cont = b.first
	if contMode != mode {
		if b.cont, err = b.sinkPlan(ctx, contMode); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (b *backfill) sinkPlan(ctx context.Context, mode plan.Mode) (SinkPlan, error) {
	st := b.prep.Plan.Sink
	st.Mode = mode
	return b.prep.sink.PrepareSink(ctx, &st)
}

// load reads the job's checkpoint and decides: fresh, resume or restart.
func (b *backfill) load(ctx context.Context) error {
	st := b.prep.Plan.Sink
	st.Mode = plan.ModeAppend // never fails on an existing target; rolled back
	sp, err := b.prep.sink.PrepareSink(ctx, &st)
	if err != nil {
		return err
	}
	tx, err := sp.Begin(ctx, b.job)
	if err != nil {
		return err
	}
	cp, ok, err := tx.Checkpoint(ctx)
	_ = tx.Rollback(ctx)
	if err != nil {
		return err
	}
	_, exists, err := b.prep.sink.Target(ctx, st.Table)
	if err != nil {
		return err
	}
	b.from = b.info.Offset
	if ok {
		b.expect = cp.Offset.Encode()
	}
	raw, inProgress := cp.Offset.Get(BackfillPartition)
	switch {
	case ok && inProgress:
		var old backfillState
		if err := json.Unmarshal([]byte(raw), &old); err != nil {
			return fmt.Errorf("backfill state: %w", err)
		}
		if b.opt.Restart || old.StreamID != b.info.ID {
			if !b.opt.Restart {
				return fmt.Errorf("%w: it was started on an earlier incarnation of stream %s; start over with `sluice backfill --restart JOBFILE` (the job file of %s)", ErrBackfillResume, b.info.Name, b.job)
			}
			if exists && !old.CreatedTarget && b.prep.Plan.Sink.Mode != plan.ModeOverwrite {
				return fmt.Errorf("%w: target %s existed before the backfill, so sluice cannot tell the %d rows it copied from the others; delete them (or drop the target) yourself, then run `sluice backfill --restart JOBFILE` (the job file of %s) again", ErrBackfillRestart, st.Table, old.Rows, b.job)
			}
			b.restart, b.wipe = true, exists
			b.state = b.fresh(old.CreatedTarget || !exists)
			return nil
		}
		if !exists {
			return fmt.Errorf("%w: target %s no longer exists, so the %d rows copied before the interruption are gone; start over with `sluice backfill --restart JOBFILE` (the job file of %s)", ErrBackfillResume, st.Table, old.Rows, b.job)
		}
		if !b.merge {
			return fmt.Errorf("%w: %d rows were copied before the interruption; continuing from a new snapshot would fold the changes made since into the remaining rows of an append-style target (mode %s) instead of appending them as change rows. Start over with `sluice backfill --restart JOBFILE` (the job file of %s) (deletes the partial copy when the backfill created target %s)", ErrBackfillResume, old.Rows, b.prep.Plan.Sink.Mode, b.job, st.Table)
		}
		b.state, b.resume = &old, true
		if b.from, err = cdc.DecodeOffset(old.Snapshot); err != nil {
			return fmt.Errorf("backfill state: %w", err)
		}
		return nil
	case ok && cp.StreamID == b.info.ID:
		return fmt.Errorf("%w (checkpoint %s, %s): backfill is for a target that has not consumed the stream yet; for a new copy, point the job at a new target under a new job name",
			ErrAlreadyConsumed, cp.Offset, cp.Updated.Format(time.RFC3339))
	}
	if b.prep.Plan.Sink.Mode == plan.ModeIgnore && exists {
		b.skipped = fmt.Sprintf("target %s exists and mode is ignore", st.Table)
	}
	b.state = b.fresh(!exists)
	return nil
}

func (b *backfill) fresh(created bool) *backfillState {
	return &backfillState{V: 1, StreamID: b.info.ID, From: b.info.Offset.Encode(), Started: time.Now().UTC(), CreatedTarget: created}
}

// Backfill is `sluice backfill JOB`, the run-once path for new targets:
// it copies the job's source table to its sink and hands off to the
// stream. prep comes from Plan. It returns what it did; on error nothing of
// the failing chunk is committed (earlier chunks are, and a later call
// resumes after them). Errors naming a row carry its key. Refusals wrap
// ErrNoSnapshot, ErrAlreadyConsumed, ErrBackfillResume or
// ErrBackfillRestart; a concurrent change of the job's checkpoint wraps
// ErrCheckpointMoved.
//
// # What it does
//
// Runner.Backfill copies the rows of the job's source table, as of one
// snapshot, to the job's sink as INSERT changes, in primary-key order, in
// chunks of BackfillOptions.Chunk rows (a keyset scan, so memory is bounded
// by one chunk whatever the table's size). Each chunk goes through the
// plan's filter and projection exactly as a run's changes do (the filter
// sees __change_type = 'INSERT') and is committed in its own sink
// transaction (SinkPlan.Begin … SinkTx.Commit) together with the backfill's
// state. The last chunk's transaction stores the hand-off checkpoint
// instead; then the stream's offset is advanced to it.
//
// # Inside the sink's database
//
// When the snapshot is an EngineCopier (SQLite into SQLite: the same file,
// or another file attached read-only to the sink's connection) and the
// job's filter and projection have SQL forms, each chunk is one write
// transaction of the sink's database that checks the job's checkpoint,
// reads the source change log's last position — the table is still as in
// the snapshot only while it is the snapshot's offset, since every write
// to a tracked table logs a change — copies the chunk with SQL (INSERT …
// SELECT … WHERE key > ? ORDER BY key LIMIT ?, or the sink's merge
// statements) and stores the state, so no row passes through sluice. When
// the log has moved, the rest is read from the snapshot, whose read
// transaction still holds it, and goes through sluice as below; a chunk
// whose value does not fit is copied again through sluice, whose error
// names the row.
//
// # Streamed as COPY text
//
// Otherwise, when the snapshot is a CopySnapshot and the sink's
// transaction a CopySinkTx that accepts its format and column types
// (PostgreSQL into PostgreSQL; SQLite into PostgreSQL, whose stored
// values in sluice's forms are written as PostgreSQL COPY text without
// being decoded: sources/sqlite PrepareCopy; PostgreSQL into SQLite,
// whose sink turns each value's COPY text into its storage form without
// decoding the row: sinks/sqlite CopyFrom), each chunk streams from the
// source's COPY into the sink's (backfill_copy.go); a chunk whose COPY
// fails (a value the target refuses, or a SQLite value not in sluice's
// form) is copied again through sluice, which converts it as a run does
// or names the row.
//
// # Where the state lives
//
// The state (stream id, snapshot offsets, last key copied, rows, chunks,
// start time, whether the backfill created the target) is JSON stored as
// partition BackfillPartition of the job's checkpoint offset — the
// checkpoint row every sink already commits atomically with the rows
// (sluice_checkpoints / sluice.checkpoints). This needs no change to the
// sinks (SinkTx has no way to run other SQL in its transaction), and a
// chunk's rows and the state that covers them are one commit: a failed or
// interrupted chunk commits neither. While a backfill is incomplete the
// checkpoint holds no "" position, so a stream read from it fails; runs
// should refuse it up front with BackfillInProgress (and must not run the
// job meanwhile: a run would consume the stream for an incomplete
// target). Each chunk transaction re-reads the
// checkpoint and fails if it is not the one the backfill last wrote, so two
// backfills of one job (or a run in between) cannot interleave.
//
// # Hand-off (no gap, no duplicate)
//
// A snapshot S has an offset O(S): the read point a stream read from the
// job's position would produce in S's transaction (Snapshotter). The rows
// S shows are the table's state at O(S): every change at or before O(S)
// is in them and every later change is after O(S) in the stream. When the
// copy completes, the job's checkpoint becomes O(S) of the snapshot the
// copy finished with, in the same transaction as the last chunk, and the
// stream's offset is moved there (compare-and-set, only if it is still
// where it was when the backfill started). The next run reads exactly the
// changes after O(S) — every change committed during the backfill, once.
//
// # Durability
//
// Every chunk but the last commits without waiting for the disk when the
// sink can (DeferredSyncPlan: SQLite synchronous = NORMAL in WAL mode,
// PostgreSQL synchronous_commit = off); the last chunk's commit, which
// stores the hand-off checkpoint, is durable as every run's commit is, and
// only after it returns is the stream's offset moved. This is safe because
// nothing outside the sink depends on a chunk before the last: the
// backfill's progress is its own state in the job's checkpoint row,
// committed atomically with the chunk's rows, and the stream's offset (and
// so the source's change log) stays where it was until the hand-off. A
// machine crash can only undo the newest commits of the sink database,
// whole and in order (a SQLite WAL is replayed up to its last valid
// commit; PostgreSQL replays its WAL in commit order), so the sink then
// holds the rows of the chunks that survived and the state naming exactly
// them: the next `sluice backfill` resumes or restarts from that state as
// after any interruption, and the lost chunks are simply copied again. The
// last commit is durable before the offset moves, and it makes every
// earlier commit durable with it (SQLite syncs the WAL file that holds
// their frames; PostgreSQL flushes its WAL up to the commit). The resume's
// catch-up commits durably too. What costs: one disk flush per backfill
// instead of one per chunk (a SQLite chunk of 10,000 rows spent most of
// its time waiting for its fsync on a shared disk, docs/benchmarks.md).
//
// # Resume after an interruption
//
// An uninterrupted backfill uses one snapshot S1 and hands off at O1. After
// an interruption with keys up to K copied as of O1, a new snapshot S2 (O2
// at or after O1) continues after K. Before it copies anything, it catches
// the rows at or before K up from O1 to O2: the stream's changes in
// (O1, O2] for keys <= K (SnapshotReader.Catchup, read in S2, filtered by
// key in SQL) are filtered, projected and written in one sink transaction
// that also records O2 as the state's snapshot. Every key is then at O2
// and the backfill hands off at O2. (Handing off at O1 with rows after K
// copied as of O2 would be wrong even for merge targets: a key inserted in
// (O1, O2] and deleted after O2 has no net change after O1, so it would
// stay in the target; a key changed and changed back likewise.)
//
// For a merge target (mode merge) this is exact: every key ends in the
// same state as after an uninterrupted backfill followed by a run, only
// the batching of net changes differs (as between one run and two).
//
// For append-style targets (append, overwrite, errorifexists, ignore) and
// SQL MERGE INTO jobs, Backfill refuses to resume (ErrBackfillResume):
// nothing would be applied twice, but the changes in (O1, O2] to keys
// after K would be folded into those rows' snapshot values instead of
// arriving as change rows, so the target would not be what an
// uninterrupted backfill produces (for MERGE INTO, user clauses need not
// be idempotent). Restart instead: `sluice backfill --restart JOB`
// (BackfillOptions.Restart) starts over with a new snapshot and, in the
// first chunk's transaction, deletes every row of the target (mode
// overwrite) — allowed only when the backfill created the target (all its
// rows are the partial copy) or the job's mode is overwrite anyway. For a
// target that existed before, delete the copied rows (or drop the target)
// yourself, then restart.
//
// # Refusals
//
// A job that already has a checkpoint for its stream (it has run, or was
// backfilled) is refused with ErrAlreadyConsumed: backfill is for a target
// that has not consumed the stream yet. Stdout sinks, sources that are not
// Snapshotters and tables without a primary key are refused too.
func (r *Runner) Backfill(ctx context.Context, prep *Prepared, opt BackfillOptions) (res *BackfillResult, err error) {
	res = &BackfillResult{Job: prep.Plan.Job.Name, Start: time.Now().UTC(), Written: map[cdc.Op]int64{}}
	defer func() {
		res.End = time.Now().UTC()
		if err != nil {
			err = &RunError{Job: res.Job, Err: err}
		}
	}()
	b, err := r.newBackfill(ctx, prep, opt)
	if err != nil {
		return res, err
	}
	if b.skipped != "" {
		res.Skipped = b.skipped
		return res, nil
	}
	res.Resumed, res.Restarted = b.resume, b.restart
	snap, err := b.src.Snapshot(ctx, b.info, b.from)
	if err != nil {
		return res, err
	}
	defer snap.Close()
	total, err := snap.Count(ctx)
	if err != nil {
		return res, err
	}
	off := snap.Offset()
	if b.state.First == "" {
		b.state.First = off.Encode()
	}
	r.log().Info("backfill started", "job", b.job, "stream", b.info.Name, "rows", total, "offset", off.String(), "resume", b.resume, "restart", b.restart)
	after, err := b.lastKey()
	if err != nil {
		return res, err
	}
	b.progress(ctx, "start", total, res, after)
	if b.resume && b.state.Snapshot != off.Encode() {
		if err := b.catchup(ctx, snap, after, res); err != nil {
			return res, err
		}
		b.progress(ctx, "catchup", total, res, after)
	}
	b.state.Snapshot = off.Encode()
	// Inside the sink's database if it can; else streamed as COPY text
	// if it can; else through sluice.
	ec := b.engineCopy(ctx, snap)
	var pt *passThrough
	if ec == nil {
		if pt, err = b.passThrough(ctx, snap); err != nil {
			return res, err
		}
	}
	ra := &readAhead{snap: snap, n: b.opt.Chunk}
	defer func(ec EngineCopy) {
		// The read-ahead ends before the engine copy closes and before
		// snap.Close, which share the snapshot with it.
		ra.wait()
		if ec != nil {
			_ = ec.Close()
		}
	}(ec)
	for {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		start := after
		if ec != nil {
			next, final, keep, err := b.engineStep(ctx, ec, after, total, off, res)
			if err != nil {
				return res, err
			}
			if !keep {
				ec = nil // the rest goes through sluice
				continue
			}
			after = next
			if final {
				break
			}
			continue
		}
		if pt != nil && pt.goLen <= 0 {
			next, final, err := b.copyChunk(ctx, pt, after, off, res)
			if err == nil && final {
				break
			}
			if err == nil {
				after = next
				b.progress(ctx, "copy", total, res, after)
				continue
			}
			var cf *errCopyFailed
			switch {
			case errors.Is(err, ErrNoPassThrough):
				r.log().Info("backfill: rows go through sluice", "job", b.job, "why", err.Error())
				pt = nil
			case errors.As(err, &cf) && cf.direct && ctx.Err() == nil:
				// A key of the chunk was in the target after all (its
				// order differs from the source's): stage this chunk
				// and the rest.
				r.log().Info("backfill: a chunk loaded straight into the merge target met a key it holds; staging every chunk from now on", "job", b.job, "after", start, "err", err.Error())
				pt.staged = true
			case errors.As(err, &cf) && ctx.Err() == nil:
				// Done again through sluice, which names a failing row.
				r.log().Warn("backfill: a chunk's COPY failed; copying its rows through sluice", "job", b.job, "after", start, "err", err.Error())
				pt.goLen = (pt.size + b.opt.Chunk - 1) / b.opt.Chunk
			default:
				return res, fmt.Errorf("chunk after key %v: %w", start, err)
			}
			continue
		}
		if pt != nil {
			pt.goLen--
		}
		rows, err := ra.next(ctx, after)
		final := len(rows) < b.opt.Chunk
		if err == nil && len(rows) > 0 {
			after = b.keyOf(rows[len(rows)-1].Row)
		}
		if err == nil && !final && (pt == nil || pt.goLen > 0) {
			ra.start(ctx, after) // the next chunk takes this path too
		}
		if err == nil {
			err = b.commitChunk(ctx, rows, after, final, off, res)
		}
		if err != nil {
			return res, fmt.Errorf("chunk after key %v: %w", start, err)
		}
		if final {
			break
		}
		b.progress(ctx, "copy", total, res, after)
	}
	res.HandOff = off
	b.progress(ctx, "done", total, res, after)
	_ = snap.Close()
	b.advanceStream(ctx, off)
	r.log().Info("backfill complete", "job", b.job, "rows", res.TotalRows, "chunks", res.Chunks, "handoff", off.String())
	return res, nil
}

func (b *backfill) progress(ctx context.Context, phase string, total int64, res *BackfillResult, key []any) {
	if b.opt.Progress != nil {
		b.opt.Progress(ctx, BackfillProgress{Job: b.job, Phase: phase, Total: total, Rows: b.state.Rows, Chunks: res.Chunks, LastKey: key})
	}
}

// begin opens a chunk's sink transaction and checks that the job's
// checkpoint is still the one this backfill last saw (compare-and-set).
func (b *backfill) begin(ctx context.Context, sp SinkPlan) (SinkTx, error) {
	return b.beginTx(ctx, sp, false)
}

// beginChunk is begin for a chunk of the copy: one that is not the last
// (final false) commits without waiting for the disk when the sink can
// (DeferredSyncPlan; see "Durability" in Runner.Backfill's doc).
func (b *backfill) beginChunk(ctx context.Context, sp SinkPlan, final bool) (SinkTx, error) {
	return b.beginTx(ctx, sp, !final)
}

func (b *backfill) beginTx(ctx context.Context, sp SinkPlan, deferred bool) (SinkTx, error) {
	var tx SinkTx
	var err error
	if ds, ok := sp.(DeferredSyncPlan); ok && deferred {
		tx, err = ds.BeginDeferred(ctx, b.job)
	} else {
		tx, err = sp.Begin(ctx, b.job)
	}
	if err != nil {
		return nil, err
	}
	cp, ok, err := tx.Checkpoint(ctx)
	if err == nil && (ok && cp.Offset.Encode() != b.expect || !ok && b.expect != "") {
		err = fmt.Errorf("%w: expected %s, found %s (another backfill or run of job %s?)", ErrCheckpointMoved, b.expect, cp.Offset.Encode(), b.job)
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return tx, nil
}

// commit stores cp with what tx wrote and remembers it for the next CAS.
func (b *backfill) commit(ctx context.Context, tx SinkTx, off cdc.Offset, res *BackfillResult) error {
	cp := Checkpoint{Job: b.job, Stream: b.info.Name, StreamID: b.info.ID, Offset: off, Updated: time.Now().UTC()}
	stats, err := tx.Commit(ctx, cp)
	if err != nil {
		return err
	}
	for op, n := range stats.Written {
		res.Written[op] += n
	}
	b.expect = off.Encode()
	return nil
}

func stateOffset(st *backfillState) cdc.Offset {
	js, err := json.Marshal(st)
	if err != nil { // plain strings, ints and a time always marshal
		panic(err)
	}
	return cdc.Offset{Positions: map[string]string{BackfillPartition: string(js)}}
}

// commitChunk writes one chunk (filtered and projected) with the new
// state, or, for the final chunk, with the hand-off checkpoint off.
func (b *backfill) commitChunk(ctx context.Context, rows []cdc.Change, key []any, final bool, off cdc.Offset, res *BackfillResult) error {
	out, err := b.prep.transform(rows, map[cdc.Op]int64{})
	if err != nil {
		return err
	}
	sp := b.cont
	if b.state.Chunks == 0 {
		sp = b.first
	}
	tx, err := b.beginChunk(ctx, sp, final)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if len(out) > 0 {
		if err := tx.Write(ctx, out); err != nil {
			return err
		}
	}
	next := *b.state
	if len(rows) > 0 || next.Chunks == 0 {
		next.Chunks++
	}
	next.Rows += int64(len(rows))
	next.LastKey = encodeKey(key, b.keyT)
	cp := stateOffset(&next)
	if final {
		cp = off
	}
	if err := b.commit(ctx, tx, cp, res); err != nil {
		return err
	}
	res.Chunks += next.Chunks - b.state.Chunks
	res.Rows += int64(len(rows))
	res.TotalRows, *b.state = next.Rows, next
	return nil
}

// catchup applies the changes in (state.Snapshot, snapshot] to the keys
// already copied, in one sink transaction that records the new snapshot.
func (b *backfill) catchup(ctx context.Context, snap SnapshotReader, upTo []any, res *BackfillResult) error {
	rd, err := snap.Catchup(ctx, upTo, ReadOptions{BatchSize: b.r.batchSize()})
	if err != nil {
		return err
	}
	defer rd.Close()
	tx, err := b.begin(ctx, b.cont)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	var n int64
	read := map[cdc.Op]int64{}
	for {
		batch, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		out, err := b.prep.transform(batch, read)
		if err != nil {
			return err
		}
		n += int64(len(batch))
		if len(out) > 0 {
			if err := tx.Write(ctx, out); err != nil {
				return err
			}
		}
	}
	next := *b.state
	next.Snapshot = snap.Offset().Encode()
	if err := b.commit(ctx, tx, stateOffset(&next), res); err != nil {
		return fmt.Errorf("catch up the %d rows copied before the interruption: %w", b.state.Rows, err)
	}
	res.CaughtUp, *b.state = n, next
	b.r.log().Info("backfill caught up", "job", b.job, "changes", n, "to", snap.Offset().String())
	return nil
}

// advanceStream moves the stream's offset to the hand-off offset when it
// is still where it was when the backfill started (else another consumer
// moved it and it is left alone: the job's checkpoint governs its runs).
func (b *backfill) advanceStream(ctx context.Context, to cdc.Offset) {
	cur, err := b.prep.source.Stream(ctx, b.prep.Plan.Job.Source)
	if err == nil && cur.ID != b.info.ID {
		err = fmt.Errorf("stream %s was recreated during the backfill", b.info.Name)
	}
	if err == nil && cur.Offset.Encode() != b.state.From {
		if !cur.Offset.Equal(to) {
			b.r.log().Warn("stream offset moved during the backfill; left as is (the job's checkpoint governs its runs)", "job", b.job, "stream", b.info.Name, "offset", cur.Offset.String())
		}
		return
	}
	if err == nil {
		err = b.prep.source.Advance(ctx, cur, cur.Offset, to)
	}
	if err != nil {
		b.r.log().Warn("stream offset not advanced; the job's checkpoint holds the hand-off offset and will be used", "job", b.job, "stream", b.info.Name, "err", err)
	}
}

// PlanBackfill is `sluice backfill --dry-run`: it makes the decisions
// Backfill would (refusing with the same errors), opens a snapshot to
// count the rows and fix its offset, and returns the plan with the
// backfill's steps. It writes nothing.
func (r *Runner) PlanBackfill(ctx context.Context, prep *Prepared, opt BackfillOptions) (*BackfillPlan, error) {
	b, err := r.newBackfill(ctx, prep, opt)
	if err != nil {
		return nil, &RunError{Job: prep.Plan.Job.Name, Err: err}
	}
	bp := &BackfillPlan{Chunk: b.opt.Chunk, Resume: b.resume, Copied: b.state.Rows, Skipped: b.skipped}
	if bp.LastKey, err = b.lastKey(); err != nil {
		return nil, err
	}
	snap, err := b.src.Snapshot(ctx, b.info, b.from)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	if bp.Rows, err = snap.Count(ctx); err != nil {
		return nil, err
	}
	bp.Offset = snap.Offset()
	p := *prep.Plan
	p.Pushdown, p.Warnings = false, slices.Clip(p.Warnings)
	p.Steps = slices.Clone(snap.Steps())
	if b.resume {
		p.Steps = append(p.Steps, plan.Step{Where: "source", What: fmt.Sprintf("catch up: read the stream's changes since the last snapshot for keys up to %v, in the snapshot", bp.LastKey)})
	}
	ec := b.engineCopy(ctx, snap)
	var pt *passThrough
	if ec == nil {
		if pt, err = b.passThrough(ctx, snap); err != nil {
			return nil, err
		}
	}
	switch {
	case pt != nil:
		p.Steps = append(p.Steps, passThroughSteps(pt, p.Sink.Backend)...)
		bp.Chunk = pt.size
		p.Steps = append(p.Steps, plan.Step{Where: "sluice", What: fmt.Sprintf("when the target cannot take the source's text form as it is (checked in the first chunk's transaction), or for a chunk whose COPY failed: rows go through sluice in chunks of %d, as follows", b.opt.Chunk)})
	case ec != nil:
		defer ec.Close()
		p.Steps = append(p.Steps, ec.Steps(b.first)...)
		p.Steps = append(p.Steps,
			plan.Step{Where: "sink", What: fmt.Sprintf("per chunk of %d rows: one such transaction, inside the sink's database (no row passes through sluice); the job's checkpoint holds the backfill state (partition %q)", b.opt.Chunk, BackfillPartition)},
			plan.Step{Where: "sluice", What: "if the source table changed since the snapshot (its change log moved), or a value does not fit: the rest is read from the snapshot, filtered and projected by sluice, and written by the sink's statements, as follows"})
	}
	p.Steps = append(p.Steps, plan.Step{Where: "sluice", What: "filter and project each row as an INSERT change"})
	p.Steps = append(p.Steps, b.first.Steps()...)
	p.Steps = append(p.Steps, plan.Step{Where: "sink", What: fmt.Sprintf("per chunk of %d rows: one such transaction; the job's checkpoint holds the backfill state (partition %q)", b.opt.Chunk, BackfillPartition)})
	p.Steps = append(p.Steps,
		plan.Step{Where: "sink", What: "with the last chunk: store the snapshot's offset as the job's checkpoint (the hand-off)"},
		plan.Step{Where: "source", What: fmt.Sprintf("move the offset of stream %s to the snapshot's offset", b.info.Name)})
	if b.restart {
		p.Warnings = append(p.Warnings, "restart: the first chunk's transaction deletes the target's rows (the partial copy)")
	}
	bp.Plan = &p
	return bp, nil
}
