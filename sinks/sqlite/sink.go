package sqlite

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// Sink writes projected rows into tables of one SQLite database. The sqlite
// backend (sources/sqlite) embeds it, so one `sqlite:` connection is both a
// source and a sink; it provides runner.Sink's Target and PrepareSink (the
// Backend methods come from the embedding backend).
type Sink struct {
	db  sqlitex.Pool
	log *slog.Logger
	// writer is held by one Begin's transaction at a time (gate.go).
	writer chan struct{}
}

// New returns a sink on db, a modernc.org/sqlite database (opened with a
// busy timeout, so that two runs of one job wait for each other's write
// lock): a *sql.DB, or a *sqlitex.Handle, whose Conn is the file's one
// write connection (a run's transaction) and whose reads (the target's
// description) run on its read connections. log may be nil.
func New(db sqlitex.Pool, log *slog.Logger) *Sink {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sink{db: db, log: log, writer: make(chan struct{}, 1)}
}

// Target describes table: its columns with the logical types recovered from
// the declared types (docs/architecture.md, SQLite storage conventions), its
// primary key, and whether it exists. A missing table is a zero Schema and
// false, not an error.
func (s *Sink) Target(ctx context.Context, table string) (cdc.Schema, bool, error) {
	return readTarget(ctx, s.db, table)
}

// PrepareSink compiles how rows are written to st.Table and returns the
// plan whose Steps are the SQL a run executes. It checks an existing
// target: every projected column must exist with a compatible type, and a
// merge target needs a primary key or unique index on st.Keys. A SQL MERGE
// job (st.Merge set) needs an existing target.
func (s *Sink) PrepareSink(ctx context.Context, st *plan.SinkStage) (runner.SinkPlan, error) {
	return s.Prepare(ctx, st)
}

// Prepare is PrepareSink returning the concrete *Plan (for the pushdown of
// the sqlite backend, which uses Plan.Attach).
func (s *Sink) Prepare(ctx context.Context, st *plan.SinkStage) (*Plan, error) {
	stc := *st
	target, exists, err := readTarget(ctx, s.db, st.Table)
	if err != nil {
		return nil, err
	}
	p := &Plan{sink: s, st: &stc}
	c, err := p.compile(ctx, s.db, target, exists)
	if err != nil {
		return nil, err
	}
	p.steps = c.steps(p.st, exists)
	p.attachSt = c.attachSteps(p.st, exists)
	return p, nil
}

// Plan is a compiled SQLite sink (runner.SinkPlan).
type Plan struct {
	sink     *Sink
	st       *plan.SinkStage
	steps    []plan.Step
	attachSt []plan.Step
}

// Steps returns the statements a run executes, in order: the transaction,
// the table creation when the target was missing at plan time, the writes
// and the checkpoint.
func (p *Plan) Steps() []plan.Step { return p.steps }

// compiled is the SQL of one sink stage against one state of the target.
type compiled struct {
	table    string
	create   string     // CREATE TABLE of a missing target, "" when it exists
	evolve   []string   // the ALTER TABLEs of an existing target under on_schema_change evolve (evolve)
	index    string     // CREATE INDEX of a missing target, "" for none (createTarget)
	meta     int        // the change-relation columns staged before the projected ones (4, or 5 with changerel.TS)
	types    []cdc.Type // the target type of each projected column
	relTypes []cdc.Type // the type staged values are encoded as
	notNull  []bool     // mode merge: the target column is NOT NULL and not a merge key (those are checked apart), aligned with st.Schema
	columns  []string   // mode merge: the target column names, aligned with st.Schema
	insert   string     // the prepared INSERT of Write (target or stage)
	stage    string     // CREATE TEMP TABLE of the stage, "" for direct inserts
	apply    *Apply     // nil for direct inserts
}

// compile builds the statements for target (exists tells whether it does).
func (p *Plan) compile(ctx context.Context, q Querier, target cdc.Schema, exists bool) (*compiled, error) {
	st := p.st
	c := &compiled{table: st.Table}
	if err := checkReserved(st.Schema); err != nil {
		return nil, err
	}
	if st.Merge != nil && !exists {
		var file string
		if err := q.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file); err != nil || file == "" {
			file = "an in-memory database"
		}
		return nil, fmt.Errorf("sqlite sink: MERGE INTO %q: the target table does not exist in %s; create it first (CREATE TABLE)", st.Table, file)
	}
	if !exists {
		var keys []string
		if st.Mode == plan.ModeMerge {
			keys = st.Keys
		}
		c.create, c.index = createTarget(st)
		target = cdc.Schema{Columns: st.WithAdded().Columns, Key: keys}
	} else {
		var err error
		if c.evolve, target, err = evolve(st.Table, target, st.Evolve, st.Keys); err != nil {
			return nil, err
		}
		if err := checkAdded(st.Table, target, st); err != nil {
			return nil, err
		}
	}
	switch {
	case st.Merge != nil:
		a, err := compileMergeInto(st, target, "temp."+StageTable)
		if err != nil {
			return nil, err
		}
		c.apply = a
		c.relTypes = make([]cdc.Type, len(st.Schema.Columns))
		for i, col := range st.Schema.Columns {
			c.relTypes[i] = col.Type
		}
		c.types = c.relTypes
	case st.Mode == plan.ModeHistory:
		types, err := checkTarget(st.Table, target, st.Schema)
		if err != nil {
			return nil, err
		}
		c.types, c.relTypes = types, types
		if c.apply, err = compileApply(st, types, types, "temp."+StageTable, true); err != nil {
			return nil, err
		}
	default:
		types, err := checkTarget(st.Table, target, st.Schema)
		if err != nil {
			return nil, err
		}
		c.types, c.relTypes = types, types
		if st.Mode == plan.ModeMerge {
			for i, col := range st.Schema.Columns {
				tc, _ := target.Column(col.Name)
				c.columns = append(c.columns, tc.Name)
				if tc.NotNull && !slices.ContainsFunc(st.Keys, func(k string) bool { return strings.EqualFold(k, col.Name) }) {
					if c.notNull == nil {
						c.notNull = make([]bool, len(st.Schema.Columns))
					}
					c.notNull[i] = true
				}
			}
			if exists {
				ok, err := hasUniqueKey(ctx, q, st.Table, target, st.Keys)
				if err != nil {
					return nil, err
				}
				if !ok {
					return nil, fmt.Errorf("sqlite sink: mode merge into %q needs a PRIMARY KEY or UNIQUE index on (%s), which the table does not have; add one (CREATE UNIQUE INDEX … ON %s (%s)) or write to a new table", st.Table, strings.Join(st.Keys, ", "), sqlitex.Quote(st.Table), quoteList(st.Keys))
				}
			}
			a, err := compileApply(st, types, types, "temp."+StageTable, !st.PartialRows)
			if err != nil {
				return nil, err
			}
			c.apply = a
		}
	}
	cols := make([]string, len(st.Schema.Columns))
	marks := make([]string, len(st.Schema.Columns))
	for i, col := range st.Schema.Columns {
		cols[i], marks[i] = sqlitex.Quote(col.Name), "?"
	}
	if c.apply == nil {
		c.insert = fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", sqlitex.Quote(st.Table), strings.Join(cols, ", "), strings.Join(marks, ", "))
		return c, nil
	}
	defs := []string{colOp + " TEXT NOT NULL", colVer + " INTEGER", colOrd + " INTEGER NOT NULL", colPresent + " TEXT"}
	meta := []string{colOp, colVer, colOrd, colPresent}
	if st.NeedsCommitTime() {
		defs, meta = append(defs, colTS+" TEXT"), append(meta, colTS)
	}
	c.meta = len(meta)
	for i, col := range st.Schema.Columns {
		defs = append(defs, sqlitex.Quote(col.Name)+" "+sqlitex.DeclareSQL(c.relTypes[i]))
	}
	c.stage = fmt.Sprintf("CREATE TEMP TABLE %s (%s)", StageTable, strings.Join(defs, ", "))
	c.insert = fmt.Sprintf("INSERT INTO temp.%s (%s, %s) VALUES (%s, %s)", StageTable,
		strings.Join(meta, ", "), strings.Join(cols, ", "), strings.Repeat("?, ", len(meta)-1)+"?", strings.Join(marks, ", "))
	return c, nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = sqlitex.Quote(n)
	}
	return strings.Join(q, ", ")
}

// steps lists what a run executes, for the plan.
func (c *compiled) steps(st *plan.SinkStage, exists bool) []plan.Step {
	out := []plan.Step{sinkStep("begin the sink transaction (takes the write lock)", "BEGIN IMMEDIATE")}
	out = append(out, c.attachSteps(st, exists)...)
	if c.apply == nil {
		out = append(out, sinkStep("insert each row (prepared statement)", c.insert))
	} else {
		out = append(out, sinkStep("stage each change (prepared statement)", c.insert))
		out = append(out, c.apply.Steps()...)
		out = append(out, sinkStep("drop the staging table", "DROP TABLE temp."+StageTable))
	}
	return append(out, CheckpointStep(), sinkStep("commit rows and checkpoint together", "COMMIT"))
}

func sinkStep(what, sql string) plan.Step { return plan.Step{Where: "sink", What: what, SQL: sql} }

// CheckpointStep is the statement that stores the job's checkpoint in the
// sink transaction.
func CheckpointStep() plan.Step {
	return sinkStep("store the job's checkpoint in the same transaction (offset = read point)", upsertCheckpointSQL)
}

// AttachSteps lists what Attach executes in the caller's transaction, in
// order (for a pushdown plan): the checkpoint table, the job's checkpoint,
// the target's creation or overwrite, the staging table.
func (p *Plan) AttachSteps() []plan.Step { return p.attachSt }

// attachSteps lists what attach executes.
func (c *compiled) attachSteps(st *plan.SinkStage, exists bool) []plan.Step {
	out := []plan.Step{sinkStep("create the checkpoint table if missing", createCheckpointsSQL)}
	if !exists {
		out = append(out, sinkStep(fmt.Sprintf("create the missing target %s", st.Table), c.create))
		if c.index != "" {
			out = append(out, sinkStep("index its keys and __valid_to (finds a key's current version)", c.index))
		}
	}
	for _, q := range c.evolve {
		out = append(out, sinkStep(fmt.Sprintf("follow the source's columns (on_schema_change evolve): %s", describeEvolve(st.Evolve)), q))
	}
	switch st.Mode {
	case plan.ModeOverwrite:
		out = append(out, sinkStep("remove the target's rows (mode overwrite)", "DELETE FROM "+sqlitex.Quote(st.Table)))
	case plan.ModeErrorIfExists:
		if exists {
			out = append(out, plan.Step{Where: "sink", What: fmt.Sprintf("fail: target %s exists (mode errorifexists)", st.Table)})
		}
	case plan.ModeIgnore:
		if exists {
			out = append(out, plan.Step{Where: "sink", What: fmt.Sprintf("do nothing: target %s exists (mode ignore); nothing is consumed", st.Table)})
		}
	}
	if c.stage != "" {
		out = append(out, sinkStep("drop a leftover staging table", "DROP TABLE IF EXISTS temp."+StageTable), sinkStep("create the staging table", c.stage))
	}
	return out
}
