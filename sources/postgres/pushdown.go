package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
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

// pushdown is a compiled pushdown (runner.PushdownPlan).
type pushdown struct {
	b        *Backend
	p        *plan.Plan
	s        *runner.StreamInfo
	relation string
	sink     *sinkpg.Plan
	steps    []plan.Step
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
	apply, err := sinkpg.CompileApply(&pd.p.Sink, target, pd.relation, sinkpg.ApplyOptions{ServerVersion: b.version})
	if err != nil {
		return fmt.Errorf("%w: %v", runner.ErrNoPushdown, err)
	}
	pd.steps = []plan.Step{
		src("serialize runs of this job (session lock)", "SELECT pg_advisory_lock(hashtext('sluice.job:' || $1))"),
		src("one transaction for read, write and offset; its snapshot is the read point", "BEGIN ISOLATION LEVEL REPEATABLE READ"),
		src("fix the read point and check the cluster", "SELECT pg_current_snapshot()::text, (SELECT system_identifier::text FROM pg_control_system())"),
		src("start from the job's checkpoint (same stream ID) or the stream's offset", `SELECT position, id FROM sluice.streams WHERE name = $1`),
		src("narrow the read point to the table's changes", fmt.Sprintf("SELECT max(l.__txid) FROM %s l WHERE %s", tr.LogRef(), WindowPredicate("l.__txid", fp, Position{Snap: "<pg_current_snapshot()>"}))),
		src("read the stream's changes after the offset, up to the read point", fmt.Sprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS %s", readTable, ChangesQuery(tr, s, fp, to))),
		src("count the changes read by change type", fmt.Sprintf(`SELECT "__change_type", count(*) FROM pg_temp.%s GROUP BY 1`, readTable)),
	}
	// What the sink's Attach runs in this transaction, then the apply over
	// the read, then the checkpoint (exactly what Run executes).
	pd.steps = append(pd.steps, pd.sink.AttachSteps()...)
	pd.steps = append(pd.steps, apply.Steps()...)
	pd.steps = append(pd.steps, sinkpg.CheckpointStep())
	pd.steps = append(pd.steps,
		src("advance the stream's offset (compare-and-set)", `UPDATE sluice.streams SET position = $1 WHERE name = $2 AND id = $3 AND position = $4`),
		src("purge change-log rows every stream on the table has consumed", fmt.Sprintf(`DELETE FROM %s WHERE __txid < $min_xmax AND pg_visible_in_snapshot(__txid, $offset_1) AND …`, tr.LogRef())),
		src("commit rows, checkpoint and offset together", "COMMIT"),
		src("release the job lock", "SELECT pg_advisory_unlock(hashtext('sluice.job:' || $1))"))
	return nil
}

// Run executes the pushdown: read, write, checkpoint and offset advance in
// one transaction. It returns the counts and the offsets moved from and
// to.
func (pd *pushdown) Run(ctx context.Context, job string) (runner.Stats, cdc.Offset, cdc.Offset, error) {
	b, s := pd.b, pd.s
	if err := b.ensureSchema(ctx); err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, err
	}
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, b.wrap(err, "connect")
	}
	defer conn.Release()
	lockKey := "sluice.job:" + job
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext($1))`, lockKey); err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, b.wrap(err, "lock job %q", job)
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext($1))`, lockKey); err != nil {
			b.log.Warn("release job lock", "job", job, "err", hide(err, b.secret))
		}
	}()
	var stats runner.Stats
	var from, to cdc.Offset
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var err error
		stats, from, to, err = pd.run(ctx, tx, job)
		return err
	})
	if err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, hide(err, b.secret)
	}
	b.log.Info("pushdown run committed", "job", job, "stream", s.Name, "from", from.String(), "to", to.String())
	return stats, from, to, nil
}

func (pd *pushdown) run(ctx context.Context, tx pgx.Tx, job string) (runner.Stats, cdc.Offset, cdc.Offset, error) {
	b := pd.b
	var none cdc.Offset
	// The first statement takes the transaction's snapshot (the read point).
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		return runner.Stats{}, none, none, err
	}
	s, _, err := b.describeStream(ctx, tx, pd.s.Name)
	if err != nil {
		return runner.Stats{}, none, none, err
	}
	if s.ID != pd.s.ID {
		return runner.Stats{}, none, none, fmt.Errorf("%w: stream %s was recreated since the plan was made", runner.ErrOffsetMoved, s.Name)
	}
	from := s.Offset
	cp, ok, err := sinkpg.ReadCheckpoint(ctx, tx, job)
	if err != nil {
		return runner.Stats{}, none, none, err
	}
	if ok && cp.StreamID == s.ID && cp.Stream == s.Name {
		if err := runner.BackfillInProgress(cp); err != nil {
			return runner.Stats{}, none, none, err
		}
		from = cp.Offset
	}
	t, fp, toPos, err := b.readPoint(ctx, tx, s, from)
	if err != nil {
		return runner.Stats{}, none, none, err
	}
	to := toPos.Offset()
	stx, err := pd.sink.Attach(ctx, tx, job)
	if err != nil {
		return runner.Stats{}, none, none, err
	}
	stats := runner.Stats{Read: map[cdc.Op]int64{}}
	if fp == nil || fp.Snap != toPos.Snap || fp.Initial {
		q := fmt.Sprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS %s", readTable, ChangesQuery(t, s, fp, toPos))
		if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS pg_temp."+readTable); err != nil {
			return runner.Stats{}, none, none, err
		}
		if _, err := tx.Exec(ctx, q); err != nil {
			return runner.Stats{}, none, none, b.wrap(err, "read table stream %s", s.Name)
		}
		rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT "__change_type", count(*) FROM pg_temp.%s GROUP BY 1`, readTable))
		if err != nil {
			return runner.Stats{}, none, none, err
		}
		for rows.Next() {
			var op string
			var n int64
			if err := rows.Scan(&op, &n); err != nil {
				rows.Close()
				return runner.Stats{}, none, none, err
			}
			o, _ := cdc.ParseOp(op)
			stats.Read[o] += n
		}
		if err := rows.Err(); err != nil {
			return runner.Stats{}, none, none, err
		}
		if err := stx.ApplyRelation(ctx, pd.relation); err != nil {
			return runner.Stats{}, none, none, err
		}
	}
	w, err := stx.Commit(ctx, runner.Checkpoint{Job: job, Stream: s.Name, StreamID: s.ID, Offset: to})
	if err != nil {
		return runner.Stats{}, none, none, err
	}
	stats.Written = w.Written
	if err := b.advance(ctx, tx, s, s.Offset, to); err != nil {
		return runner.Stats{}, none, none, err
	}
	return stats, from, to, nil
}
