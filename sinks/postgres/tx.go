package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sinks/changerel"
)

// Tx is one run's transaction in the sink database (runner.SinkTx). Rows
// of append, overwrite and errorifexists are COPYed into the target as
// Write receives them; merge rows are COPYed into the TEMP table
// sluice_stage and applied by Commit, or, with one change per key
// (plan.SinkStage.OneChangePerKey), merged batch by batch as Write
// receives them. Nothing is visible to other sessions before Commit.
type Tx struct {
	p            *Plan
	tx           pgx.Tx
	owned        bool // Begin opened tx; Commit commits it
	job          string
	c            *compiled
	keyIdx       []int
	keyName      []string
	ord          int64 // rows staged so far (their __ord)
	staged       int64 // rows in the staging table now (not yet merged)
	partial      bool  // a partial row was staged
	deferred     bool  // batches were set aside (mergeBatch)
	deferredRows int64 // rows set aside
	written      map[cdc.Op]int64
	nulls        changerel.NullSuspects // staged rows that write NULL into a NOT NULL column
	err          error                  // a failed Write poisons the transaction
	done         bool
	saved        *txState // the state at the savepoint of a run with dead letters (deadletter.go)
	copyMerge    bool     // CopyFrom merges through copyTable (copytext.go)
}

// Begin opens the sink transaction of one run of job (READ COMMITTED) and
// takes a transaction-level advisory lock on the job's name, so two runs of
// one job serialize. Inside it, it creates a missing target and applies the
// mode: overwrite deletes the target's rows; errorifexists fails with an
// error wrapping runner.ErrTargetExists when the target exists; ignore
// returns an error matching ErrIgnored (and runner.ErrTargetExists).
func (p *Plan) Begin(ctx context.Context, job string) (runner.SinkTx, error) {
	return p.begin(ctx, job, "on")
}

// BeginDeferred implements runner.DeferredSyncPlan: Begin with
// synchronous_commit = off for the transaction, so that Commit returns
// before its WAL is flushed. A crash of the server may then undo it with
// the commits after it (PostgreSQL replays its WAL in order, up to what
// was flushed), and the next commit with synchronous_commit on flushes the
// WAL up to itself, this commit included. A backfill commits its chunks
// but the last so.
func (p *Plan) BeginDeferred(ctx context.Context, job string) (runner.SinkTx, error) {
	return p.begin(ctx, job, "off")
}

// syncCommitOnSQL raises synchronous_commit = off to on for the sink
// transaction (begin).
const syncCommitOnSQL = `SELECT set_config('synchronous_commit', 'on', true) WHERE current_setting('synchronous_commit') = 'off'`

func (p *Plan) begin(ctx context.Context, job, syncCommit string) (runner.SinkTx, error) {
	if err := p.sink.ensure(ctx); err != nil {
		return nil, err
	}
	tx, err := p.sink.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres sink: begin: %w", err)
	}
	// The source moves its offset (and purges its log) once this commit
	// returns: with synchronous_commit = off the server would report the
	// commit before its WAL is flushed, and a crash could undo it. Such a
	// setting (server, role, database or URL) is raised to on for this
	// transaction only; other values (local, remote_write, on,
	// remote_apply) flush locally and are kept.
	q := syncCommitOnSQL
	if syncCommit == "off" {
		q = `SELECT set_config('synchronous_commit', 'off', true)`
	}
	if _, err := tx.Exec(ctx, q); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("postgres sink: synchronous_commit: %w", err)
	}
	t, err := p.attach(ctx, tx, job, true)
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return t, nil
}

// Attach is Begin inside a transaction the caller runs (pushdown): it sets
// up the target the same way but stages nothing (Write fails; the caller
// applies its rows with ApplyRelationWith); Commit then stores the
// checkpoint but leaves COMMIT and ROLLBACK to the caller. The caller must
// have created sluice.checkpoints (EnsureCheckpoints) beforehand.
func (p *Plan) Attach(ctx context.Context, tx pgx.Tx, job string) (*Tx, error) {
	return p.attach(ctx, tx, job, false)
}

func (p *Plan) attach(ctx context.Context, tx pgx.Tx, job string, owned bool) (*Tx, error) {
	st := p.st
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('sluice.job:' || $1))`, job); err != nil {
		return nil, fmt.Errorf("postgres sink: lock job %q: %w", job, err)
	}
	t, exists, err := DescribeTable(ctx, tx, st.Table)
	if err != nil {
		return nil, fmt.Errorf("postgres sink: %w", err)
	}
	if exists {
		switch st.Mode {
		case plan.ModeErrorIfExists:
			return nil, fmt.Errorf("postgres sink: %w: %s (mode errorifexists)", runner.ErrTargetExists, Quote(st.Table))
		case plan.ModeIgnore:
			return nil, &ignoredError{table: st.Table}
		}
	}
	c, err := p.compile(ctx, tx, t, exists)
	if err != nil {
		return nil, err
	}
	x := &Tx{p: p, tx: tx, owned: owned, job: job, c: c, written: map[cdc.Op]int64{}}
	x.keyColumns()
	var setup []string
	if c.create != "" {
		setup = append(setup, c.create)
	}
	if c.index != "" {
		setup = append(setup, c.index)
	}
	setup = append(setup, c.evolve...)
	if exists && st.Mode == plan.ModeOverwrite {
		setup = append(setup, "DELETE FROM "+Quote(st.Table))
	}
	if owned && c.stage != "" {
		setup = append(setup, "DROP TABLE IF EXISTS pg_temp."+StageTable, c.stage)
	}
	for _, q := range setup {
		if _, err := tx.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("postgres sink: %s: %w", firstWords(q), err)
		}
	}
	if owned {
		if err := forgetStaleCopy(ctx, tx, c); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func firstWords(sql string) string {
	f := strings.Fields(sql)
	if len(f) > 4 {
		f = f[:4]
	}
	return strings.Join(f, " ")
}

// keyColumns picks the columns that name a row in errors
// (plan.SinkStage.RowKey).
func (t *Tx) keyColumns() { t.keyIdx, t.keyName = t.p.st.RowKey(cdc.Schema{Key: t.c.target.Key}) }

// Checkpoint returns the job's stored checkpoint, read inside the
// transaction; ok is false when the job has none.
func (t *Tx) Checkpoint(ctx context.Context) (runner.Checkpoint, bool, error) {
	return ReadCheckpoint(ctx, t.tx, t.job)
}

// Write COPYs a batch into the target (append modes) or the staging table
// (merge). Each Row is aligned with SinkStage.Schema and holds canonical
// values; each is coerced to its target column's logical type (cdc.Coerce)
// and encoded for pgx (Encode: DECIMAL exactly, as pgtype.Numeric). Append
// modes write every change they receive, whatever its Op; columns a
// partial row does not carry are NULL. A value that does not fit returns a
// *cdc.ValueError naming the row's key and the column, and poisons the
// transaction: Commit fails and nothing is stored.
func (t *Tx) Write(ctx context.Context, batch []cdc.Change) error {
	if t.err != nil {
		return t.err
	}
	if t.done {
		return errors.New("postgres sink: write after commit")
	}
	if !t.owned {
		return errors.New("postgres sink: write on an attached transaction (it stages nothing; apply a relation with ApplyRelationWith)")
	}
	if err := t.write(ctx, batch); err != nil {
		t.err = err
		return err
	}
	return nil
}

func (t *Tx) write(ctx context.Context, batch []cdc.Change) error {
	if len(batch) == 0 {
		return nil
	}
	st := t.p.st
	cols := st.Schema.Columns
	staged := t.c.apply != nil
	merge := staged && st.Mode.Keyed() && st.Merge == nil // merge or history (append modes stage only to cast)
	off := 0
	if staged {
		off = len(t.c.meta)
	}
	rows := make([][]any, 0, len(batch))
	for bi := range batch {
		ch := &batch[bi]
		if len(ch.Row) != len(cols) || (ch.Present != nil && len(ch.Present) != len(cols)) {
			return fmt.Errorf("postgres sink: row has %d values for %d columns", len(ch.Row), len(cols))
		}
		if merge && ch.Op == cdc.OpUpdateBefore {
			continue // a merge ignores UPDATE_BEFORE
		}
		r := make([]any, off+len(cols))
		if staged {
			if ch.Present != nil && merge && t.c.partial == nil {
				return errPartialRow(st.Table)
			}
			t.ord++
			r[0], r[1], r[2], r[3] = ch.Op.String(), ch.CommitVersion, t.ord, presentMask(ch)
			if off > 4 {
				r[4] = ch.CommitTime
			}
			if ch.Present != nil {
				t.partial = true
			}
		}
		for i := range cols {
			var v any
			if ch.Has(i) {
				v = ch.Row[i]
			}
			cv, err := cdc.Coerce(v, t.c.types[i])
			if err != nil {
				return t.valueError(err, ch, t.c.columns[i])
			}
			if t.c.casts != nil && t.c.casts[i] != "" && cv != nil {
				r[off+i] = Text(cv, t.c.types[i]) // staged as text, cast by the apply
				continue
			}
			r[off+i] = Encode(cv, t.c.types[i])
		}
		if merge {
			for j, i := range t.keyIdx {
				if !ch.Has(i) || ch.Row[i] == nil {
					return t.valueError(&cdc.ValueError{Type: t.c.types[i], Reason: "a merge key column must not be NULL or missing"}, ch, t.keyName[j])
				}
			}
			if t.c.notNull != nil {
				t.nulls.Note(ch, t.c.notNull, t.keyOf)
			}
		} else if staged && t.c.notNull != nil {
			t.nulls.NoteAppended(ch, t.c.notNull, t.keyOf)
		}
		rows = append(rows, r)
		if !staged {
			t.written[ch.Op]++
		}
	}
	var table pgx.Identifier
	var names []string
	if staged {
		table = pgx.Identifier{StageTable}
		names = append(append([]string(nil), t.c.meta...), st.Schema.Names()...)
	} else {
		table = pgx.Identifier{st.Table}
		names = t.c.columns
	}
	if _, err := t.tx.CopyFrom(ctx, table, names, pgx.CopyFromRows(rows)); err != nil {
		return t.copyError(err, batch, rows)
	}
	if staged {
		t.staged += int64(len(rows))
		if t.c.batch != nil && !t.partial {
			return t.mergeBatch(ctx)
		}
	}
	return nil
}

// mergeBatch merges the staged batch into the target and empties the
// staging table: with one change per key (plan.SinkStage.OneChangePerKey)
// batches never share a key, so merging each as it arrives equals merging
// them all at Commit, and the database merges while the runner reads the
// next batch.
//
// A batch whose MERGE fails on a unique constraint (an intermediate state
// the source never held at a commit: two keys of different batches that
// swapped a UNIQUE value) is set aside in a TEMP table and applied at
// Commit, after every other batch, with the whole-window apply and its
// reordering (unique.go).
func (t *Tx) mergeBatch(ctx context.Context) error {
	err := t.applyStaged(ctx, t.c.batch, "TRUNCATE pg_temp."+StageTable)
	if !errors.Is(err, errUniqueDeferred) {
		return err
	}
	if !t.deferred {
		if _, err := t.tx.Exec(ctx, fmt.Sprintf("CREATE TEMP TABLE %s (LIKE pg_temp.%s) ON COMMIT DROP", deferredTable, StageTable)); err != nil {
			return fmt.Errorf("postgres sink: set a batch aside: %w", err)
		}
		t.deferred = true
	}
	for _, q := range []string{fmt.Sprintf("INSERT INTO pg_temp.%s SELECT * FROM pg_temp.%s", deferredTable, StageTable), "TRUNCATE pg_temp." + StageTable} {
		if _, err := t.tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("postgres sink: set a batch aside: %w", err)
		}
	}
	t.deferredRows += t.staged
	t.staged = 0
	t.nulls.Reset()
	return nil
}

// deferredTable holds batches set aside by mergeBatch.
const deferredTable = "sluice_deferred"

// applyStaged runs a over the staged rows, with work_mem sized to them,
// counts what it wrote, then runs done (empties or drops the staging
// table).
func (t *Tx) applyStaged(ctx context.Context, a *Apply, done string) error {
	if _, err := t.tx.Exec(ctx, WorkMemSQL(t.staged)); err != nil {
		return fmt.Errorf("postgres sink: %w", err)
	}
	w, err := a.Exec(ctx, t.tx)
	if err != nil {
		return t.notNullError(err)
	}
	t.nulls.Reset()
	t.AddWritten(w)
	if _, err := t.tx.Exec(ctx, done); err != nil {
		return fmt.Errorf("postgres sink: %s: %w", firstWords(done), err)
	}
	t.staged = 0
	return nil
}

var copyLine = regexp.MustCompile(`line (\d+)(?:, column ([^:]+))?`)

// copyError names the row (by key) and column of a COPY failure.
func (t *Tx) copyError(err error, batch []cdc.Change, rows [][]any) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if m := copyLine.FindStringSubmatch(pe.Where); m != nil {
			n, _ := strconv.Atoi(m[1])
			if n >= 1 && n <= len(rows) {
				// rows skip UPDATE_BEFOREs of a merge; find the change by counting.
				ch := t.nthWritten(batch, n-1)
				if ch != nil {
					col := m[2]
					if col == "" {
						col = pe.ColumnName
					}
					what := cdc.RowLabel(ch, t.p.st.Schema, t.keyIdx, t.keyName)
					if col != "" {
						what += ", column " + col
					}
					return fmt.Errorf("postgres sink: write %s: %s: %w", Quote(t.p.st.Table), what, err)
				}
			}
		}
	}
	return fmt.Errorf("postgres sink: write %s: %w", Quote(t.p.st.Table), err)
}

func (t *Tx) nthWritten(batch []cdc.Change, n int) *cdc.Change {
	skip := t.c.apply != nil && t.p.st.Merge == nil && t.p.st.Mode.Keyed()
	for i := range batch {
		if skip && batch[i].Op == cdc.OpUpdateBefore {
			continue
		}
		if n == 0 {
			return &batch[i]
		}
		n--
	}
	return nil
}

func presentMask(ch *cdc.Change) any {
	if ch.Present == nil {
		return nil
	}
	b := make([]byte, len(ch.Present))
	for i, p := range ch.Present {
		b[i] = '0'
		if p {
			b[i] = '1'
		}
	}
	return string(b)
}

// keyText renders the row's key as "(k1=v1, k2=v2)"; a row without key
// columns (an append to a table without a primary key) as all its values.
func (t *Tx) keyText(ch *cdc.Change) string {
	return cdc.RowText(ch, t.p.st.Schema, t.keyIdx, t.keyName)
}

type rawText string

func (r rawText) String() string { return string(r) }

func (t *Tx) valueError(err error, ch *cdc.Change, column string) error {
	var ve *cdc.ValueError
	if !errors.As(err, &ve) {
		return fmt.Errorf("postgres sink: column %q: %w", column, err)
	}
	out := *ve
	out.Column = column
	if t.keyIdx == nil { // no key columns: name the row by its change and commit version
		return fmt.Errorf("postgres sink: write %s: %s: %w", Quote(t.p.st.Table), cdc.RowLabel(ch, t.p.st.Schema, nil, nil), &out)
	}
	_, out.Key = t.keyOf(ch)
	return fmt.Errorf("postgres sink: write %s: %w", Quote(t.p.st.Table), &out)
}

// Commit applies the staged merge rows (the Apply statements over
// sluice_stage; the partial-row variant when a partial row was staged),
// upserts the job's checkpoint and commits, all in one transaction. It
// returns the rows written by change type. On error it rolls back: neither
// rows nor checkpoint are stored. A Tx from Attach does not COMMIT.
func (t *Tx) Commit(ctx context.Context, cp runner.Checkpoint) (runner.Stats, error) {
	if t.done {
		return runner.Stats{}, errors.New("postgres sink: commit after commit or rollback")
	}
	if t.err != nil {
		_ = t.Rollback(ctx)
		return runner.Stats{}, t.err
	}
	st, err := t.commit(ctx, cp)
	if err != nil {
		_ = t.Rollback(ctx)
		return runner.Stats{}, err
	}
	return st, nil
}

func (t *Tx) commit(ctx context.Context, cp runner.Checkpoint) (runner.Stats, error) {
	if err := t.ApplyStaged(ctx); err != nil {
		return runner.Stats{}, err
	}
	if err := StoreCheckpoint(ctx, t.tx, t.job, cp); err != nil {
		return runner.Stats{}, err
	}
	if t.owned {
		if err := t.tx.Commit(ctx); err != nil {
			return runner.Stats{}, fmt.Errorf("postgres sink: commit: %w", err)
		}
	}
	t.done = true
	return runner.Stats{Written: t.written}, nil
}

// ApplyStaged applies the merge rows staged so far to the target and drops
// the staging table, without committing: Commit runs it first, and a dry
// replay of a failed pushdown (runner) runs it to surface what only the
// apply detects (a NOT NULL violation, named by its row's key). It does
// nothing for append modes or when nothing is staged.
func (t *Tx) ApplyStaged(ctx context.Context) error {
	if t.deferred {
		// Batches set aside (mergeBatch) join what is staged.
		for _, q := range []string{fmt.Sprintf("INSERT INTO pg_temp.%s SELECT * FROM pg_temp.%s", StageTable, deferredTable), "DROP TABLE pg_temp." + deferredTable} {
			if _, err := t.tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("postgres sink: apply the batches set aside: %w", err)
			}
		}
		t.deferred = false
		t.staged += t.deferredRows
	}
	if t.c.apply == nil || t.staged == 0 {
		return nil
	}
	a := t.c.apply
	if t.partial && t.c.partial != nil {
		a = t.c.partial
	}
	return t.applyStaged(ctx, a, "DROP TABLE pg_temp."+StageTable)
}

// ApplyRelation applies the rows of relation (a change relation, see
// CompileApply) to the target inside the transaction, with the statements
// Commit uses for staged rows, and adds what it wrote to the Stats Commit
// returns. Pushdown calls it on a Tx from Attach.
func (t *Tx) ApplyRelation(ctx context.Context, relation string) error {
	return t.ApplyRelationWith(ctx, relation, ApplyOptions{})
}

// ApplyRelationWith is ApplyRelation with what the caller knows of the
// relation (opt.FullRows, opt.Partial); the server version is the sink's.
func (t *Tx) ApplyRelationWith(ctx context.Context, relation string, opt ApplyOptions) error {
	opt.ServerVersion = t.c.version
	a, err := CompileApply(t.p.st, t.c.target.Schema(), relation, opt)
	if err != nil {
		return err
	}
	w, err := a.Exec(ctx, t.tx)
	if err != nil {
		return t.notNullError(err)
	}
	t.nulls.Reset()
	t.AddWritten(w)
	return nil
}

// AddWritten adds rows the caller wrote to the target inside an attached
// transaction (a pushdown's one statement, Apply.MergeSQL) to the counts
// Commit returns.
func (t *Tx) AddWritten(w map[cdc.Op]int64) {
	for op, n := range w {
		t.written[op] += n
	}
}

// Rollback abandons the transaction (nothing is stored); it is safe after
// Commit and more than once. A Tx from Attach leaves ROLLBACK to its
// caller.
func (t *Tx) Rollback(ctx context.Context) error {
	if t.done {
		return nil
	}
	t.done = true
	if !t.owned {
		return nil
	}
	if err := t.tx.Rollback(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Errorf("postgres sink: rollback: %w", err)
	}
	return nil
}
