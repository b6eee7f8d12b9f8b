package sqlite

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
)

// A SQL MERGE job that no intermediate state blocks. The statements of
// the job's WHEN clauses write row by row, and SQLite checks a UNIQUE
// constraint at each row (it has no deferred UNIQUE): two keys that
// swapped the values of a secondary UNIQUE column, a shifted key range, a
// value moved from a deleted row to an inserted one fail them although
// the source satisfied the constraint after every transaction. The job's
// clauses are its own (an UPDATE may compute from the target's values),
// so the fallback of mode merge (delete and insert the final rows,
// unique.go) does not apply; instead the clauses run under a savepoint
// and, on a UNIQUE failure, are rolled back and applied to a copy:
//
//  1. a TEMP table with the target's columns, declared types and defaults
//     (no PRIMARY KEY, UNIQUE, NOT NULL or CHECK) receives the target rows
//     that a clause takes, with their rowids;
//  2. the clauses' statements, the same ones, run on the copy: they
//     address the rows they take by rowid (sluice_merge holds the pairs
//     the ON condition made against the target) and insert the new ones;
//  3. those rows are deleted from the target and the copy's rows inserted
//     (the deletes first).
//
// The target then holds what the MERGE would have produced with its
// UNIQUE constraints checked at the end. A failure that remains is the
// data's (the target holds a row the source does not): it fails the run
// as before, or goes to the dead-letter table. The common case pays one
// SAVEPOINT and one RELEASE.
//
// The rows are deleted and inserted, not updated: a target that another
// table's foreign key references is not reapplied, and the original error
// stands. The rows keep their values, not their rowids (unless the rowid
// is the INTEGER PRIMARY KEY), and the target's triggers fire for a
// delete and an insert.

// applySavepoint is the savepoint the clauses of a SQL MERGE run under.
const applySavepoint = "sluice_apply"

// mergeCopy is the TEMP table a SQL MERGE's fallback applies the window
// to.
const mergeCopy = "sluice_merge_copy"

// copyCreate is the plan's text of the CREATE of mergeCopy, whose column
// list Exec reads from the target (pragma_table_info).
const copyCreate = "CREATE TEMP TABLE " + mergeCopy + " (<the target's columns with their declared types and DEFAULTs, from pragma_table_info; no PRIMARY KEY, UNIQUE, NOT NULL or CHECK>)"

// windowSteps returns the statements that replace the clauses (each over
// a quoted target name) after a UNIQUE failure.
func (mi *mergeInto) windowSteps(target cdc.Schema, clauses []func(t string) plan.Step) []plan.Step {
	mi.targetCols = target.Names()
	cols := quoteList(mi.targetCols)
	t, cp := sqlitex.Quote(mi.table), "temp."+mergeCopy
	taken := fmt.Sprintf("(SELECT %s FROM temp.%s WHERE %s IS NOT NULL)", colTrow, mergeTable, colAction)
	step := func(what, sql string) plan.Step {
		return plan.Step{Where: "sink", What: "on a UNIQUE failure, instead: " + what, SQL: sql}
	}
	out := []plan.Step{
		step("drop a leftover copy", "DROP TABLE IF EXISTS "+cp),
		step("a TEMP table like the target, without its constraints", copyCreate),
		step("copy into it the target rows a clause takes, with their rowids",
			fmt.Sprintf("INSERT INTO %s (rowid, %s) SELECT rowid, %s FROM %s WHERE rowid IN %s", cp, cols, cols, t, taken)),
	}
	for _, c := range clauses {
		s := c(cp)
		out = append(out, step(s.What+" on the copy", s.SQL))
	}
	return append(out,
		step("delete those rows from the target", fmt.Sprintf("DELETE FROM %s WHERE rowid IN %s", t, taken)),
		step("insert the copy's rows: the UNIQUE constraints are checked on the MERGE's result, not on a state in between",
			fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s ORDER BY rowid", t, cols, cols, cp)),
		step("drop the copy", "DROP TABLE "+cp))
}

// execMerge runs the statements of the WHEN clauses (group) under a
// savepoint; on a UNIQUE failure it rolls back to the savepoint and runs
// the fallback of the group's last statement instead, unless a foreign
// key references the target. A failure that stands leaves the target as
// it was before the clauses and is returned; a UNIQUE failure names the
// value and the rows that conflict on it (uniqueError).
func (a *Apply) execMerge(ctx context.Context, q Querier, group []stmt) error {
	mi := a.merge
	if _, err := q.ExecContext(ctx, "SAVEPOINT "+applySavepoint); err != nil {
		return fmt.Errorf("sqlite sink: savepoint: %w", err)
	}
	undo := func(err error) error {
		for _, u := range []string{"ROLLBACK TO " + applySavepoint, "RELEASE " + applySavepoint} {
			if _, rerr := q.ExecContext(ctx, u); rerr != nil {
				return errors.Join(err, rerr)
			}
		}
		return err
	}
	var failed error
	var step plan.Step
	for _, s := range group {
		if _, err := q.ExecContext(ctx, s.step.SQL); err != nil {
			if !isUniqueViolation(err) {
				return undo(a.wrap(err, s.step))
			}
			failed, step = err, s.step
			break
		}
	}
	if failed != nil {
		if _, err := q.ExecContext(ctx, "ROLLBACK TO "+applySavepoint); err != nil {
			return errors.Join(a.wrap(failed, step), err)
		}
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema AS s, pragma_foreign_key_list(s.name) AS f
		WHERE s.type = 'table' AND f."table" = ? COLLATE NOCASE`, a.table).Scan(&n); err != nil {
			return undo(errors.Join(a.wrap(failed, step), err))
		}
		if n > 0 {
			return undo(mi.uniqueError(ctx, q, failed, step.What, fmt.Sprintf(" (not applied as a delete and an insert of the window's rows: a foreign key references %q)", a.table), false))
		}
		fallback := group[len(group)-1].fallback
		for i, f := range fallback {
			sql := f.SQL
			if sql == copyCreate {
				var err error
				if sql, err = copyDDL(ctx, q, a.table); err != nil {
					return undo(err)
				}
			}
			if _, err := q.ExecContext(ctx, sql); err != nil {
				if isUniqueViolation(err) && i == len(fallback)-2 { // the insert of the copy's rows
					return undo(mi.uniqueError(ctx, q, err, step.What, " (also when the window is applied as a whole)", true))
				}
				return undo(a.wrap(err, f))
			}
		}
	}
	if _, err := q.ExecContext(ctx, "RELEASE "+applySavepoint); err != nil {
		return fmt.Errorf("sqlite sink: release savepoint: %w", err)
	}
	return nil
}

// copyDDL returns the CREATE TEMP TABLE of mergeCopy for table: its
// columns with their declared types (so the same affinities) and
// defaults.
func copyDDL(ctx context.Context, q Querier, table string) (string, error) {
	rows, err := q.QueryContext(ctx, "SELECT name, type, dflt_value FROM pragma_table_info(?)", table)
	if err != nil {
		return "", fmt.Errorf("sqlite sink: columns of %q: %w", table, err)
	}
	defer rows.Close()
	var defs []string
	for rows.Next() {
		var name, typ string
		var dflt *string
		if err := rows.Scan(&name, &typ, &dflt); err != nil {
			return "", fmt.Errorf("sqlite sink: columns of %q: %w", table, err)
		}
		d := sqlitex.Quote(name)
		if typ != "" {
			d += " " + sqlitex.DeclaredTypeSQL(typ)
		}
		if dflt != nil {
			d += " DEFAULT (" + *dflt + ")"
		}
		defs = append(defs, d)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("sqlite sink: columns of %q: %w", table, err)
	}
	return fmt.Sprintf("CREATE TEMP TABLE %s (%s)", mergeCopy, strings.Join(defs, ", ")), nil
}

// uniqueFailed is the column list of SQLite's UNIQUE failure.
var uniqueFailed = regexp.MustCompile(`UNIQUE constraint failed: ([^ ,]+(?:, [^ ,]+)*)`)

// uniqueError returns err (a UNIQUE failure of the clause what) with the
// value and the rows that conflict on it named, for a constraint on one
// column: `(email)=('b'): the window's row (id=1) has it, the target's row
// (id=2) holds it`. fromCopy tells that the failure is the insert of the
// copy's rows (the conflicts are then exact: copy against target);
// otherwise the window's rows are matched on the source column of the
// same name. note ends the message's first part. Run before the rollback.
func (mi *mergeInto) uniqueError(ctx context.Context, q Querier, err error, what, note string, fromCopy bool) error {
	named := ""
	if m := uniqueFailed.FindStringSubmatch(err.Error()); m != nil && !strings.Contains(m[1], ",") {
		col := m[1][strings.LastIndex(m[1], ".")+1:]
		named = mi.conflicts(ctx, q, col, fromCopy)
	}
	return fmt.Errorf("sqlite sink: %s %q%s%s: %w", what, mi.table, named, note, err)
}

// conflicts names the rows that conflict on target column col; "" when
// none is found.
func (mi *mergeInto) conflicts(ctx context.Context, q Querier, col string, fromCopy bool) string {
	if !containsFold(mi.targetCols, col) {
		return ""
	}
	keys := func(alias string, cols []string) string {
		parts := make([]string, len(cols))
		for i, c := range cols {
			parts[i] = fmt.Sprintf("%s || quote(%s.%s)", sqlitex.QuoteString(mi.names[i]+"="), alias, sqlitex.Quote(c))
		}
		return "'(' || " + strings.Join(parts, " || ', ' || ") + " || ')'"
	}
	c, t := sqlitex.Quote(col), sqlitex.Quote(mi.table)
	var query string
	if fromCopy {
		query = fmt.Sprintf("SELECT quote(__c.%s), %s, %s FROM temp.%s AS __c JOIN %s AS __h ON __h.%s = __c.%s LIMIT 5",
			c, keys("__c", mi.names), keys("__h", mi.names), mergeCopy, t, c, c)
	} else {
		srcKeys := make([]string, len(mi.keys))
		for i, k := range mi.keys {
			srcKeys[i] = k.Name
		}
		if !containsFold(mi.sourceCols, col) {
			return ""
		}
		query = fmt.Sprintf("SELECT quote(__m.%s), %s, %s FROM temp.%s AS __m JOIN %s AS __h ON __h.%s = __m.%s WHERE __m.%s IS NOT NULL AND __m.%s <> 'DELETE' AND __h.rowid IS NOT __m.%s LIMIT 5",
			c, keys("__m", srcKeys), keys("__h", mi.names), mergeTable, t, c, c, colAction, colOp, colTrow)
	}
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return ""
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v, w, h string
		if rows.Scan(&v, &w, &h) == nil {
			out = append(out, fmt.Sprintf("(%s)=(%s): the window's row %s has it, the target's row %s holds it", col, v, w, h))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return ": " + strings.Join(out, "; ")
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
