package sqlite

import (
	"errors"
	"fmt"

	"github.com/sluicedata/sluice/runner"
)

// ErrIgnored is matched (errors.Is) by the error Begin returns when the
// sink's mode is ignore and the target table exists: the run writes nothing
// and must consume nothing (the runner reports the job as skipped and leaves
// the stream offset where it is). The same error also matches
// runner.ErrTargetExists.
var ErrIgnored = errors.New("target exists; mode ignore writes nothing and consumes nothing")

// ErrNotDurable is a sink transaction whose connection would not fsync its
// commit (PRAGMA synchronous below FULL): it is rolled back instead of
// reported committed, so the source never moves its offset or purges its
// change log past rows a power loss could undo.
var ErrNotDurable = errors.New("sink commit would not be durable (PRAGMA synchronous below FULL)")

type ignoredError struct{ table string }

func (e *ignoredError) Error() string {
	return fmt.Sprintf("sqlite sink: target table %q exists; mode ignore writes nothing and consumes nothing", e.table)
}

func (e *ignoredError) Is(target error) bool {
	return target == ErrIgnored || target == runner.ErrTargetExists
}

// ErrPartialRow is a partial row (cdc.Change.Present set) staged for a
// merge whose plan said the source delivers full rows only
// (plan.SinkStage.PartialRows false): its missing columns would be written
// as NULL.
var ErrPartialRow = errors.New("partial row from a source planned as delivering full rows")

// ErrMergeCardinality is wrapped by the error of a SQL MERGE whose source
// touches one target row (or inserts one key) more than once.
var ErrMergeCardinality = errors.New("MERGE source touches a target row more than once")

// ErrAddedColumn is wrapped by the error of an existing target that lacks
// a column the sink adds (mode history's __valid_from and __valid_to, a
// soft-delete merge's __deleted_at) or has it with a type other than
// TIMESTAMP.
var ErrAddedColumn = errors.New("target lacks a column the sink mode writes")

// ErrCopyValue is wrapped by the error of a pass-through chunk (Tx.CopyFrom)
// that meets a COPY text value its column's reader does not take (a NaN,
// an infinity, a BC date, a NULL merge key) or a line that does not have
// the projected columns: the runner then copies that chunk through
// sluice, which converts the value as a run does or names the row.
var ErrCopyValue = errors.New("a COPY text value is not in a form the SQLite pass-through writes")
