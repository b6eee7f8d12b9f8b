package postgres

import (
	"errors"
	"fmt"

	"github.com/sluicedata/sluice/runner"
)

// Sentinel errors of package sinks/postgres.
var (
	// ErrNoKeys is a merge sink without key columns.
	ErrNoKeys = errors.New("merge sink needs key columns")
	// ErrUnknownColumn is a sink column that the target table lacks.
	ErrUnknownColumn = errors.New("target table has no such column")
	// ErrUnsupportedType is a PostgreSQL column type sluice cannot map to a
	// logical type.
	ErrUnsupportedType = errors.New("unsupported PostgreSQL column type")
	// ErrMergeClause is a SQL MERGE clause that cannot be compiled.
	ErrMergeClause = errors.New("bad MERGE clause")
)

// ErrIgnored is matched (errors.Is) by the error Begin returns when the
// sink's mode is ignore and the target table exists: the run writes nothing
// and must consume nothing. The same error also matches
// runner.ErrTargetExists (as in sinks/sqlite).
var ErrIgnored = errors.New("target exists; mode ignore writes nothing and consumes nothing")

type ignoredError struct{ table string }

func (e *ignoredError) Error() string {
	return fmt.Sprintf("postgres sink: target table %s exists; mode ignore writes nothing and consumes nothing", Quote(e.table))
}

func (e *ignoredError) Is(target error) bool {
	return target == ErrIgnored || target == runner.ErrTargetExists
}

// ErrPartialRow is a partial row (cdc.Change.Present set) staged for a
// merge whose plan said the source delivers full rows only
// (plan.SinkStage.PartialRows false): its missing columns would be written
// as NULL.
var ErrPartialRow = errors.New("partial row from a source planned as delivering full rows")

func errPartialRow(table string) error {
	return fmt.Errorf("postgres sink: merge into %s: %w (the source must report partial rows: runner.PartialRowSource)", Quote(table), ErrPartialRow)
}

// ErrMergeCardinality is wrapped by the error of a SQL MERGE whose source
// touches one target row (or inserts one key) more than once.
var ErrMergeCardinality = errors.New("MERGE source touches a target row more than once")

// ErrAddedColumn is wrapped by the error of an existing target that lacks
// a column the sink adds (mode history's __valid_from and __valid_to, a
// soft-delete merge's __deleted_at) or has it with a type other than a
// timestamp.
var ErrAddedColumn = errors.New("target lacks a column the sink mode writes")
