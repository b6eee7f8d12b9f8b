package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/plan"
)

// Merges that no intermediate state blocks. The upsert of a window's net
// changes writes row by row and SQLite checks a UNIQUE constraint at each
// row (SQLite has no deferred UNIQUE), so two keys that swap the values of
// a secondary UNIQUE column, a shifted key range, or a value moved to a
// new key fail the upsert although the source satisfied the constraint
// after every transaction (the DELETEs of the window are applied before
// the upsert already). On a UNIQUE failure the upsert — rolled back by
// SQLite as a whole statement (ON CONFLICT ABORT) — is replaced by a
// delete of the window's other keys from the target and an insert of their
// final rows: the target then holds only final rows of the window and rows
// the window does not touch, which the source held together. A failure
// that remains is the data's and fails the run as before. The common case
// pays nothing.
//
// A target that another table's foreign key references is not reapplied
// (the delete would cascade or fail): the original error stands.

// isUniqueViolation reports whether err is SQLite's UNIQUE constraint
// failure (SQLITE_CONSTRAINT_UNIQUE or _PRIMARYKEY).
func isUniqueViolation(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// reorderSteps returns the statements that replace the upsert of the full
// rows of net (key list kl, column list cl) after a UNIQUE failure.
func reorderSteps(t, net, kl, cl string) []plan.Step {
	return []plan.Step{
		{Where: "sink", What: "on a UNIQUE failure, instead: delete the window's other keys from the target",
			SQL: fmt.Sprintf("DELETE FROM %s WHERE (%s) IN (SELECT %s FROM %s WHERE %s <> 'DELETE' AND %s IS NULL)", t, kl, kl, net, colOp, colPresent)},
		{Where: "sink", What: "on a UNIQUE failure, instead: insert them with their final values",
			SQL: fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s <> 'DELETE' AND %s IS NULL", t, cl, cl, net, colOp, colPresent)},
	}
}

// execReordering runs s; on a UNIQUE failure it runs s.fallback instead
// unless a foreign key references the target.
func (a *Apply) execReordering(ctx context.Context, q Querier, s stmt) error {
	_, err := q.ExecContext(ctx, s.step.SQL)
	if !isUniqueViolation(err) {
		if err != nil {
			return a.wrap(err, s.step)
		}
		return nil
	}
	var n int
	if rerr := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema AS s, pragma_foreign_key_list(s.name) AS f
		WHERE s.type = 'table' AND f."table" = ? COLLATE NOCASE`, a.table).Scan(&n); rerr != nil {
		return a.wrap(err, s.step)
	}
	if n > 0 {
		return fmt.Errorf("%w (not reapplied as delete and insert: a foreign key references %q)", a.wrap(err, s.step), a.table)
	}
	for _, f := range s.fallback {
		if _, ferr := q.ExecContext(ctx, f.SQL); ferr != nil {
			return a.wrap(ferr, f)
		}
	}
	return nil
}
