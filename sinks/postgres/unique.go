package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sluicedata/sluice/plan"
)

// Merges that no intermediate state blocks. A window of net changes is
// applied with one MERGE, row by row: PostgreSQL checks a unique
// constraint that is not DEFERRABLE at each row (PostgreSQL manual, "Unique
// Constraints"), so two keys that swap the values of a secondary UNIQUE
// column, a shifted key range, or a value moved from a deleted row to an
// inserted one fail the MERGE although the source satisfied the constraint
// after every transaction. When the MERGE fails on a unique violation it
// is rolled back to a savepoint and the window is applied in an order no
// such state blocks: the DELETEs first (as on_delete says), then every
// other key of the window is deleted from the target and inserted again
// with its final values. The target then holds only final rows of the
// window and rows the window does not touch, which the source held
// together. A violation that remains is the data's (the target holds a
// row the source does not), and fails the run as before. The common case
// pays one SAVEPOINT and one RELEASE.
//
// The reapplied keys are deleted and inserted, not updated: a target that
// another table's foreign key references is not reapplied (the delete
// would cascade or fail), and the original error stands. Partial rows
// (Tablestore updates) are not reapplied either.

// savepoint is the savepoint a MERGE with a fallback runs under.
const savepoint = "sluice_apply"

// errUniqueDeferred is what Exec returns with ApplyOptions.DeferUnique
// when the MERGE failed on a unique violation (rolled back): the caller
// applies those rows again later, with every other batch in place.
var errUniqueDeferred = errors.New("unique violation: deferred to the end of the window")

// isUniqueViolation reports whether err is PostgreSQL's unique_violation
// (SQLSTATE 23505).
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// reorderSteps returns the statements that apply the net changes of net
// (with the target alias __t, net's __n, the ON condition onl, target
// columns tl and net values nl) in the order no intermediate state blocks.
func (a *Apply) reorderSteps(t, net, onl, tl, nl string) []plan.Step {
	d := &Apply{table: a.table, st: a.st}
	d.addDeletes(t, net, onl)
	var out []plan.Step
	for _, s := range d.stmts {
		s.step.What = "on a unique violation, instead: " + s.step.What
		out = append(out, s.step)
	}
	return append(out,
		plan.Step{Where: "sink", What: "on a unique violation, instead: delete the other keys of the window from the target",
			SQL: fmt.Sprintf("DELETE FROM %s AS __t USING %s AS __n WHERE %s AND __n.%s <> 'DELETE'", t, net, onl, colOp)},
		plan.Step{Where: "sink", What: "on a unique violation, instead: insert them with their final values",
			SQL: fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s AS __n WHERE __n.%s <> 'DELETE'", t, tl, nl, net, colOp)},
	)
}

// execReordering runs s (a MERGE with a fallback) under a savepoint; on a
// unique violation it rolls back to the savepoint and runs the fallback
// (or, with defer, returns errUniqueDeferred).
func (a *Apply) execReordering(ctx context.Context, q Querier, s stmt, deferUnique bool) error {
	if _, err := q.Exec(ctx, "SAVEPOINT "+savepoint); err != nil {
		return err
	}
	_, err := q.Exec(ctx, s.step.SQL)
	if err != nil {
		if !isUniqueViolation(err) {
			return a.wrap(err, s.step)
		}
		if _, rerr := q.Exec(ctx, "ROLLBACK TO SAVEPOINT "+savepoint); rerr != nil {
			return errors.Join(a.wrap(err, s.step), rerr)
		}
		if deferUnique {
			return errUniqueDeferred
		}
		var referenced bool
		if rerr := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE contype = 'f' AND confrelid = to_regclass($1))`, Quote(a.table)).Scan(&referenced); rerr != nil {
			return errors.Join(a.wrap(err, s.step), rerr)
		}
		if referenced {
			return fmt.Errorf("%w (not reapplied as delete and insert: a foreign key references %s)", a.wrap(err, s.step), Quote(a.table))
		}
		for _, f := range s.fallback {
			if _, ferr := q.Exec(ctx, f.SQL); ferr != nil {
				return a.wrap(ferr, f)
			}
		}
	}
	_, err = q.Exec(ctx, "RELEASE SAVEPOINT "+savepoint)
	return err
}
