package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sinks/changerel"
	sinksqlite "github.com/sluicedata/sluice/sinks/sqlite"
	"modernc.org/sqlite"
)

var _ runner.Pushdowner = (*Backend)(nil)

// pushTable is the TEMP table a pushdown run reads the stream into, once.
const pushTable = "sluice_push"

// Pushdown implements runner.Pushdowner for a plan whose source and sink
// are both this database: the stream's changes (ChangesQueryOrdered) are
// read into a TEMP table, filtered and projected by SQL rendered by package
// expr, and applied by the sink's statements (sinksqlite.CompileApply over
// the relation __op, __ver, __ord, __present, projected columns); then the
// offset moves and the log is purged — one BEGIN IMMEDIATE transaction.
// An expression that cannot be rendered for SQLite is an error wrapping
// runner.ErrNoPushdown.
func (b *Backend) Pushdown(ctx context.Context, p *plan.Plan, s *runner.StreamInfo) (runner.PushdownPlan, error) {
	col := func(_, idx int) string {
		return "__r." + sqlitex.Quote(p.Source.Schema.Columns[idx].Name)
	}
	where := ""
	if p.Filter != nil && p.Filter.Expr != nil {
		w, err := p.Filter.Expr.SQL(expr.SQLite, col)
		if err != nil {
			return nil, fmt.Errorf("%w: filter %s: %v", runner.ErrNoPushdown, p.Filter.Text, err)
		}
		where = "\nWHERE " + w
	}
	if len(p.Project) != len(p.Sink.Schema.Columns) {
		return nil, fmt.Errorf("%w: %d projected columns for %d sink columns", runner.ErrNoPushdown, len(p.Project), len(p.Sink.Schema.Columns))
	}
	sel := []string{
		`__r."__change_type" AS "__op"`, `__r."__commit_version" AS "__ver"`,
		`__r.` + sqlitex.Quote(OrderColumn) + ` AS "__ord"`, `NULL AS "__present"`,
	}
	if p.Sink.NeedsCommitTime() {
		sel = append(sel, `__r."__commit_timestamp" AS `+sqlitex.Quote(changerel.TS))
	}
	for i, it := range p.Project {
		if it.Expr == nil {
			return nil, fmt.Errorf("%w: projection %s is not bound", runner.ErrNoPushdown, it.Name)
		}
		x, err := it.Expr.SQL(expr.SQLite, col)
		if err != nil {
			return nil, fmt.Errorf("%w: projection %s: %v", runner.ErrNoPushdown, it.Text, err)
		}
		sel = append(sel, x+" AS "+sqlitex.Quote(p.Sink.Schema.Columns[i].Name))
	}
	relation := "(SELECT " + strings.Join(sel, ", ") + "\nFROM temp." + pushTable + " AS __r" + where + ")"

	sp, err := b.Sink.Prepare(ctx, &p.Sink)
	if err != nil {
		return nil, err
	}
	target, exists, err := b.Sink.Target(ctx, p.Sink.Table)
	if err != nil {
		return nil, err
	}
	if !exists {
		target = cdc.Schema{}
	}
	target = p.Sink.EvolvedTarget(target)
	// A SQLite table stream yields full rows only.
	apply, err := sinksqlite.CompileApplyWith(&p.Sink, target, relation, sinksqlite.ApplyOptions{FullRows: true})
	if err != nil {
		return nil, err
	}
	// The SQL shown is the read from the stream's offset; the read point is
	// a parameter fixed at run time (any non-initial position renders the
	// same text).
	shown, err := parseOffset(s.Offset)
	if err != nil {
		return nil, err
	}
	read, _, err := b.ChangesQueryOrdered(s, s.Offset, position{seq: shown.seq}.offset())
	if err != nil {
		return nil, err
	}
	pp := &pushPlan{b: b, p: p, stream: s.Name, sink: sp, relation: relation}
	pp.steps = []plan.Step{
		{Where: "source", What: "begin one write transaction for read, write and offset", SQL: "BEGIN IMMEDIATE"},
	}
	pp.steps = append(pp.steps, sp.AttachSteps()...)
	pp.steps = append(pp.steps,
		plan.Step{Where: "sink", What: "read the job's checkpoint", SQL: sinksqlite.SelectCheckpointSQL},
		plan.Step{Where: "source", What: "fix the read point", SQL: `SELECT seq FROM sqlite_sequence WHERE name = ?`},
		plan.Step{Where: "source", What: "drop a leftover read", SQL: "DROP TABLE IF EXISTS temp." + pushTable},
		plan.Step{Where: "source", What: "read the stream's changes once", SQL: "CREATE TEMP TABLE " + pushTable + " AS SELECT * FROM (" + read + ")"},
		plan.Step{Where: "source", What: "count the changes read by change type", SQL: pushCountSQL},
	)
	pp.steps = append(pp.steps, apply.Steps()...)
	pp.steps = append(pp.steps,
		sinksqlite.CheckpointStep(),
		plan.Step{Where: "source", What: "move the stream's offset to the read point (compare-and-set)", SQL: `UPDATE sluice_streams SET "offset" = ? WHERE name = ? AND id = ? AND "offset" = ?`},
		plan.Step{Where: "source", What: "purge the change log every stream on the table consumed", SQL: `DELETE FROM ` + sqlitex.Quote(logTable(s.Table)) + ` WHERE seq <= ?`},
		plan.Step{Where: "source", What: "drop the read", SQL: "DROP TABLE temp." + pushTable},
		plan.Step{Where: "source", What: "commit", SQL: "COMMIT"},
	)
	return pp, nil
}

const pushCountSQL = `SELECT "__change_type", count(*) FROM temp.` + pushTable + ` GROUP BY 1`

type pushPlan struct {
	b        *Backend
	p        *plan.Plan
	stream   string
	sink     *sinksqlite.Plan
	relation string
	steps    []plan.Step
}

func (pp *pushPlan) Steps() []plan.Step { return pp.steps }

// Run executes the plan in one BEGIN IMMEDIATE transaction and returns the
// stats (Read: changes of the stream by type, before the filter; Written:
// what the sink applied), and the offsets it read from and moved to. Any
// error rolls everything back: no rows, no checkpoint, no offset move.
func (pp *pushPlan) Run(ctx context.Context, job string) (runner.Stats, cdc.Offset, cdc.Offset, error) {
	b := pp.b
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, err
	}
	defer conn.Close()
	if err := sqlitex.Begin(ctx, conn); err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, fmt.Errorf("pushdown %s: begin: %w", job, err)
	}
	stats, from, to, err := pp.run(ctx, conn, job)
	if err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		sqlitex.DiscardIfCannotWrite(conn, err)
		if valueCaused(err) {
			// the runner replays the run through sluice to name the row
			err = fmt.Errorf("%w: %w", runner.ErrPushdownValue, err)
		}
		return runner.Stats{}, from, from, err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return runner.Stats{}, from, from, fmt.Errorf("pushdown %s: commit: %w", job, err)
	}
	return stats, from, to, nil
}

func (pp *pushPlan) run(ctx context.Context, conn *sql.Conn, job string) (runner.Stats, cdc.Offset, cdc.Offset, error) {
	b := pp.b
	if err := syncStream(ctx, conn, pp.stream); err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, err
	}
	info, err := b.streamInfo(ctx, conn, pp.stream)
	if err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, err
	}
	// DDL since Plan (syncStream just re-installed capture for it): the
	// relation projects the planned columns only; the runner plans again.
	if err := runner.PlanStaleError(info.Name, info.Table, pp.p.Source.TableSchema, info.TableSchema); err != nil {
		return runner.Stats{}, info.Offset, info.Offset, err
	}
	tx, err := pp.sink.Attach(ctx, conn, job)
	if err != nil {
		return runner.Stats{}, info.Offset, info.Offset, err
	}
	defer tx.Rollback(ctx)
	cp, ok, err := tx.Checkpoint(ctx)
	if err != nil {
		return runner.Stats{}, info.Offset, info.Offset, err
	}
	from, note, err := runner.Start(ctx, job, cp, ok, info)
	if err != nil {
		return runner.Stats{}, info.Offset, info.Offset, err
	}
	if ok && note == "" {
		// The checkpoint of this incarnation: a run through sluice that
		// committed its sink but not the stream offset left it ahead;
		// start there, else at the stream's offset.
		cpPos, err1 := parseOffset(cp.Offset)
		stPos, err2 := parseOffset(info.Offset)
		if err1 != nil || err2 != nil || cpPos.seq <= stPos.seq {
			from = info.Offset
		}
	}
	seq, err := lastSeq(ctx, conn, logTable(info.Table))
	if err != nil {
		return runner.Stats{}, from, from, err
	}
	to := position{seq: seq}.offset()
	if fp, err := parseOffset(from); err == nil && fp.seq > seq {
		return runner.Stats{}, from, from, futureOffsetError(info, from, seq)
	}
	if err := checkAppendAbsent(ctx, conn, info, from, to); err != nil {
		return runner.Stats{}, from, from, err
	}
	read, args, err := changesQuery(info, from, to, true)
	if err != nil {
		return runner.Stats{}, from, from, err
	}
	if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS temp."+pushTable); err != nil {
		return runner.Stats{}, from, from, fmt.Errorf("pushdown %s: %w", job, err)
	}
	t0 := time.Now()
	var tRead, tApply time.Duration
	defer func() {
		b.log.Debug("pushdown phases", "job", job, "read", tRead, "apply", tApply, "total", time.Since(t0))
	}()
	if _, err := conn.ExecContext(ctx, "CREATE TEMP TABLE "+pushTable+" AS SELECT * FROM ("+read+")", args...); err != nil {
		return runner.Stats{}, from, from, fmt.Errorf("pushdown %s: read stream %s: %w", job, info.Name, err)
	}
	tRead = time.Since(t0)
	stats := runner.Stats{Read: map[cdc.Op]int64{}, Note: note}
	if err := countOps(ctx, conn, pushCountSQL, stats.Read); err != nil {
		return runner.Stats{}, from, from, err
	}
	if err := tx.ApplyRelation(ctx, pp.relation); err != nil {
		return runner.Stats{}, from, from, err
	}
	tApply = time.Since(t0) - tRead
	w, err := tx.Commit(ctx, runner.Checkpoint{Job: job, Stream: info.Name, StreamID: info.ID, Offset: to, Updated: time.Now().UTC()})
	if err != nil {
		return runner.Stats{}, from, from, err
	}
	stats.Written = w.Written
	if err := b.advance(ctx, conn, info, info.Offset, to); err != nil {
		return runner.Stats{}, from, from, err
	}
	if _, err := conn.ExecContext(ctx, "DROP TABLE temp."+pushTable); err != nil {
		return runner.Stats{}, from, from, err
	}
	return stats, from, to, nil
}

// countOps runs a count query (see changerel.CountOps) and adds its rows to into.
func countOps(ctx context.Context, q sqlitex.Querier, query string, into map[cdc.Op]int64) error {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	return changerel.CountOps(rows, into)
}

// valueCaused reports whether err is SQLite's refusal of a row's value: a
// constraint (NOT NULL, CHECK, UNIQUE …; SQLITE_CONSTRAINT = 19) or a
// datatype mismatch (SQLITE_MISMATCH = 20) — https://www.sqlite.org/rescode.html.
func valueCaused(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case 19, 20:
		return true
	}
	return false
}
