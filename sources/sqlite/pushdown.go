package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
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
	read, _, err := pushQuery(s, s.Offset, position{seq: shown.seq}.offset(), p.Sink.IgnoresUpdateBefore())
	if err != nil {
		return nil, err
	}
	pp := &pushPlan{b: b, p: p, stream: s.Name, sink: sp, relation: relation, opt: sinksqlite.ApplyOptions{FullRows: true}}
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
	opt      sinksqlite.ApplyOptions
	steps    []plan.Step
	// stepped: the plan may commit a run in steps (steppable); hold is
	// how long a step aims to hold the write lock.
	stepped bool
	hold    time.Duration
	sizes   stepSizes
	// afterStep, when set (tests), runs after each committed step but the
	// last; an error ends the run there, as a crash would.
	afterStep func(step int) error
}

// stepSizes bounds the change-log rows of one step: the first step reads
// first rows, later ones adapt to the measured hold time within [min, max].
type stepSizes struct{ first, min, max int64 }

var defaultStepSizes = stepSizes{first: 2000, min: 500, max: 1 << 20}

// steppable reports whether applying the net changes of (a, b] and then of
// (b, c] gives the target that applying those of (a, c] gives, so that a
// run may commit in steps: a merge (on_delete delete) of net changes whose
// keys pass the primary key through (OneChangePerKey), without a filter
// other than one on the change type that keeps every change but
// UPDATE_BEFORE.
// Not: history (one version per key per step), soft or ignored deletes (an
// insert and a delete in different steps leave a row that one step would
// not), append modes (the net changes of each step are appended), a filter
// (it sees each step's net change, e.g. an INSERT then a dropped DELETE),
// SQL MERGE (its WHEN clauses see each step's net change).
func steppable(p *plan.Plan) bool {
	st := &p.Sink
	return st.Mode == plan.ModeMerge && st.Merge == nil && st.OneChangePerKey &&
		(st.OnDelete == "" || st.OnDelete == plan.OnDeleteDelete) && keepsNetChanges(p)
}

// keepsNetChanges reports whether the plan's filter, if any, keeps every
// change a merge applies: it reads only __change_type and drops nothing but
// UPDATE_BEFORE (the seed's IN ('INSERT', 'UPDATE_AFTER', 'DELETE')).
func keepsNetChanges(p *plan.Plan) bool {
	if p.Filter == nil {
		return true
	}
	if p.Filter.Expr == nil {
		return false
	}
	for _, ref := range p.Filter.Expr.Columns() {
		if ref.Col < 0 || ref.Col >= len(p.Source.Schema.Columns) || p.Source.Schema.Columns[ref.Col].Name != cdc.ColChangeType {
			return false
		}
	}
	for _, op := range p.Filter.Dropped {
		if op != cdc.OpUpdateBefore {
			return false
		}
	}
	return true
}

// SetCommitStep implements runner.SteppedPushdown.
func (pp *pushPlan) SetCommitStep(d time.Duration) bool {
	pp.stepped = d >= 0 && steppable(pp.p)
	pp.hold = d
	return pp.stepped
}

func (pp *pushPlan) Steps() []plan.Step {
	if !pp.stepped {
		return pp.steps
	}
	first := pp.sizes.first
	if first == 0 {
		first = defaultStepSizes.first
	}
	out := []plan.Step{{Where: "source", What: fmt.Sprintf("commit in steps of about %s of write lock each (sluice run --commit-step): every step below is one transaction over the next slice of the change log (at most %d rows first, then sized to the time; the stream's initial rows in one); from the second step on, the slice's net changes are read before BEGIN IMMEDIATE, outside the write lock, and the offset and checkpoint move to the slice's end with its rows", pp.hold, first)}}
	return append(out, pp.steps...)
}

// stepResult is what one committed transaction of a run did.
type stepResult struct {
	stats    runner.Stats
	from, to cdc.Offset
	info     *runner.StreamInfo
	last     int64 // the run's read point (the log's last seq when the run began)
}

// preRead is the read of a step done before its transaction: the net
// changes of (from, to] of the stream as info described it, in temp.sluice_push.
type preRead struct {
	info     *runner.StreamInfo
	from, to cdc.Offset
}

// Run executes the plan and returns the stats (Read: changes of the stream
// by type, before the filter; Written: what the sink applied), and the
// offsets it read from and moved to. Unstepped, it is one BEGIN IMMEDIATE
// transaction; any error rolls everything back: no rows, no checkpoint,
// no offset move. Stepped (SetCommitStep), it consumes the changes up to
// the read point fixed by its first step in several such transactions,
// each committing its slice's rows with the checkpoint and offset at the
// slice's end; an error rolls back the failing step only, and the steps
// committed before it stay (the next run starts after them). The stats
// then add up the steps' net changes.
func (pp *pushPlan) Run(ctx context.Context, job string) (runner.Stats, cdc.Offset, cdc.Offset, error) {
	b := pp.b
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, err
	}
	defer conn.Close()
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS temp."+pushTable)
	}()
	if pp.stepped {
		// The WAL is checkpointed between steps, outside the write lock
		// (PRAGMA wal_checkpoint(PASSIVE) blocks no writer), instead of by
		// the automatic checkpoint inside a step's COMMIT.
		if _, err := conn.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0"); err != nil {
			return runner.Stats{}, cdc.Offset{}, cdc.Offset{}, err
		}
		defer func() {
			clean := context.WithoutCancel(ctx)
			_, _ = conn.ExecContext(clean, "PRAGMA wal_checkpoint(PASSIVE)")
			if _, err := conn.ExecContext(clean, "PRAGMA wal_autocheckpoint = 1000"); err != nil {
				_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // never pool it without autocheckpoint
			}
		}()
	}
	rows := pp.sizes.first
	if rows == 0 {
		pp.sizes = defaultStepSizes
		rows = pp.sizes.first
	}
	var total runner.Stats
	var first cdc.Offset
	var pre *preRead
	var last int64 // the run's read point, fixed by the first step
	for i := 0; ; i++ {
		t0 := time.Now()
		r, err := pp.runStep(ctx, conn, job, pre, last, rows)
		if i == 0 {
			first = r.from
		}
		if err != nil {
			if i == 0 {
				return runner.Stats{}, first, first, err
			}
			return runner.Stats{}, first, first, fmt.Errorf("pushdown %s: step %d (the %d before it committed, up to %s): %w", job, i+1, i, r.from, err)
		}
		held := time.Since(t0)
		total = addStats(total, r.stats)
		lp, _ := parseOffset(r.to)
		if !pp.stepped || lp.seq >= r.last {
			return total, first, r.to, nil
		}
		if pp.afterStep != nil {
			if err := pp.afterStep(i); err != nil {
				return total, first, r.to, err
			}
		}
		last = r.last
		// size the next step to the hold time aimed at
		if held > 0 {
			rows = int64(float64(rows) * float64(pp.hold) / float64(held))
		}
		rows = min(max(rows, pp.sizes.min), pp.sizes.max)
		// Read the next slice before taking the write lock: the log rows
		// of (to, to+rows] no longer change (only a purge at or below an
		// offset deletes them) and the step re-checks the rest.
		t1 := time.Now()
		if _, err := conn.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
			return total, first, r.to, err
		}
		tc := time.Since(t1)
		pre, err = pp.preRead(ctx, conn, r.info, r.to, min(lp.seq+rows, last))
		b.log.Debug("pushdown read ahead", "job", job, "rows", rows, "held", held, "took", time.Since(t1), "checkpoint", tc)
		if err != nil {
			return total, first, r.to, fmt.Errorf("pushdown %s: read ahead of step %d: %w", job, i+2, err)
		}
	}
}

func addStats(a, b runner.Stats) runner.Stats {
	for _, m := range []*map[cdc.Op]int64{&a.Read, &a.Written} {
		if *m == nil {
			*m = map[cdc.Op]int64{}
		}
	}
	for op, n := range b.Read {
		a.Read[op] += n
	}
	for op, n := range b.Written {
		a.Written[op] += n
	}
	if a.Note == "" {
		a.Note = b.Note
	}
	return a
}

// preRead fills temp.sluice_push with the changes of (from, upTo] outside
// any write transaction.
func (pp *pushPlan) preRead(ctx context.Context, conn *sql.Conn, info *runner.StreamInfo, from cdc.Offset, upTo int64) (*preRead, error) {
	tp, err := anchored(ctx, conn, info, upTo)
	if err != nil {
		return nil, err
	}
	to := tp.offset()
	read, args, err := pushQuery(info, from, to, pp.p.Sink.IgnoresUpdateBefore())
	if err != nil {
		return nil, err
	}
	if err := fillPush(ctx, conn, read, args); err != nil {
		return nil, err
	}
	return &preRead{info: info, from: from, to: to}, nil
}

func fillPush(ctx context.Context, conn *sql.Conn, read string, args []any) error {
	if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS temp."+pushTable); err != nil {
		return err
	}
	_, err := conn.ExecContext(ctx, "CREATE TEMP TABLE "+pushTable+" AS SELECT * FROM ("+read+")", args...)
	return err
}

// runStep runs one transaction of the run: it reads up to rows log rows
// after the job's checkpoint (all of them up to the read point when the
// plan is not stepped), applies them, stores the checkpoint and moves the
// offset. last is the run's read point (0: this step fixes it). pre, when
// it matches the checkpoint and the stream found under the write lock, is
// the step's read, done before.
func (pp *pushPlan) runStep(ctx context.Context, conn *sql.Conn, job string, pre *preRead, last, rows int64) (stepResult, error) {
	b := pp.b
	tb := time.Now()
	if err := sqlitex.Begin(ctx, conn); err != nil {
		return stepResult{}, fmt.Errorf("pushdown %s: begin: %w", job, err)
	}
	tBegin := time.Since(tb)
	r, err := pp.run(ctx, conn, job, pre, last, rows)
	tRun := time.Since(tb) - tBegin
	if err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		sqlitex.DiscardIfCannotWrite(conn, err)
		if valueCaused(err) {
			// the runner replays the run through sluice to name the row
			err = fmt.Errorf("%w: %w", runner.ErrPushdownValue, err)
		}
		return stepResult{from: r.from, to: r.from}, err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return stepResult{from: r.from, to: r.from}, fmt.Errorf("pushdown %s: commit: %w", job, err)
	}
	b.log.Debug("pushdown step committed", "begin", tBegin, "run", tRun, "commit", time.Since(tb)-tBegin-tRun, "job", job, "from", r.from.String(), "to", r.to.String())
	return r, nil
}

func (pp *pushPlan) run(ctx context.Context, conn *sql.Conn, job string, pre *preRead, last, rows int64) (stepResult, error) {
	b := pp.b
	tStart := time.Now()
	if err := syncStream(ctx, conn, pp.stream); err != nil {
		return stepResult{}, err
	}
	info, err := b.streamInfo(ctx, conn, pp.stream)
	if err != nil {
		return stepResult{}, err
	}
	fail := func(err error) (stepResult, error) { return stepResult{from: info.Offset}, err }
	// DDL since Plan (syncStream just re-installed capture for it): the
	// relation projects the planned columns only; the runner plans again.
	if err := runner.PlanStaleError(info.Name, info.Table, pp.p.Source.TableSchema, info.TableSchema); err != nil {
		return fail(err)
	}
	tx, err := pp.sink.Attach(ctx, conn, job)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback(ctx)
	cp, ok, err := tx.Checkpoint(ctx)
	if err != nil {
		return fail(err)
	}
	from, note, err := runner.Start(ctx, job, cp, ok, info)
	if err != nil {
		return fail(err)
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
	fail = func(err error) (stepResult, error) { return stepResult{from: from}, err }
	seq, err := lastSeq(ctx, conn, logTable(info.Table))
	if err != nil {
		return fail(err)
	}
	fp, ferr := parseOffset(from)
	if ferr == nil && fp.seq > seq {
		return fail(futureOffsetError(info, from, seq))
	}
	if last == 0 {
		last = seq
	}
	if ferr == nil {
		if err := checkAnchor(ctx, conn, info, from, fp); err != nil {
			return fail(err)
		}
	}
	toSeq := seq
	if pp.stepped && ferr == nil && !fp.initial {
		toSeq = max(fp.seq, min(last, fp.seq+rows))
	}
	var tp position
	if ferr == nil {
		tp, err = readPointFrom(ctx, conn, info, fp, toSeq)
	} else {
		tp, err = anchored(ctx, conn, info, toSeq)
	}
	if err != nil {
		return fail(err)
	}
	to := tp.offset()
	if err := checkAppendAbsent(ctx, conn, info, from, to); err != nil {
		return fail(err)
	}
	t0 := time.Now()
	var tRead, tApply time.Duration
	defer func() {
		b.log.Debug("pushdown phases", "job", job, "prepare", t0.Sub(tStart), "read", tRead, "apply", tApply, "finish", time.Since(t0)-tRead-tApply, "read ahead", pre != nil)
	}()
	if pre != nil && (pre.from.String() != from.String() || pre.to.String() != to.String() || !sameStream(pre.info, info)) {
		pre = nil // the checkpoint, the offset or the table moved since: read again
	}
	if pre == nil {
		read, args, err := pushQuery(info, from, to, pp.p.Sink.IgnoresUpdateBefore())
		if err != nil {
			return fail(err)
		}
		if err := fillPush(ctx, conn, read, args); err != nil {
			return fail(fmt.Errorf("pushdown %s: read stream %s: %w", job, info.Name, err))
		}
	}
	tRead = time.Since(t0)
	stats := runner.Stats{Read: map[cdc.Op]int64{}, Note: note}
	if err := countOps(ctx, conn, pushCountSQL, stats.Read); err != nil {
		return fail(err)
	}
	if pp.p.Sink.IgnoresUpdateBefore() && info.Mode != "APPEND_ONLY" {
		// the read left out each update's UPDATE_BEFORE (pushQuery)
		if n := stats.Read[cdc.OpUpdateAfter]; n > 0 {
			stats.Read[cdc.OpUpdateBefore] = n
		}
	}
	if err := tx.ApplyRelationWith(ctx, pp.relation, pp.opt); err != nil {
		return fail(err)
	}
	tApply = time.Since(t0) - tRead
	w, err := tx.Commit(ctx, runner.Checkpoint{Job: job, Stream: info.Name, StreamID: info.ID, Offset: to, Updated: time.Now().UTC()})
	if err != nil {
		return fail(err)
	}
	stats.Written = w.Written
	if err := b.advance(ctx, conn, info, info.Offset, to); err != nil {
		return fail(err)
	}
	if _, err := conn.ExecContext(ctx, "DROP TABLE temp."+pushTable); err != nil {
		return fail(err)
	}
	info.Offset = to
	return stepResult{stats: stats, from: from, to: to, info: info, last: last}, nil
}

// sameStream reports whether a and b describe the same stream on the same
// table schema (a read prepared with a fits b).
func sameStream(a, b *runner.StreamInfo) bool {
	return a.ID == b.ID && a.Table == b.Table && a.Mode == b.Mode && reflect.DeepEqual(a.TableSchema, b.TableSchema)
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
