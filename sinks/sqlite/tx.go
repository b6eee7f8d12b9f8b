package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sinks/changerel"
)

// Tx is one run's transaction in the sink database (runner.SinkTx). Rows of
// append, overwrite and errorifexists are inserted as Write receives them;
// merge rows are staged in the TEMP table sluice_stage and applied by
// Commit. Nothing is visible to other connections before Commit.
type Tx struct {
	p         *Plan
	q         Querier   // the connection inside the transaction
	conn      *sql.Conn // the connection Begin took; nil for Attach
	release   func()    // lets the next Begin of this sink in (gate.go); nil for Attach
	owned     bool      // Begin took the connection and BEGIN IMMEDIATE; Commit COMMITs
	lazy      bool      // BeginDeferred: Commit need not be durable
	job       string
	target    cdc.Schema
	c         *compiled
	ins       *sql.Stmt         // the prepared insert, nil when q cannot prepare
	multi     map[int]*sql.Stmt // prepared multi-row inserts by rows (multirow.go)
	copy      *copyLoad         // what AcceptCopy accepted (copytext.go)
	copyMulti map[int]*sql.Stmt // prepared multi-row inserts of CopyFrom by rows
	keyIdx    []int
	keyName   []string
	ord       int64
	written   map[cdc.Op]int64
	nulls     changerel.NullSuspects // staged rows that write NULL into a NOT NULL column
	applied   bool                   // ApplyStaged ran: the staging table is gone
	err       error                  // a failed Write poisons the transaction
	done      bool
	saved     *txState // the state at the savepoint of a run with dead letters (deadletter.go)
}

// Begin opens the sink transaction of one run of job: it takes a dedicated
// connection and runs BEGIN IMMEDIATE, so the write lock is held from the
// start and two runs into one sink database serialize: in this process the
// second waits until the first transaction ends (gate.go), across
// processes for the busy timeout. Inside it, it creates the checkpoint table and a missing target,
// and applies the mode: overwrite deletes the target's rows; errorifexists
// fails with an error wrapping runner.ErrTargetExists when the target
// exists; ignore returns an error matching ErrIgnored (and
// runner.ErrTargetExists) when it exists.
func (p *Plan) Begin(ctx context.Context, job string) (runner.SinkTx, error) {
	return p.begin(ctx, job, false)
}

// BeginDeferred implements runner.DeferredSyncPlan: Begin with PRAGMA
// synchronous = NORMAL, so that Commit does not fsync. In WAL mode (every
// file sluice opens) a power loss may then undo the last commits, whole
// and in order (the WAL is replayed up to its last valid commit), and the
// next commit with synchronous = FULL (any Begin's) syncs the WAL with
// their frames. A backfill commits its chunks but the last so.
func (p *Plan) BeginDeferred(ctx context.Context, job string) (runner.SinkTx, error) {
	return p.begin(ctx, job, true)
}

func (p *Plan) begin(ctx context.Context, job string, lazy bool) (tx runner.SinkTx, err error) {
	release := p.sink.enter(ctx)
	defer func() {
		if err != nil {
			release()
		}
	}()
	conn, err := p.sink.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite sink: connect: %w", err)
	}
	// A cross-database run moves the source's offset (and purges its
	// change log) once this commit returns: the commit must be on disk by
	// then. In WAL mode synchronous=NORMAL (sluice's default) fsyncs only
	// at checkpoints, and a power loss can undo the last commits;
	// synchronous=FULL fsyncs the WAL at every commit.
	level := "FULL"
	if lazy {
		// Only a WAL loses commits whole and in order; a rollback journal
		// with NORMAL may not.
		var mode string
		if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			conn.Close()
			return nil, fmt.Errorf("sqlite sink: read PRAGMA journal_mode: %w", err)
		}
		if lazy = strings.EqualFold(mode, "wal"); lazy {
			level = "NORMAL"
		}
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = "+level); err != nil {
		sqlitex.DiscardIfCannotWrite(conn, err)
		conn.Close()
		return nil, fmt.Errorf("sqlite sink: PRAGMA synchronous = %s: %w", level, err)
	}
	if err := sqlitex.Begin(ctx, conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("sqlite sink: begin write transaction: %w", err)
	}
	t, err := p.attach(ctx, conn, job)
	if err == nil {
		t.conn, t.owned, t.lazy, t.release = conn, true, lazy, release
	}
	if err != nil {
		conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		// BEGIN IMMEDIATE succeeds on a connection that opened the file
		// read-only; the first write fails (SQLITE_READONLY): drop the
		// connection, so the next try opens the file again instead of
		// failing the same way until ConnMaxLifetime after the file is
		// writable again.
		sqlitex.DiscardIfCannotWrite(conn, err)
		conn.Close()
		return nil, err
	}
	return t, nil
}

// Attach is Begin inside a write transaction the caller already runs on q
// (BEGIN IMMEDIATE on one connection: a *sql.Conn, *sql.Tx or
// *sqlitex.Tx), for the pushdown of the sqlite backend. It sets up the
// target the same way (mode checks, creation, overwrite's DELETE);
// ApplyRelation then writes a change relation, and Commit applies any
// staged rows and stores the checkpoint but leaves COMMIT — and ROLLBACK,
// and releasing the connection — to the caller.
func (p *Plan) Attach(ctx context.Context, q Querier, job string) (*Tx, error) {
	return p.attach(ctx, q, job)
}

func (p *Plan) attach(ctx context.Context, conn Querier, job string) (*Tx, error) {
	st := p.st
	if _, err := conn.ExecContext(ctx, createCheckpointsSQL); err != nil {
		return nil, fmt.Errorf("sqlite sink: create %s: %w", CheckpointTable, err)
	}
	target, exists, err := readTarget(ctx, conn, st.Table)
	if err != nil {
		return nil, err
	}
	if exists {
		switch st.Mode {
		case plan.ModeErrorIfExists:
			return nil, fmt.Errorf("sqlite sink: %w: %q (mode errorifexists)", runner.ErrTargetExists, st.Table)
		case plan.ModeIgnore:
			return nil, &ignoredError{table: st.Table}
		}
	}
	c, err := p.compile(ctx, conn, target, exists)
	if err != nil {
		return nil, err
	}
	for _, q := range c.evolve {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nil, evolveError(st.Table, q, err)
		}
	}
	if len(c.evolve) > 0 {
		// The target as the statements left it (a widened column moved).
		if target, _, err = readTarget(ctx, conn, st.Table); err != nil {
			return nil, err
		}
	}
	if !exists {
		target = cdc.Schema{Columns: st.WithAdded().Columns}
		if st.Mode == plan.ModeMerge {
			target.Key = st.Keys
		}
	}
	t := &Tx{p: p, q: conn, job: job, target: target, c: c, written: map[cdc.Op]int64{}}
	t.keyColumns()
	var setup []string
	if c.create != "" {
		setup = append(setup, c.create)
	}
	if c.index != "" {
		setup = append(setup, c.index)
	}
	if exists && st.Mode == plan.ModeOverwrite {
		setup = append(setup, "DELETE FROM "+sqlitex.Quote(st.Table))
	}
	if c.stage != "" {
		setup = append(setup, "DROP TABLE IF EXISTS temp."+StageTable, c.stage)
	}
	for _, q := range setup {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("sqlite sink: %s: %w", firstWords(q), err)
		}
	}
	if pc, ok := conn.(interface {
		PrepareContext(context.Context, string) (*sql.Stmt, error)
	}); ok {
		if t.ins, err = pc.PrepareContext(ctx, c.insert); err != nil {
			return nil, fmt.Errorf("sqlite sink: prepare insert into %q: %w", st.Table, err)
		}
	}
	return t, nil
}

// keyColumns picks the columns that name a row in errors
// (plan.SinkStage.RowKey).
func (t *Tx) keyColumns() { t.keyIdx, t.keyName = t.p.st.RowKey(t.target) }

// Checkpoint returns the job's stored checkpoint, read inside the
// transaction; ok is false when the job has none.
func (t *Tx) Checkpoint(ctx context.Context) (runner.Checkpoint, bool, error) {
	return ReadCheckpoint(ctx, t.q, t.job)
}

// Write writes (append modes) or stages (merge) a batch. Each Row is aligned
// with SinkStage.Schema and holds canonical values; each value is converted
// to its target column's type (cdc.Coerce) and encoded per the storage
// conventions. Append modes write every change they receive, whatever its
// Op (a DELETE that the job's filter kept becomes a row); columns a partial
// row does not carry are NULL. A value that does not fit returns a
// *cdc.ValueError naming the row's key and the column, and poisons the
// transaction: Commit fails and nothing is stored.
func (t *Tx) Write(ctx context.Context, batch []cdc.Change) error {
	if t.err != nil {
		return t.err
	}
	if t.done {
		return errors.New("sqlite sink: write after commit")
	}
	if err := t.write(ctx, batch); err != nil {
		t.err = err
		return err
	}
	return nil
}

// write stages a batch of a keyed mode (or writes an append-like one:
// writeRows). Staged rows go into the staging table with multi-row
// INSERTs (rowsPerInsert rows each, as writeRows); the staging table has
// no constraint a value can fail, but should a statement fail for a value
// its rows are staged again one by one, so that the error names the row.
func (t *Tx) write(ctx context.Context, batch []cdc.Change) error {
	cols := t.p.st.Schema.Columns
	if t.c.apply == nil {
		return t.writeRows(ctx, batch)
	}
	n := len(cols) + t.c.meta
	per := rowsPerInsert(n)
	args := make([]any, 0, min(len(batch), per)*n)
	for start := 0; start < len(batch); start += per {
		rows := batch[start:min(start+per, len(batch))]
		args = args[:0]
		for bi := range rows {
			ch := &rows[bi]
			var err error
			if args, err = t.stageArgs(args, ch); err != nil {
				return err
			}
		}
		err := t.insertRows(ctx, len(rows), args)
		if err != nil && sqlitex.IsValueError(err) && len(rows) > 1 {
			// name the row: one by one (the failed statement left nothing)
			for bi := range rows {
				if err := t.insert(ctx, args[bi*n:(bi+1)*n]); err != nil {
					return t.insertError(err, &rows[bi])
				}
			}
			continue
		}
		if err != nil {
			if len(rows) == 1 {
				return t.insertError(err, &rows[0])
			}
			return fmt.Errorf("sqlite sink: write %q: %w", t.p.st.Table, err)
		}
	}
	return nil
}

// appendValues appends each column's value of ch (NULL for a column a
// partial row does not carry), encoded for its relation type, to args; a
// value that does not encode names the row and the column (valueError).
func (t *Tx) appendValues(args []any, ch *cdc.Change) ([]any, error) {
	for i, c := range t.p.st.Schema.Columns {
		var v any
		if ch.Has(i) {
			v = ch.Row[i]
		}
		enc, err := sqlitex.Encode(v, t.c.relTypes[i])
		if err != nil {
			return args, t.valueError(err, ch, c.Name)
		}
		args = append(args, enc)
	}
	return args, nil
}

// stageArgs appends the staging row of ch (the meta columns, then each
// column's value encoded for its relation type) to args.
func (t *Tx) stageArgs(args []any, ch *cdc.Change) ([]any, error) {
	cols := t.p.st.Schema.Columns
	if len(ch.Row) != len(cols) || (ch.Present != nil && len(ch.Present) != len(cols)) {
		return args, fmt.Errorf("sqlite sink: row has %d values for %d columns", len(ch.Row), len(cols))
	}
	if ch.Present != nil && t.p.st.Merge == nil && t.c.apply.full {
		return args, fmt.Errorf("sqlite sink: merge into %q: %w (the source must report partial rows: runner.PartialRowSource)", t.p.st.Table, ErrPartialRow)
	}
	t.ord++
	args = append(args, ch.Op.String(), ch.CommitVersion, t.ord, presentMask(ch))
	if t.c.meta > 4 {
		args = append(args, ch.CommitTime.Format(CommitTimeLayout))
	}
	args, err := t.appendValues(args, ch)
	if err != nil {
		return args, err
	}
	if t.p.st.Merge == nil && ch.Op != cdc.OpUpdateBefore {
		for j, i := range t.keyIdx {
			if !ch.Has(i) || ch.Row[i] == nil {
				return args, t.valueError(&cdc.ValueError{Type: t.c.relTypes[i], Reason: "a merge key column must not be NULL or missing"}, ch, t.keyName[j])
			}
		}
		if t.c.notNull != nil {
			t.nulls.Note(ch, t.c.notNull, t.keyOf)
		}
	}
	return args, nil
}

func (t *Tx) insert(ctx context.Context, args []any) error {
	var err error
	if t.ins != nil {
		_, err = t.ins.ExecContext(ctx, args...)
	} else {
		_, err = t.q.ExecContext(ctx, t.c.insert, args...)
	}
	return err
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

func (t *Tx) valueError(err error, ch *cdc.Change, column string) error {
	var ve *cdc.ValueError
	if !errors.As(err, &ve) {
		return fmt.Errorf("sqlite sink: column %q: %w", column, err)
	}
	out := *ve
	out.Column = column
	if t.keyIdx != nil {
		_, out.Key = t.keyOf(ch)
	}
	return fmt.Errorf("sqlite sink: write %q: %w", t.p.st.Table, &out)
}

// keyText renders the row's key as "(k1=v1, k2=v2)"; a row without key
// columns (an append to a table without a primary key) as all its values.
func (t *Tx) keyText(ch *cdc.Change) string {
	return cdc.RowText(ch, t.p.st.Schema, t.keyIdx, t.keyName)
}

// ApplyStaged applies the merge rows staged so far to the target and drops
// the staging table, without committing: Commit runs it first, and a dry
// replay of a failed pushdown (runner) runs it to surface what only the
// apply detects (a NOT NULL violation, named by its row's key). It does
// nothing for append modes or once applied.
func (t *Tx) ApplyStaged(ctx context.Context) error {
	if t.c.apply == nil || t.applied {
		return nil
	}
	w, err := t.c.apply.Exec(ctx, t.q)
	if err != nil {
		return t.notNullError(err)
	}
	t.nulls.Reset()
	for op, n := range w {
		t.written[op] += n
	}
	if _, err := t.q.ExecContext(ctx, "DROP TABLE temp."+StageTable); err != nil {
		return fmt.Errorf("sqlite sink: drop staging table: %w", err)
	}
	t.applied = true
	return nil
}

// Commit applies the staged merge rows (the Apply statements over
// sluice_stage), upserts the job's checkpoint row and commits, all in the
// transaction Begin opened. It returns the rows written by change type (see
// Apply.Exec; append modes count every row by its Op). On error it rolls
// back: neither rows nor checkpoint are stored. A Tx from Attach does not
// COMMIT; its caller does.
func (t *Tx) Commit(ctx context.Context, cp runner.Checkpoint) (runner.Stats, error) {
	if t.done {
		return runner.Stats{}, errors.New("sqlite sink: commit after commit or rollback")
	}
	if t.err != nil {
		t.Rollback(ctx)
		return runner.Stats{}, t.err
	}
	st, err := t.commit(ctx, cp)
	if err != nil {
		t.err = err
		t.Rollback(ctx)
		return runner.Stats{}, err
	}
	return st, nil
}

func (t *Tx) commit(ctx context.Context, cp runner.Checkpoint) (runner.Stats, error) {
	if err := t.ApplyStaged(ctx); err != nil {
		return runner.Stats{}, err
	}
	if err := StoreCheckpoint(ctx, t.q, t.job, cp); err != nil {
		return runner.Stats{}, err
	}
	if t.ins != nil {
		t.ins.Close()
	}
	t.closeMulti()
	if t.owned {
		if err := durable(ctx, t.conn, t.lazy); err != nil {
			return runner.Stats{}, err
		}
		if _, err := t.conn.ExecContext(ctx, "COMMIT"); err != nil {
			return runner.Stats{}, fmt.Errorf("sqlite sink: commit: %w", err)
		}
		t.conn.Close()
		t.release()
	}
	t.done = true
	return runner.Stats{Written: t.written}, nil
}

// ApplyRelation applies the rows of relation (a table name or a
// parenthesized SELECT following the change-relation contract of the
// package doc, projected columns typed as SinkStage.Schema) to the target
// inside the transaction, with the same statements Commit uses for staged
// rows, and adds what it wrote to the Stats Commit returns. Pushdown calls
// it on a Tx from Attach.
func (t *Tx) ApplyRelation(ctx context.Context, relation string) error {
	return t.ApplyRelationWith(ctx, relation, ApplyOptions{})
}

// ApplyRelationWith is ApplyRelation with what the caller knows of the
// relation (ApplyOptions).
func (t *Tx) ApplyRelationWith(ctx context.Context, relation string, opt ApplyOptions) error {
	a, err := CompileApplyWith(t.p.st, t.target, relation, opt)
	if err != nil {
		return err
	}
	w, err := a.Exec(ctx, t.q)
	if err != nil {
		return err
	}
	for op, n := range w {
		t.written[op] += n
	}
	return nil
}

// Rollback abandons the transaction (nothing is stored); it is safe after
// Commit and more than once. A Tx from Attach leaves ROLLBACK to its caller.
func (t *Tx) Rollback(ctx context.Context) error {
	if t.done {
		return nil
	}
	t.done = true
	if t.ins != nil {
		t.ins.Close()
	}
	t.closeMulti()
	if !t.owned {
		return nil
	}
	_, err := t.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	sqlitex.DiscardIfCannotWrite(t.conn, t.err)
	if cerr := t.conn.Close(); err == nil {
		err = cerr
	}
	t.release()
	if err != nil {
		return fmt.Errorf("sqlite sink: rollback: %w", err)
	}
	return nil
}

// durable returns an error wrapping ErrNotDurable unless conn commits with
// PRAGMA synchronous FULL (2) or EXTRA (3), or NORMAL (1) when lazy
// (BeginDeferred chose NORMAL for a database in WAL mode: the commit may
// wait for the next durable one), or its database is in memory (nothing
// to lose on disk).
func durable(ctx context.Context, conn *sql.Conn, lazy bool) error {
	var level int
	if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&level); err != nil {
		return fmt.Errorf("sqlite sink: read PRAGMA synchronous: %w", err)
	}
	if level >= 2 || lazy && level == 1 {
		return nil
	}
	var file string
	if err := conn.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
		return fmt.Errorf("sqlite sink: read the database file: %w", err)
	}
	if file == "" {
		return nil
	}
	return fmt.Errorf("sqlite sink: %w: synchronous is %d", ErrNotDurable, level)
}
