package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sinks/changerel"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// readTable is the TEMP table a pushed-down run materializes its read in.
const readTable = "sluice_read"

// Pushdown compiles p to SQL that runs inside this database in one
// REPEATABLE READ transaction (runner.Pushdowner): the stream's changes
// (ChangesQuery) are materialized in a TEMP table, filtered and projected
// by SQL rendered with expr's PostgreSQL dialect, applied to the target by
// sinkpg.CompileApply (INSERT … SELECT, or MERGE … USING), and the job's
// checkpoint and the stream's offset are written in the same transaction.
// A merge with one change per key on PostgreSQL 15+ reads, counts and
// merges in one statement instead (pushdown_single.go).
// A plan whose sink is not a table, or whose expressions cannot be
// rendered, is refused with an error wrapping runner.ErrNoPushdown.
func (b *Backend) Pushdown(ctx context.Context, p *plan.Plan, s *runner.StreamInfo) (runner.PushdownPlan, error) {
	if p.Sink.Backend == "stdout" || p.Sink.Table == "" {
		return nil, fmt.Errorf("%w: the sink is not a table", runner.ErrNoPushdown)
	}
	relation, err := projectSQL(p, "pg_temp."+readTable)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", runner.ErrNoPushdown, err)
	}
	sp, err := b.sink.Prepare(ctx, &p.Sink)
	if err != nil {
		return nil, err
	}
	pd := &pushdown{b: b, p: p, s: s, relation: relation, sink: sp}
	if err := pd.compileSteps(ctx); err != nil {
		return nil, err
	}
	return pd, nil
}

// projectSQL renders the filter and projection over the read relation as
// a change relation for sinkpg.CompileApply (__op, __ver, __ord,
// __present, projected columns).
func projectSQL(p *plan.Plan, read string) (string, error) {
	src := p.Source.Schema
	col := func(rel, idx int) string { return "c." + sinkpg.Quote(src.Columns[idx].Name) }
	cols := []string{
		`c."__change_type" AS __op`,
		`c."__commit_version" AS __ver`,
		`CASE c."__change_type" WHEN 'UPDATE_BEFORE' THEN 0 ELSE 1 END AS __ord`,
		`NULL::text AS __present`,
	}
	if p.Sink.NeedsCommitTime() {
		cols = append(cols, `c."__commit_timestamp" AS `+changerel.TS)
	}
	for _, it := range p.Project {
		if it.Expr == nil {
			return "", fmt.Errorf("projection %q is not bound", it.Name)
		}
		x, err := it.Expr.SQL(sinkpg.Dialect, col)
		if err != nil {
			return "", fmt.Errorf("projection %q: %w", it.Name, err)
		}
		cols = append(cols, x+" AS "+sinkpg.Quote(it.Name))
	}
	where := ""
	if p.Filter != nil && p.Filter.Expr != nil {
		f, err := p.Filter.Expr.SQL(sinkpg.Dialect, col)
		if err != nil {
			return "", fmt.Errorf("filter: %w", err)
		}
		where = " WHERE " + f
	}
	return fmt.Sprintf("(SELECT %s FROM %s AS c%s)", strings.Join(cols, ", "), read, where), nil
}

// The statements of a run around the read table.
var (
	countRead   = fmt.Sprintf(`SELECT "__change_type", count(*) FROM pg_temp.%s GROUP BY 1`, readTable)
	analyzeRead = "ANALYZE pg_temp." + readTable
)

// readQuery materializes a read in the TEMP table readTable: ChangesQuery
// without its final ORDER BY (the apply orders or collapses by
// __commit_version itself). With seqBase (a STANDARD read from an offset
// whose window's __seq span fits, Position.hasSeqBase), the versions are
// offsets from the bound parameter $1, the window's min(__seq) - 1, which
// the run passes; the plan shows the same text. With afterOnly (a merge
// sink, plan.SinkStage.IgnoresUpdateBefore) UPDATE_BEFORE is left out.
func readQuery(t *Tracked, s *runner.StreamInfo, from *Position, to Position, seqBase, afterOnly bool) string {
	return fmt.Sprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS %s", readTable, changesQuery(t, s, from, to, queryOptions{base: readBase(seqBase), afterOnly: afterOnly, native: true}))
}

// pushdown is a compiled pushdown (runner.PushdownPlan).
type pushdown struct {
	b        *Backend
	p        *plan.Plan
	s        *runner.StreamInfo
	relation string
	sink     *sinkpg.Plan
	full     bool    // the read has one change per merge key (sinkpg.ApplyOptions.FullRows)
	after    bool    // the read leaves UPDATE_BEFORE out (queryOptions.afterOnly)
	single   *single // the one-statement pushdown, when the plan qualifies
	steps    []plan.Step
	// tableRead: the last run's one statement read the images from the
	// table (pushdown.fromTable), for tests.
	tableRead atomic.Bool
}

// noVersions reports whether the run's read reports no __commit_version
// (the one statement's read from the table, queryOptions.fromTable), so
// its read point needs no bounds of the window's __seq (readPointWith).
func (pd *pushdown) noVersions() bool {
	return pd.single != nil && pd.after && pd.single.noVersion && pd.single.noTimestamp
}

// omitNote tells, in a plan step, that the read leaves UPDATE_BEFORE out.
func (pd *pushdown) omitNote() string {
	if !pd.after {
		return ""
	}
	return " (one row per changed key: the merge ignores UPDATE_BEFORE, so the read leaves it out and counts one per UPDATE_AFTER)"
}

// Steps lists the SQL a run executes. The read point (the snapshot taken
// by the run's transaction) and the batch number are shown as
// placeholders; the offset literals are those of the stream at plan time.
func (pd *pushdown) Steps() []plan.Step { return pd.steps }

func (pd *pushdown) compileSteps(ctx context.Context) error {
	b, s := pd.b, pd.s
	src := func(what, sql string) plan.Step { return plan.Step{Where: "source", What: what, SQL: sql} }
	tr, ok, err := b.tracked(ctx, b.pool, s.Table)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s (stream %s)", ErrNotTracked, sinkpg.Quote(s.Table), s.Name)
	}
	from, _, err := OffsetPosition(s.Offset)
	if err != nil {
		return err
	}
	to := Position{System: from.System, Batch: from.Batch + 1, Snap: "<read point: pg_current_snapshot() of this transaction>"}
	fp := &from
	if s.Offset.IsZero() {
		fp = nil
	}
	target, _, err := b.sink.Target(ctx, pd.p.Sink.Table)
	if err != nil {
		return err
	}
	target = pd.p.Sink.EvolvedTarget(target)
	// A STANDARD read has one net change per primary key (an update as an
	// UPDATE_BEFORE/UPDATE_AFTER pair): when the merge keys pass the primary
	// key through (the planner's OneChangePerKey), the sink needs no
	// collapse. A merge ignores UPDATE_BEFORE: the read leaves it out.
	pd.full = pd.p.Sink.OneChangePerKey
	pd.after = pd.p.Sink.IgnoresUpdateBefore()
	compile := func(relation, countIdle string) (*sinkpg.Apply, error) {
		return sinkpg.CompileApply(&pd.p.Sink, target, relation, sinkpg.ApplyOptions{ServerVersion: b.version, FullRows: pd.full, CountIdle: countIdle})
	}
	pd.single, err = pd.compileSingle(func(relation, countIdle string) (string, bool) {
		a, err := compile(relation, countIdle)
		if err != nil {
			return "", false
		}
		return a.MergeSQL()
	})
	if err != nil {
		return fmt.Errorf("%w: %v", runner.ErrNoPushdown, err)
	}
	var apply *sinkpg.Apply // the TEMP-table path's
	if pd.single == nil {
		if apply, err = compile(pd.relation, ""); err != nil {
			return fmt.Errorf("%w: %v", runner.ErrNoPushdown, err)
		}
	}
	pd.steps = []plan.Step{
		src("serialize runs of this job (session lock)", "SELECT pg_advisory_lock(hashtext('sluice.job:' || $1))"),
		src("one transaction for read, write and offset; its snapshot is the read point", "BEGIN ISOLATION LEVEL REPEATABLE READ"),
		src("hold the change log before the snapshot, so a purge's TRUNCATE never runs under this read", lockLogSQL(s.Table)),
		src("take the transaction's snapshot: the read point", "SELECT 1"),
		src("describe the stream again in the snapshot (a stream recreated since the plan fails; a change of the table's columns plans again)", describeStreamSQL),
		sinkpg.ReadCheckpointStep("start from the job's checkpoint (same stream ID; another stream ID fails, see runner.Start), else from the stream's offset"),
		src("check the cluster and read the snapshot", "SELECT pg_current_snapshot()::text, (SELECT system_identifier::text FROM pg_control_system())"),
		src("refuse a log restored from another cluster or a later point: rows of transaction ids not assigned yet (epoch.go)",
			fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM %s WHERE __txid >= $1::text::xid8 LIMIT 1000) f  -- $1: the snapshot's xmax", tr.LogRef())),
		src("refuse a start behind the stream's own offset (another run consumed the changes in between)", streamPositionSQL),
	}
	read := src("read the stream's changes after the offset, up to the read point"+pd.omitNote(), readQuery(tr, s, fp, to, false, pd.after))
	pd.steps = append(pd.steps,
		pd.boundsStep(tr, fp),
		src(fmt.Sprintf("memory for the sorts and hashes of this transaction, sized to the window: %d bytes per log row, %dMB to %dMB (the value shown is for 100,000 rows; each run sizes it to its window)",
			sinkpg.WorkMemPerRow, sinkpg.MinWorkMem>>20, sinkpg.MaxWorkMem>>20), sinkpg.WorkMemSQL(100_000)))
	if seqVersioned(s, fp) {
		read = src("read the stream's changes after the offset, up to the read point; $1 = min(__seq) - 1 of the window "+
			"(a window whose __seq span reaches 2^32 is versioned by dense_rank() OVER (ORDER BY d.__tmax) instead)",
			readQuery(tr, s, fp, to, true, pd.after))
	}
	// What the sink's Attach runs in this transaction, then the read and
	// the apply, then the checkpoint (exactly what Run executes).
	pd.steps = append(pd.steps, pd.sink.AttachSteps()...)
	if pd.single != nil {
		o := pd.singleOptions(s, fp, readBase(seqVersioned(s, fp) && !pd.noVersions()), true)
		small := ""
		if pd.noVersions() && keyOrderable(s, fp) {
			small = changesQuery(tr, s, fp, to, pd.singleOptions(s, fp, "", false))
		}
		pd.steps = append(pd.steps, pd.single.steps(changesQuery(tr, s, fp, to, o), o, small)...)
	} else {
		pd.steps = append(pd.steps,
			read,
			src("count the changes read by change type", countRead),
			src("statistics of the read, so the apply is planned for its real size (a MERGE then hashes the read, not the target)", analyzeRead))
		pd.steps = append(pd.steps, apply.Steps()...)
	}
	pd.steps = append(pd.steps, sinkpg.CheckpointStep())
	pd.steps = append(pd.steps,
		src("advance the stream's offset (compare-and-set)", `UPDATE sluice.streams SET position = $1 WHERE name = $2 AND id = $3 AND position = $4`),
		src("commit rows, checkpoint and offset together", "COMMIT"),
		src("after the commit, in a transaction of its own: when no session holds the change log and no stream still needs a row of it, empty it", fmt.Sprintf(
			"LOCK TABLE %[1]s IN ACCESS EXCLUSIVE MODE NOWAIT\nSELECT EXISTS (SELECT 1 FROM %[1]s WHERE __txid >= $lowest_offset_xmax OR __txid = ANY($offset_xips))\nTRUNCATE %[1]s", tr.LogRef())),
		src("otherwise, in a transaction of its own: delete the change-log rows every stream on the table has consumed", fmt.Sprintf(
			`DELETE FROM %s WHERE __txid < $lowest_offset_xmax AND pg_visible_in_snapshot(__txid, $offset_1) AND …`, tr.LogRef())),
		src("release the job lock", "SELECT pg_advisory_unlock(hashtext('sluice.job:' || $1))"))
	return nil
}

// boundsStep is the plan step of the query that narrows the read point.
func (pd *pushdown) boundsStep(tr *Tracked, fp *Position) plan.Step {
	now := Position{Snap: "<pg_current_snapshot()>"}
	if pd.noVersions() {
		return plan.Step{Where: "source", What: "narrow the read point to the table's changes (the top of the log's __txid index); estimate the window's rows from the log's size",
			SQL: windowTopQuery(tr, fp, now)}
	}
	return plan.Step{Where: "source", What: "narrow the read point to the table's changes; bound the window's __seq", SQL: windowBoundsQuery(tr, fp, now)}
}

// Run executes the pushdown: read, write, checkpoint and offset advance in
// one transaction. It returns the counts and the offsets moved from and
// to.
func (pd *pushdown) Run(ctx context.Context, job string) (runner.Stats, cdc.Offset, cdc.Offset, error) {
	b, s := pd.b, pd.s
	if err := b.ensureSchema(ctx); err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, err
	}
	stats, from, to, noLogRows, err := pd.runLocked(ctx, job)
	if err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, err
	}
	// The purges below take connections of their own: the run's is back in
	// the pool by now, so runs that each waited for a second connection
	// while holding one cannot exhaust the pool and wait forever.
	switch {
	case from.Equal(to): // nothing new: every poll of a continuous job
		b.log.Debug("pushdown run committed, nothing new", "job", job, "stream", s.Name, "offset", to.String())
	case noLogRows:
		// The offset moved (its snapshot moves with every commit in the
		// database) past no row of the table's change log: no log row
		// became consumed, so there is nothing to purge, and the
		// retention of the table's streams is checked by the next run
		// that consumes a row (or serve's TrimLogs). Purging here cost
		// every idle poll two transactions and a dozen catalog queries
		// (issue #19).
		b.log.Debug("pushdown run committed, no change logged", "job", job, "stream", s.Name, "from", from.String(), "to", to.String())
	default:
		b.log.Info("pushdown run committed", "job", job, "stream", s.Name, "from", from.String(), "to", to.String())
		b.purgeAfterCommit(ctx, s.Table)
		b.purgeStreamless(ctx)
	}
	return stats, from, to, nil
}

// runLocked runs the pushdown's transaction on one pooled connection under
// the job's advisory lock, and returns the connection before returning.
// noLogRows reports that the run's window held no row of the change log
// (Position.noLogRows).
func (pd *pushdown) runLocked(ctx context.Context, job string) (stats runner.Stats, from, to cdc.Offset, noLogRows bool, err error) {
	b := pd.b
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, false, b.wrap(err, "connect")
	}
	defer conn.Release()
	lockKey := "sluice.job:" + job
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext($1))`, lockKey); err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, false, b.wrap(err, "lock job %q", job)
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext($1))`, lockKey); err != nil {
			b.log.Warn("release job lock", "job", job, "err", hide(err, b.secret))
		}
	}()
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var err error
		stats, from, to, err = pd.run(ctx, tx, job, &noLogRows)
		return err
	})
	err = classifyPushdownErr(err)
	if err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, false, hide(err, b.secret)
	}
	return stats, from, to, noLogRows, nil
}

// run is the pushdown's transaction; it sets *noLogRows when the window
// it read held no row of the change log.
func (pd *pushdown) run(ctx context.Context, tx pgx.Tx, job string, noLogRows *bool) (runner.Stats, cdc.Offset, cdc.Offset, error) {
	b := pd.b
	var none cdc.Offset
	if err := lockLog(ctx, tx, pd.s.Table); err != nil {
		return runner.Stats{}, none, none, b.wrap(err, "lock the change log of %s", pd.s.Table)
	}
	// The first statement takes the transaction's snapshot (the read point).
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		return runner.Stats{}, none, none, err
	}
	s, tr, err := b.describeStream(ctx, tx, pd.s.Name)
	if err != nil {
		return runner.Stats{}, none, none, err
	}
	if s.ID != pd.s.ID {
		return runner.Stats{}, none, none, fmt.Errorf("%w: stream %s was recreated since the plan was made", runner.ErrOffsetMoved, s.Name)
	}
	// DDL since Plan: the relation projects the planned columns only; the
	// runner plans again.
	if err := runner.PlanStaleError(s.Name, s.Table, pd.p.Source.TableSchema, s.TableSchema); err != nil {
		return runner.Stats{}, none, none, err
	}
	cp, ok, err := sinkpg.ReadCheckpoint(ctx, tx, job)
	if err != nil {
		return runner.Stats{}, none, none, err
	}
	from, note, err := runner.Start(ctx, job, cp, ok, s)
	if err != nil {
		return runner.Stats{}, none, none, err
	}
	t, fp, toPos, err := b.readPointOf(ctx, tx, s, tr, from, pd.noVersions())
	if err != nil {
		return runner.Stats{}, none, none, err
	}
	to := toPos.Offset()
	*noLogRows = fp != nil && toPos.noLogRows
	if _, err := tx.Exec(ctx, sinkpg.WorkMemSQL(toPos.windowRows)); err != nil {
		return runner.Stats{}, none, none, err
	}
	stx, err := pd.sink.Attach(ctx, tx, job)
	if err != nil {
		return runner.Stats{}, none, none, err
	}
	stats := runner.Stats{Read: map[cdc.Op]int64{}, Note: note}
	if fp == nil || fp.Snap != toPos.Snap || fp.Initial {
		var args []any
		seqBase := seqVersioned(s, fp) && toPos.hasSeqBase
		if seqBase {
			args = append(args, toPos.seqBase)
		}
		if pd.single != nil {
			rn, wn, err := pd.runSingle(ctx, tx, t, s, fp, toPos, args, seqBase)
			switch {
			case err == nil:
				stats.Read = rn
				stx.AddWritten(wn)
				return pd.finish(ctx, tx, stx, job, s, stats, from, to)
			case !errors.Is(err, errSingleUnique):
				return runner.Stats{}, none, none, b.wrap(err, "read table stream %s and merge into %s", s.Name, sinkpg.Quote(pd.p.Sink.Table))
			}
			// Rolled back: the read is materialized and applied by the
			// sink's statements, which reorder the window on a unique
			// violation (sinks/postgres/unique.go).
		}
		q := readQuery(t, s, fp, toPos, seqBase, pd.after)
		if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS pg_temp."+readTable); err != nil {
			return runner.Stats{}, none, none, err
		}
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			return runner.Stats{}, none, none, b.wrap(err, "read table stream %s", s.Name)
		}
		rows, err := tx.Query(ctx, countRead)
		if err != nil {
			return runner.Stats{}, none, none, err
		}
		err = changerel.CountOps(rows, stats.Read)
		rows.Close()
		if err != nil {
			return runner.Stats{}, none, none, err
		}
		if pd.after {
			countOmittedBefore(stats.Read)
		}
		if _, err := tx.Exec(ctx, analyzeRead); err != nil {
			return runner.Stats{}, none, none, err
		}
		if err := stx.ApplyRelationWith(ctx, pd.relation, sinkpg.ApplyOptions{FullRows: pd.full}); err != nil {
			return runner.Stats{}, none, none, err
		}
	}
	return pd.finish(ctx, tx, stx, job, s, stats, from, to)
}

// finish stores the checkpoint and advances the stream's offset in tx.
func (pd *pushdown) finish(ctx context.Context, tx pgx.Tx, stx *sinkpg.Tx, job string, s *runner.StreamInfo, stats runner.Stats, from, to cdc.Offset) (runner.Stats, cdc.Offset, cdc.Offset, error) {
	var none cdc.Offset
	w, err := stx.Commit(ctx, runner.Checkpoint{Job: job, Stream: s.Name, StreamID: s.ID, Offset: to})
	if err != nil {
		return runner.Stats{}, none, none, err
	}
	stats.Written = w.Written
	if err := pd.b.advance(ctx, tx, s, s.Offset, to); err != nil {
		return runner.Stats{}, none, none, err
	}
	return stats, from, to, nil
}

// singleOptions are the options of the one statement's read from fp
// with seq base base (readBase): single.readOptions where keyOrderable
// allows them, from the table with fromTable (pushdown.fromTable).
func (pd *pushdown) singleOptions(s *runner.StreamInfo, fp *Position, base string, fromTable bool) queryOptions {
	o := queryOptions{base: base, afterOnly: pd.after, native: true}
	if keyOrderable(s, fp) {
		o = pd.single.readOptions(o, fromTable)
	}
	return o
}

// readBase is the seq base of a read as a bound parameter ($1), or ""
// without one.
func readBase(seqBase bool) string {
	if seqBase {
		return "$1::bigint"
	}
	return ""
}

// errSingleUnique: the one-statement MERGE failed on a unique violation
// and was rolled back to its savepoint.
var errSingleUnique = errors.New("one-statement merge: unique violation")

// runSingle runs the one-statement read and merge under a savepoint. A
// unique violation (an intermediate state of the window, such as two keys
// that swapped a UNIQUE value) rolls it back and returns errSingleUnique:
// the caller then takes the materialized path, whose apply reorders.
func (pd *pushdown) runSingle(ctx context.Context, tx pgx.Tx, t *Tracked, s *runner.StreamInfo, fp *Position, toPos Position, args []any, seqBase bool) (readN, written map[cdc.Op]int64, err error) {
	if _, err := tx.Exec(ctx, "SAVEPOINT sluice_single"); err != nil {
		return nil, nil, err
	}
	o := pd.singleOptions(s, fp, readBase(seqBase), pd.fromTable(toPos))
	pd.tableRead.Store(o.usesTable())
	rn, wn, err := pd.single.run(ctx, tx, changesQuery(t, s, fp, toPos, o), args, o, toPos.windowRows)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			if _, rerr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT sluice_single"); rerr != nil {
				return nil, nil, errors.Join(err, rerr)
			}
			return nil, nil, errSingleUnique
		}
		return nil, nil, err
	}
	if _, err := tx.Exec(ctx, "RELEASE SAVEPOINT sluice_single"); err != nil {
		return nil, nil, err
	}
	return rn, wn, nil
}

// classifyPushdownErr marks the error of a pushed-down run's transaction
// for the runner: a data exception or integrity constraint violation
// (SQLSTATE classes 22, 23) is caused by a row's value
// (runner.ErrPushdownValue: replayed through sluice to name the row); an
// undefined column or table (42703, 42P01) means a DDL on the source, its
// change log or the target ran while the run's statements, built from the
// plan, were running — nothing was written, and runner.ErrPlanStale makes
// the run plan again (serve retries it) instead of stopping the job.
// Other errors, and nil, are returned as they are.
func classifyPushdownErr(err error) error {
	switch c := pgCode(err); {
	case strings.HasPrefix(c, "22") || strings.HasPrefix(c, "23"):
		return fmt.Errorf("%w: %w", runner.ErrPushdownValue, err)
	case c == "42804":
		// datatype_mismatch: a target column of another type than the
		// source's, which the MERGE cannot assign (text into timestamp,
		// after a type change of the source): the run goes through
		// sluice, which converts each value or names the row that does
		// not convert.
		return fmt.Errorf("%w: %w", runner.ErrNoPushdown, err)
	case c == "42703" || c == "42P01":
		return fmt.Errorf("%w (a DDL ran during the run; nothing was written): %w", runner.ErrPlanStale, err)
	}
	return err
}
