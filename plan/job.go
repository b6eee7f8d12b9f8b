package plan

import (
	"github.com/sluicedata/sluice/pos"
)

// Mode is a sink write mode. The first four mirror Zettapark's
// save_as_table modes (seeds/000); merge is sluice's upsert + delete.
type Mode string

// The sink write modes.
const (
	ModeAppend        Mode = "append"        // insert the projected rows
	ModeOverwrite     Mode = "overwrite"     // replace the target's rows with this run's rows
	ModeErrorIfExists Mode = "errorifexists" // fail if the target table exists, else create and insert
	ModeIgnore        Mode = "ignore"        // do nothing (and consume nothing) if the target exists
	ModeMerge         Mode = "merge"         // upsert INSERT/UPDATE_AFTER, delete DELETE, by key
	ModeHistory       Mode = "history"       // one row per version of each key (SCD type 2), by key
)

// Modes lists the valid modes in documentation order.
var Modes = []Mode{ModeAppend, ModeOverwrite, ModeErrorIfExists, ModeIgnore, ModeMerge, ModeHistory}

// Keyed reports whether the mode writes by key columns (merge, history).
func (m Mode) Keyed() bool { return m == ModeMerge || m == ModeHistory }

// OnDelete is what a merge sink does with a key's DELETE.
type OnDelete string

// The on_delete choices of mode merge.
const (
	OnDeleteDelete OnDelete = "delete" // delete the target row (the default)
	OnDeleteSoft   OnDelete = "soft"   // keep the row, set __deleted_at to the delete's commit timestamp
	OnDeleteIgnore OnDelete = "ignore" // keep the row as it was
)

// OnDeletes lists the valid on_delete choices in documentation order.
var OnDeletes = []OnDelete{OnDeleteDelete, OnDeleteSoft, OnDeleteIgnore}

// SchemaPolicy is what a job does when its source table's columns no
// longer match its target's (sink.on_schema_change); README "Schema
// changes" states the outcome of each DDL under each policy.
type SchemaPolicy string

// The on_schema_change choices.
const (
	// SchemaEvolve (the default) follows the source: a column the source
	// gained is added to the target, a widened type widens the target's
	// column; a column the source lost stays in the target and later rows
	// leave it out.
	SchemaEvolve SchemaPolicy = "evolve"
	// SchemaFail stops the run before it writes, naming the columns, with
	// the offset unmoved.
	SchemaFail SchemaPolicy = "fail"
	// SchemaIgnore writes the columns the target has and leaves out the
	// others; the target is never altered.
	SchemaIgnore SchemaPolicy = "ignore"
)

// SchemaPolicies lists the on_schema_change choices in documentation order.
var SchemaPolicies = []SchemaPolicy{SchemaEvolve, SchemaFail, SchemaIgnore}

// The columns sluice adds to a target: a history sink's validity interval
// (the __commit_timestamp of the change that made the version, and of the
// one that replaced or deleted it, NULL while current) and a soft-delete
// merge's deletion mark (the __commit_timestamp of the DELETE, NULL while
// the row exists at the source). All are TIMESTAMP.
const (
	ColValidFrom = "__valid_from"
	ColValidTo   = "__valid_to"
	ColDeletedAt = "__deleted_at"
)

// Expr is an expression as written in a job file: its text, where the text
// starts, and nothing else. Package expr parses and binds it.
type Expr struct {
	Text string
	Pos  pos.Pos
}

// SelectItem is one projected column: an expression and an optional alias
// ("upper(name) AS name_u"). A bare column reference keeps its name.
type SelectItem struct {
	Expr  Expr
	Alias string
}

// Job is a parsed job file (YAML or SQL). Nothing in it is resolved against
// a database; Connection strings are as written (${ENV} not yet expanded).
type Job struct {
	Name    string
	File    string  // path as given; "" for a job built in code
	Pos     pos.Pos // where the job starts
	Format  string  // "yaml" or "sql"
	Conn    string  // source connection URL, "" for the default
	ConnPos pos.Pos

	Source Source
	Filter *Expr        // nil: keep every change
	Select []SelectItem // empty: every table column (not the metadata columns)
	Sink   Sink

	Schedule    string // cron spec, "@every 30s", "continuous", or "" (manual)
	ScheduleTZ  string // IANA zone name for cron schedules, "" for local
	SchedulePos pos.Pos

	// Setup lists the statements of a SQL job file that precede its
	// consuming statement, in order; `sluice run` executes them first.
	Setup []Statement
}

// Source names the table stream a job consumes.
type Source struct {
	Stream string
	Pos    pos.Pos
	// Columns declares attribute columns and their types for schemaless
	// sources (Tablestore); empty elsewhere.
	Columns []ColumnDecl
}

// ColumnDecl is a declared column: name and type text ("DECIMAL(10,2)").
type ColumnDecl struct {
	Name string
	Type string
	Pos  pos.Pos
}

// Sink describes where rows go.
type Sink struct {
	// Table is the target table; "" with Stdout set.
	Table    string
	TablePos pos.Pos
	// Stdout writes rows to standard output instead of a table, as an
	// aligned table or, with Format "jsonl", JSON Lines.
	Stdout  bool
	Format  string
	Mode    Mode
	ModePos pos.Pos
	// Keys are the merge or history key columns (target column names).
	Keys    []string
	KeysPos pos.Pos
	// OnDelete is what mode merge does with a DELETE; "" means delete.
	OnDelete    OnDelete
	OnDeletePos pos.Pos
	// OnSchemaChange is the job's schema-change policy; "" means evolve.
	OnSchemaChange    SchemaPolicy
	OnSchemaChangePos pos.Pos
	// Conn is the sink's own connection; "" means the job's.
	Conn    string
	ConnPos pos.Pos
	// DeadLetter is the table of the sink database that receives the rows
	// the sink rejects for their value (docs/sinks.md, "Dead letters");
	// "" means such a row fails the run.
	DeadLetter    string
	DeadLetterPos pos.Pos
	// Columns is the target column list of INSERT INTO t (c1, c2) SELECT …;
	// empty means the projected names.
	Columns []string
	// Merge holds the clauses of a SQL MERGE job; nil for a YAML merge, whose
	// clauses are implied by the merge mode (see DESIGN.md, "Sinks").
	Merge *Merge
}

// Merge is a MERGE INTO statement's target/source binding and clauses, with
// SQL semantics: each source row takes the first WHEN clause that applies,
// and a target row touched by two source rows is an error.
type Merge struct {
	TargetAlias string
	SourceAlias string
	// On pairs target and source columns of the ON condition, which must be
	// a conjunction of equalities.
	On      []KeyPair
	OnPos   pos.Pos
	Clauses []WhenClause
}

// KeyPair is one equality of a MERGE ON condition.
type KeyPair struct {
	Target string
	Source string
}

// Action is what a WHEN clause does.
type Action string

// The MERGE actions.
const (
	ActionUpdate Action = "UPDATE"
	ActionDelete Action = "DELETE"
	ActionInsert Action = "INSERT"
)

// WhenClause is one WHEN [NOT] MATCHED [AND cond] THEN … clause.
type WhenClause struct {
	Matched bool
	Cond    *Expr // nil: no AND condition
	Action  Action
	// Set lists UPDATE SET assignments (target column = expression).
	Set []Assignment
	// Insert lists INSERT (columns) VALUES (expressions).
	InsertColumns []string
	InsertValues  []Expr
	Pos           pos.Pos
}

// Assignment is "column = expression" of an UPDATE SET.
type Assignment struct {
	Column string
	Value  Expr
}

// Statement is one statement of a SQL job file or of `sluice sql`, kept as
// text and position; package dsl parses it.
type Statement struct {
	Text string
	Pos  pos.Pos
}
