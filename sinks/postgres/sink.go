package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// Sink writes projected rows into tables of one PostgreSQL database. The
// postgres backend (sources/postgres) delegates runner.Sink's Target and
// PrepareSink to it.
type Sink struct {
	pool    *pgxpool.Pool
	version int
	log     *slog.Logger

	mu      sync.Mutex
	ensured bool
}

// New returns a sink on pool; version is the server's server_version_num
// (MERGE needs 150000). log may be nil.
func New(pool *pgxpool.Pool, version int, log *slog.Logger) *Sink {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sink{pool: pool, version: version, log: log}
}

// ensure creates sluice.checkpoints once per Sink, in its own short
// transaction under an advisory lock (CREATE … IF NOT EXISTS races
// between processes otherwise).
func (s *Sink) ensure(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ensured {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('sluice.schema'))`); err != nil {
			return err
		}
		return EnsureCheckpoints(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("postgres sink: %w", err)
	}
	s.ensured = true
	return nil
}

// Target describes table: its columns with logical types (LogicalType),
// its primary key, and whether it exists. A missing table is a zero Schema
// and false, not an error.
func (s *Sink) Target(ctx context.Context, table string) (cdc.Schema, bool, error) {
	t, ok, err := DescribeTable(ctx, s.pool, table)
	if err != nil || !ok {
		return cdc.Schema{}, false, err
	}
	return t.Schema(), true, nil
}

// PrepareSink compiles how rows are written to st.Table (runner.Sink).
func (s *Sink) PrepareSink(ctx context.Context, st *plan.SinkStage) (runner.SinkPlan, error) {
	return s.Prepare(ctx, st)
}

// Prepare is PrepareSink returning the concrete *Plan (pushdown uses
// Plan.Attach). It checks an existing target: every projected column must
// exist with a compatible type; a merge target on PostgreSQL 13/14 needs a
// primary key or unique index on st.Keys; a SQL MERGE job needs an
// existing target.
func (s *Sink) Prepare(ctx context.Context, st *plan.SinkStage) (*Plan, error) {
	stc := *st
	p := &Plan{sink: s, st: &stc}
	t, exists, err := DescribeTable(ctx, s.pool, st.Table)
	if err != nil {
		return nil, fmt.Errorf("postgres sink: %w", err)
	}
	c, err := p.compile(ctx, s.pool, t, exists)
	if err != nil {
		return nil, err
	}
	p.steps = c.steps(p.st, exists)
	p.attachSt = c.attachSteps(p.st, exists, false)
	return p, nil
}

// Plan is a compiled PostgreSQL sink (runner.SinkPlan).
type Plan struct {
	sink     *Sink
	st       *plan.SinkStage
	steps    []plan.Step
	attachSt []plan.Step
}

// Steps returns the statements a run executes, in order.
func (p *Plan) Steps() []plan.Step { return p.steps }

// Stage returns the sink stage the plan was compiled for.
func (p *Plan) Stage() *plan.SinkStage { return p.st }

// compiled is the SQL of one sink stage against one state of the target.
type compiled struct {
	table   string
	create  string     // CREATE TABLE of a missing target, "" when it exists
	evolve  []string   // the statements that follow the source's columns in an existing target (on_schema_change evolve; evolve)
	index   string     // CREATE INDEX of a missing target, "" for none (createTarget)
	meta    []string   // the change-relation columns staged before the projected ones
	target  *Table     // the target (synthesized when missing)
	types   []cdc.Type // the logical type each projected column is written as
	columns []string   // target column names, aligned with st.Schema
	notNull []bool     // the target column is NOT NULL (mode merge: and not a merge key, those are checked apart; history: nil), aligned with st.Schema
	stage   string     // CREATE TEMP TABLE of the stage, "" for direct COPY
	casts   []string   // per projected column, the type its text-staged values are cast to ("" none); nil when none is
	apply   *Apply     // the merge over StageTable (full rows); nil for direct COPY
	partial *Apply     // the same for batches with partial rows
	batch   *Apply     // with one change per key: the merge of each staged batch (no ANALYZE)
	version int
}

// compile builds the statements for target t (exists tells whether it
// does).
func (p *Plan) compile(ctx context.Context, q Querier, t *Table, exists bool) (*compiled, error) {
	st := p.st
	c := &compiled{table: st.Table, version: p.sink.version}
	if err := checkReserved(st.Schema); err != nil {
		return nil, err
	}
	if st.Merge != nil && !exists {
		var db string
		if err := q.QueryRow(ctx, `SELECT current_database()::text`).Scan(&db); err != nil {
			db = "?"
		}
		return nil, fmt.Errorf("postgres sink: MERGE INTO %s: the target table does not exist in database %s; create it first (CREATE TABLE)", Quote(st.Table), Quote(db))
	}
	if !exists {
		var keys []string
		if st.Mode == plan.ModeMerge {
			keys = st.Keys
		}
		c.create, c.index = createTarget(st)
		t = &Table{Name: st.Table, Key: keys}
		for _, col := range st.WithAdded().Columns {
			pgt := ColumnType(col.Type)
			_, native := LogicalType(pgt)
			t.Columns = append(t.Columns, Column{Column: col, PGType: pgt, Native: native})
		}
	} else if st.Merge == nil {
		var err error
		if c.evolve, t, err = evolve(ctx, q, st.Table, t, st.Evolve, st.Keys); err != nil {
			return nil, err
		}
		if err := checkAdded(t, st); err != nil {
			return nil, err
		}
	}
	c.target = t
	target := t.Schema()
	c.types = make([]cdc.Type, len(st.Schema.Columns))
	c.columns = make([]string, len(st.Schema.Columns))
	var stageDefs []string
	c.casts = make([]string, len(st.Schema.Columns))
	// stageDef stages column i as type pgt, or as text when pgx cannot
	// COPY the value in pgt's binary form (json, uuid, arrays, …: values
	// carried as PostgreSQL's text); the apply then casts it to pgt.
	stageDef := func(i int, name, pgt string) {
		if _, native := LogicalType(pgt); !native {
			c.casts[i] = pgt
			pgt = "text"
		}
		stageDefs = append(stageDefs, Quote(name)+" "+pgt)
	}
	for i, col := range st.Schema.Columns {
		if st.Merge != nil {
			// A SQL MERGE source is any relation: stage it with its own types.
			c.types[i], c.columns[i] = col.Type, col.Name
			stageDef(i, col.Name, ColumnType(col.Type))
			continue
		}
		tc, ok := target.Column(col.Name)
		if !ok {
			return nil, fmt.Errorf("postgres sink: %w: %s has no column %q (it has %s); add it or project fewer columns", ErrUnknownColumn, Quote(st.Table), col.Name, strings.Join(target.Names(), ", "))
		}
		if !Compatible(col.Type, tc.Type) {
			return nil, fmt.Errorf("postgres sink: column %q of %s is %s, which cannot hold the projected %s", tc.Name, Quote(st.Table), tc.Type, col.Type)
		}
		c.types[i], c.columns[i] = tc.Type, tc.Name
		if tc.NotNull && (st.Mode == plan.ModeMerge && !slices.ContainsFunc(st.Keys, func(k string) bool { return strings.EqualFold(k, col.Name) }) || !st.Mode.Keyed()) {
			if c.notNull == nil {
				c.notNull = make([]bool, len(st.Schema.Columns))
			}
			c.notNull[i] = true
		}
		stageDef(i, col.Name, t.Columns[target.Index(tc.Name)].PGType)
	}
	if !slices.ContainsFunc(c.casts, func(s string) bool { return s != "" }) {
		c.casts = nil
	}
	if !st.Mode.Keyed() && st.Merge == nil {
		if c.casts == nil {
			return c, nil
		}
		// Values pgx cannot COPY into their column: staged as text and
		// inserted with casts at commit.
		var err error
		if c.apply, err = CompileApply(st, target, "pg_temp."+StageTable, ApplyOptions{ServerVersion: p.sink.version, Partial: st.PartialRows, Casts: c.casts}); err != nil {
			return nil, err
		}
		c.stageTable(st, stageDefs)
		return c, nil
	}
	if st.Merge == nil && st.Mode == plan.ModeMerge && exists && p.sink.version < MinMergeVersion {
		ok, err := hasUniqueKey(ctx, q, st.Table, t, st.Keys)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("postgres sink: mode merge into %s on PostgreSQL < 15 uses INSERT … ON CONFLICT, which needs a PRIMARY KEY or UNIQUE index on (%s); add one or write to a new table", Quote(st.Table), strings.Join(st.Keys, ", "))
		}
	}
	// One change per key (the planner's OneChangePerKey): the staged rows
	// are the net changes, applied without a collapse.
	opt := ApplyOptions{ServerVersion: p.sink.version, FullRows: st.OneChangePerKey, Analyze: true, Casts: c.casts}
	var err error
	if c.apply, err = CompileApply(st, target, "pg_temp."+StageTable, opt); err != nil {
		return nil, err
	}
	if st.Merge == nil && st.OneChangePerKey {
		// Batches of different keys are independent: each is merged as it
		// arrives, while the runner reads the next (no ANALYZE per batch:
		// the planner sizes a never-analyzed TEMP table by its pages).
		bo := opt
		bo.Analyze = false
		// A batch that fails on a unique constraint may need a later
		// batch's keys in place: it waits for the end of the window
		// (Tx.mergeBatch, unique.go).
		bo.DeferUnique = true
		if c.batch, err = CompileApply(st, target, "pg_temp."+StageTable, bo); err != nil {
			return nil, err
		}
	}
	if st.Merge == nil && st.PartialRows {
		opt.Partial, opt.FullRows = true, false
		if c.partial, err = CompileApply(st, target, "pg_temp."+StageTable, opt); err != nil {
			return nil, err
		}
	}
	c.stageTable(st, stageDefs)
	return c, nil
}

// stageTable sets the change-relation columns staged before the projected
// ones and the CREATE TEMP TABLE of the staging table with them and the
// projected columns defs.
func (c *compiled) stageTable(st *plan.SinkStage, defs []string) {
	c.meta = []string{colOp, colVer, colOrd, colPresent}
	metaDefs := []string{colOp + " text NOT NULL", colVer + " bigint", colOrd + " bigint NOT NULL", colPresent + " text"}
	if st.NeedsCommitTime() {
		c.meta, metaDefs = append(c.meta, colTS), append(metaDefs, colTS+" timestamptz")
	}
	c.stage = fmt.Sprintf("CREATE TEMP TABLE %s (%s, %s) ON COMMIT DROP",
		StageTable, strings.Join(metaDefs, ", "), strings.Join(defs, ", "))
}

// CreateTableSQL returns the CREATE TABLE of a target created from the
// projected schema s, with PRIMARY KEY (keys) when keys is not empty.
func CreateTableSQL(table string, s cdc.Schema, keys []string) string {
	var defs []string
	for _, c := range s.Columns {
		d := Quote(c.Name) + " " + ColumnType(c.Type)
		if c.NotNull || slices.Contains(keys, c.Name) {
			d += " NOT NULL"
		}
		defs = append(defs, d)
	}
	if len(keys) > 0 {
		defs = append(defs, "PRIMARY KEY ("+QuoteList("", keys)+")")
	}
	return fmt.Sprintf("CREATE TABLE %s (%s)", Quote(table), strings.Join(defs, ", "))
}

// hasUniqueKey reports whether table has a primary key or a non-partial
// unique index on exactly keys (any order), as ON CONFLICT (keys) needs.
func hasUniqueKey(ctx context.Context, q Querier, table string, t *Table, keys []string) (bool, error) {
	if sameSet(t.Key, keys) {
		return true, nil
	}
	sets, err := uniqueIndexes(ctx, q, table, false)
	if err != nil {
		return false, err
	}
	for _, s := range sets {
		if sameSet(s, keys) {
			return true, nil
		}
	}
	return false, nil
}

// uniqueIndexes returns the column names of each unique index of table
// without predicate or expressions (with immediate, only those checked
// immediately and valid: not DEFERRABLE, not being built), one slice per
// index. Errors are the database's, wrapped.
func uniqueIndexes(ctx context.Context, q Querier, table string, immediate bool) ([][]string, error) {
	cond := ""
	if immediate {
		cond = " AND i.indimmediate AND i.indisvalid"
	}
	rows, err := q.Query(ctx, `SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_index i
		CROSS JOIN LATERAL unnest(i.indkey) AS k(attnum)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL`+cond+`
		GROUP BY i.indexrelid`, Quote(table))
	if err != nil {
		return nil, fmt.Errorf("postgres sink: list indexes of %s: %w", Quote(table), err)
	}
	sets, err := pgx.CollectRows(rows, pgx.RowTo[[]string])
	if err != nil {
		return nil, fmt.Errorf("postgres sink: list indexes of %s: %w", Quote(table), err)
	}
	return sets, nil
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y string) bool { return strings.EqualFold(x, y) }) {
			return false
		}
	}
	return true
}

func sinkStep(what, sql string) plan.Step { return plan.Step{Where: "sink", What: what, SQL: sql} }

// steps lists what a run executes, for the plan.
func (c *compiled) steps(st *plan.SinkStage, exists bool) []plan.Step {
	sk := sinkStep
	out := []plan.Step{sk("begin the sink transaction", "BEGIN"),
		sk("commit durably: a synchronous_commit = off (server, role, database or URL) is raised to on for this transaction (the source moves its offset once the commit returns)", syncCommitOnSQL)}
	out = append(out, c.attachSteps(st, exists, true)...)
	out = append(out, sk("read the job's checkpoint (the stream incarnation and offset the run starts from)", selectCheckpointSQL))
	if c.apply == nil {
		out = append(out, sk(fmt.Sprintf("COPY each batch into %s (binary COPY FROM STDIN)", st.Table),
			fmt.Sprintf("COPY %s (%s) FROM STDIN (FORMAT binary)", Quote(st.Table), QuoteList("", c.columns))))
	} else {
		cols := QuoteList("", st.Schema.Names())
		out = append(out, sk("COPY each batch into the staging table", fmt.Sprintf("COPY %s (%s, %s) FROM STDIN (FORMAT binary)", StageTable, strings.Join(c.meta, ", "), cols)))
		if c.batch != nil {
			out = append(out, sk(fmt.Sprintf("after each batch (one change per key: batches are independent), memory for the merge sized to the batch: %d bytes a row, %dMB to %dMB", WorkMemPerRow, MinWorkMem>>20, MaxWorkMem>>20), WorkMemSQL(10_000)))
			for _, s := range c.batch.Steps() {
				s.What = "after each batch: " + s.What
				out = append(out, s)
			}
			out = append(out, sk("after each batch: empty the staging table for the next", "TRUNCATE pg_temp."+StageTable))
		} else {
			out = append(out, sk(fmt.Sprintf("memory for the merge's sorts and hashes, sized to the staged rows: %d bytes each, %dMB to %dMB (the value shown is for 100,000 rows; each run sizes it to what it staged, and skips it, as all of the merge, with nothing staged)",
				WorkMemPerRow, MinWorkMem>>20, MaxWorkMem>>20), WorkMemSQL(100_000)))
			out = append(out, c.apply.Steps()...)
		}
		if c.partial != nil {
			for _, s := range c.partial.Steps() {
				if s.SQL != "" && !slices.ContainsFunc(c.apply.Steps(), func(o plan.Step) bool { return o.SQL == s.SQL }) {
					s.What = "instead, when the staged rows include partial rows: " + s.What
					out = append(out, s)
				}
			}
		}
	}
	out = append(out, CheckpointStep(), sk("commit rows and checkpoint together", "COMMIT"))
	return out
}

// ReadCheckpointStep is the statement that reads the job's checkpoint
// (ReadCheckpoint), described as what.
func ReadCheckpointStep(what string) plan.Step { return sinkStep(what, selectCheckpointSQL) }

// CheckpointStep is the statement that stores the job's checkpoint in the
// sink transaction.
func CheckpointStep() plan.Step {
	return sinkStep("store the job's checkpoint in the same transaction", upsertCheckpointSQL)
}

// AttachSteps lists what Attach executes in the caller's transaction, in
// order: the job lock, the target's creation or overwrite (for the
// pushdown plan; an attached transaction stages nothing).
func (p *Plan) AttachSteps() []plan.Step { return p.attachSt }

// attachSteps lists what attach executes; stage adds the staging table of
// a transaction that stages rows (Begin).
func (c *compiled) attachSteps(st *plan.SinkStage, exists, stage bool) []plan.Step {
	sk := sinkStep
	out := []plan.Step{sk("serialize runs of this job", "SELECT pg_advisory_xact_lock(hashtext('sluice.job:' || $1))")}
	if !exists {
		out = append(out, sk(fmt.Sprintf("create the missing target %s", st.Table), c.create))
		if c.index != "" {
			out = append(out, sk("index its keys and __valid_to (finds a key's current version)", c.index))
		}
	}
	for _, q := range c.evolve {
		out = append(out, sk(fmt.Sprintf("follow the source's columns (on_schema_change evolve): %s", describeEvolve(st.Evolve)), q))
	}
	switch st.Mode {
	case plan.ModeOverwrite:
		out = append(out, sk("remove the target's rows (mode overwrite)", "DELETE FROM "+Quote(st.Table)))
	case plan.ModeErrorIfExists:
		if exists {
			out = append(out, plan.Step{Where: "sink", What: fmt.Sprintf("fail: target %s exists (mode errorifexists)", st.Table)})
		}
	case plan.ModeIgnore:
		if exists {
			out = append(out, plan.Step{Where: "sink", What: fmt.Sprintf("do nothing: target %s exists (mode ignore); nothing is consumed", st.Table)})
		}
	}
	if stage && c.stage != "" {
		out = append(out, sk("drop a leftover staging table", "DROP TABLE IF EXISTS pg_temp."+StageTable), sk("create the staging table", c.stage))
	}
	if stage {
		out = append(out, sk(fmt.Sprintf("note the shape of the table COPY writes (%s) in the session; a shape other than its last COPY's deallocates the connection's cached statements (DEALLOCATE ALL)", c.copyShape()),
			`SELECT coalesce(current_setting('`+copyShapeSetting+`', true), '') NOT IN ('', $1), set_config('`+copyShapeSetting+`', $1, false) IS NOT NULL`))
	}
	return out
}
