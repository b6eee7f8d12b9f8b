package plan

import (
	"slices"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
)

// Plan is a Job bound to its databases: the four stages with resolved
// schemas and types, and how the run executes. The runner builds it
// (package runner, Runner.Plan) and executes it unchanged (Runner.Run);
// `sluice plan` prints it with Format.
type Plan struct {
	Job *Job

	Source SourceStage
	Filter *FilterStage // nil: no filter
	// Project lists the output columns in order; never empty after binding.
	Project []ProjectItem
	Sink    SinkStage

	// Pushdown is true when source and sink are the same database and the
	// run executes as SQL inside it, in one transaction.
	Pushdown bool
	// Stepped tells that the pushed-down run commits in bounded steps
	// (runner.SteppedPushdown) instead of one transaction.
	Stepped bool
	// Steps are what the run executes, in order: SQL statements (with
	// placeholders for offsets fixed at run time) or one-line descriptions
	// of work done in sluice. Backends produce them; the runner executes the
	// objects that produced them.
	Steps []Step
	// Setup are statements run before the consuming read (SQL job files).
	Setup []string

	Warnings []string
}

// Step is one unit of work a run executes.
type Step struct {
	// Where names the database or component: "source", "sink", "sluice".
	Where string
	// What is a one-line description.
	What string
	// SQL is the statement text, "" for work done in sluice.
	SQL string
}

// SourceStage is the bound source.
type SourceStage struct {
	Conn    string // connection URL, password masked
	Backend string // registered scheme, e.g. "sqlite"
	Stream  string
	Table   string
	Mode    string // STANDARD, APPEND_ONLY, or CHANGE_FEED (Tablestore: every record, no net changes)
	// Schema is the stream's schema: metadata columns then table columns
	// (cdc.StreamSchema of the table), with the table's key.
	Schema cdc.Schema
	// TableSchema is the table's own schema (the row layout of cdc.Change).
	TableSchema cdc.Schema
}

// FilterStage is the bound filter.
type FilterStage struct {
	Text string
	Expr *expr.Bound // bound in the scope of Source.Schema
	// Dropped lists change types the filter can never keep; they are
	// consumed for good by a run.
	Dropped []cdc.Op
}

// ProjectItem is one output column.
type ProjectItem struct {
	Name string
	Text string // the expression as written
	Type cdc.Type
	Expr *expr.Bound // bound in the scope of Source.Schema
}

// SinkStage is the bound sink.
type SinkStage struct {
	Conn    string // password masked
	Backend string // "sqlite", "postgres", "stdout"
	Table   string
	Mode    Mode
	Keys    []string
	// OnDelete is what mode merge does with a DELETE (OnDeleteDelete when
	// the job leaves it out); "" for other modes.
	OnDelete OnDelete
	// Schema is the projected schema written to the target (Key = Keys).
	Schema cdc.Schema
	// TableExists tells whether the target existed when the plan was made.
	TableExists bool
	Merge       *Merge
	// OneChangePerKey tells that every run's changes hold at most one
	// change per merge key besides UPDATE_BEFORE: the source reads net
	// changes per primary key (a STANDARD table stream, DESIGN.md) and the
	// merge keys pass every primary-key column through unchanged. A merge
	// sink then applies the changes without collapsing them to the last
	// change per key. Set by the runner's planning, for mode merge only.
	OneChangePerKey bool
	// OnSchemaChange is the job's schema-change policy (SchemaEvolve when
	// the job leaves it out); "" for a stdout sink.
	OnSchemaChange SchemaPolicy
	// Evolve lists what a run changes in the existing target before it
	// writes, in the sink transaction, under on_schema_change evolve:
	// columns the source table gained, columns whose type it widened. Set
	// by the runner's planning; the sinks compile it to ALTER TABLE.
	Evolve []ColumnChange
	// PartialRows tells that the source may deliver partial rows (changes
	// carrying only some columns: Tablestore's UpdateRow, DESIGN.md). A
	// merge sink then compiles, and `sluice plan` lists, the statements
	// that set only the carried columns; without it a sink refuses a
	// partial row. Set by the runner's planning (runner.PartialRowSource).
	PartialRows bool
	// DeadLetter is the dead-letter table of the job in the sink database
	// (plan.Sink.DeadLetter); "" when rows the sink rejects fail the run.
	DeadLetter string
}

// ColumnChange is one change of an existing target's columns that a run
// makes under on_schema_change evolve.
type ColumnChange struct {
	Column string   // the column's name (the source's)
	Type   cdc.Type // its type after the change (the projected type)
	// Widen is false for a new column, true for a column whose type From
	// is widened to Type (cdc.Widens).
	Widen bool
	From  cdc.Type
	// Fill is what the target's existing rows get in a new column (Widen
	// false): the value the source row of each holds for it. Set by the
	// runner's planning from the source (runner.AddedColumnSource).
	Fill Fill
}

// FillKind tells how a new target column is filled in the rows the
// target already holds.
type FillKind int

const (
	// FillNull leaves the rows NULL: the source rows that predate the
	// column hold NULL in it (ALTER TABLE … ADD COLUMN without a DEFAULT).
	FillNull FillKind = iota
	// FillValue gives every row Fill.Value: the value every source row
	// that predates the column holds (PostgreSQL's missing value,
	// pg_attribute.attmissingval, of an ADD COLUMN with a non-volatile
	// DEFAULT; SQLite's constant DEFAULT of an added column).
	FillValue
	// FillReread sets each row's column to the value the source row of
	// the same merge key holds (a per-row DEFAULT: volatile, serial,
	// identity, generated): read from the source table Fill.Table in the
	// sink's own database by the sink's SQL, or, with Fill.Table "", read
	// from the source by the run and handed to the sink
	// (runner.ColumnFiller). Only a merge sink whose keys are the source's
	// primary key can; the runner refuses the run otherwise.
	FillReread
)

// Fill is how a new target column is filled (ColumnChange.Fill).
type Fill struct {
	Kind FillKind
	// Value is the value for FillValue, canonical for the column's type
	// (package cdc); nil is NULL.
	Value any
	// Table is the source table, as an SQL reference in the source's
	// dialect (quoted, schema-qualified where needed): what FillReread
	// reads in the sink's database when the sink is in the source's; ""
	// when the run reads it instead.
	Table string
	// Why describes the source column's DEFAULT in words, for plans and
	// errors ("DEFAULT 7", "a volatile DEFAULT").
	Why string
}

// String describes the change in words, for plans and errors.
func (c ColumnChange) String() string {
	if c.Widen {
		return "widen column " + c.Column + " from " + c.From.String() + " to " + c.Type.String()
	}
	s := "add column " + c.Column + " " + c.Type.String()
	switch c.Fill.Kind {
	case FillValue:
		s += ", existing rows set to " + cdc.FormatValue(c.Fill.Value, c.Type) + " (the source's " + c.Fill.Why + ")"
	case FillReread:
		from := c.Fill.Table
		if from == "" {
			from = "the source table (read by the run)"
		}
		s += ", existing rows set to the value of their key in " + from + " (the source's " + c.Fill.Why + ")"
	}
	return s
}

// EvolvedTarget returns the existing target's schema target as it is
// after the run's changes st.Evolve (a copy when there are any): each
// widened column with its new type, each new column at the end. Pushdowns
// compile their SQL against it.
func (st *SinkStage) EvolvedTarget(target cdc.Schema) cdc.Schema {
	if len(st.Evolve) == 0 {
		return target
	}
	out := target
	out.Columns = slices.Clone(target.Columns)
	for _, c := range st.Evolve {
		if i := out.Index(c.Column); i >= 0 {
			out.Columns[i].Type = c.Type
		} else {
			out.Columns = append(out.Columns, cdc.Column{Name: c.Column, Type: c.Type})
		}
	}
	return out
}

// NeedsCommitTime reports whether what the sink writes depends on each
// change's __commit_timestamp: a history sink (__valid_from, __valid_to)
// and a soft-delete merge (__deleted_at). Its change relation then carries
// the column changerel.TS.
func (st *SinkStage) NeedsCommitTime() bool {
	return st.Mode == ModeHistory || (st.Mode == ModeMerge && st.OnDelete == OnDeleteSoft)
}

// AddedColumns returns the columns the sink writes besides the projected
// ones (TIMESTAMP each): __valid_from and __valid_to for mode history,
// __deleted_at for a soft-delete merge, none otherwise.
func (st *SinkStage) AddedColumns() []string {
	switch {
	case st.Mode == ModeHistory:
		return []string{ColValidFrom, ColValidTo}
	case st.Mode == ModeMerge && st.OnDelete == OnDeleteSoft:
		return []string{ColDeletedAt}
	}
	return nil
}

// WithAdded returns the projected schema followed by AddedColumns (each
// TIMESTAMP; __valid_from NOT NULL): the columns of a target the sink
// creates. The result shares no storage with Schema.
func (st *SinkStage) WithAdded() cdc.Schema {
	s := cdc.Schema{Columns: append([]cdc.Column(nil), st.Schema.Columns...)}
	for _, n := range st.AddedColumns() {
		s.Columns = append(s.Columns, cdc.Column{Name: n, Type: cdc.TypeTimestamp, NotNull: n == ColValidFrom})
	}
	return s
}

// IsKey reports whether name is one of Keys (case-insensitively).
func (st *SinkStage) IsKey(name string) bool {
	return slices.ContainsFunc(st.Keys, func(k string) bool { return strings.EqualFold(k, name) })
}

// IgnoresUpdateBefore reports whether what the sink writes does not depend
// on UPDATE_BEFORE changes: mode merge (without a SQL MERGE) applies each
// key's last INSERT, UPDATE_AFTER or DELETE, and skips UPDATE_BEFORE. A
// source may then leave UPDATE_BEFORE changes out of a read
// (runner.ReadOptions.OmitUpdateBefore).
func (st *SinkStage) IgnoresUpdateBefore() bool {
	return st.Mode == ModeMerge && st.Merge == nil && st.Backend != "stdout"
}

// RowKey picks the projected columns that name a row in errors and merges:
// the merge keys, else the source columns of a MERGE's ON, else the
// target's primary key. It returns their positions in Schema and their
// names, or nils when one of them is not projected.
func (st *SinkStage) RowKey(target cdc.Schema) (idx []int, names []string) {
	cols := st.Keys
	if st.Merge != nil {
		cols = nil
		for _, kp := range st.Merge.On {
			cols = append(cols, kp.Source)
		}
	}
	if len(cols) == 0 {
		cols = target.Key
	}
	for _, n := range cols {
		i := st.Schema.Index(n)
		if i < 0 {
			return nil, nil
		}
		idx = append(idx, i)
		names = append(names, st.Schema.Columns[i].Name)
	}
	return idx, names
}
