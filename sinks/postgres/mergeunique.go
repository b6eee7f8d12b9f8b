package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// A SQL MERGE job that no intermediate state blocks. The job's MERGE
// writes row by row, and PostgreSQL checks a UNIQUE constraint that is
// not DEFERRABLE at each row: two keys that swapped the values of a
// secondary UNIQUE column, a shifted key range, a value moved from a
// deleted row to an inserted one fail the MERGE although the source
// satisfied the constraint after every transaction. The job's clauses are
// its own (an UPDATE may compute from the target's values), so the
// fallback of mode merge (delete and insert the final rows, unique.go)
// does not apply; instead the MERGE runs under a savepoint and, on a
// unique violation, is rolled back and applied to a copy:
//
//  1. a TEMP table like the target (defaults, NOT NULL and CHECK kept; no
//     PRIMARY KEY, no UNIQUE) receives the target rows that the ON
//     condition matches with a source row;
//  2. the job's MERGE, the same statement, runs into the copy: it makes
//     the same matches (the copy holds every target row a source row
//     matches) and takes the same clauses, with no constraint to trip on
//     a state in between;
//  3. those rows are deleted from the target and the copy's rows inserted
//     (the deletes first).
//
// The target then holds what the MERGE would have produced with its
// UNIQUE constraints checked at the end of the statement. A violation
// that remains is the data's (the target holds a row the source does
// not): it fails the run as before, or goes to the dead-letter table.
// The common case pays one SAVEPOINT and one RELEASE.
//
// The rows are deleted and inserted, not updated: a target that another
// table's foreign key references, or that has a generated column or a
// GENERATED ALWAYS identity column, is not reapplied, and the original
// error stands. The target's row triggers fire for a delete and an
// insert, not an update.

// mergeCopy is the TEMP table a SQL MERGE's fallback applies the window
// to.
const mergeCopy = "pg_temp.sluice_merge_copy"

// windowSteps returns the statements that replace the job's MERGE after a
// unique violation: target is the target's schema, ta its quoted alias,
// intoCopy the job's MERGE into mergeCopy.
func (mi *mergeInto) windowSteps(target cdc.Schema, ta, intoCopy string) []plan.Step {
	cols := make([]string, len(target.Columns))
	for i, c := range target.Columns {
		cols[i] = Quote(c.Name)
	}
	mi.targetCols = target.Names()
	cl := strings.Join(cols, ", ")
	t := Quote(mi.table)
	matched := fmt.Sprintf("EXISTS (SELECT 1 FROM %s AS %s WHERE %s)", mi.relation, mi.sa, mi.on)
	step := func(what, sql string) plan.Step {
		return plan.Step{Where: "sink", What: "on a unique violation, instead: " + what, SQL: sql}
	}
	return []plan.Step{
		step("drop a leftover copy", "DROP TABLE IF EXISTS "+mergeCopy),
		step("a TEMP table like the target, without its PRIMARY KEY and UNIQUE constraints (defaults, NOT NULL and CHECK kept)",
			fmt.Sprintf("CREATE TEMP TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)", strings.TrimPrefix(mergeCopy, "pg_temp."), t)),
		step("copy into it the target rows the ON condition matches",
			fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s AS %s WHERE %s", mergeCopy, cl, cl, t, ta, matched)),
		step("the job's MERGE into the copy (the same matches: it holds every target row a source row matches)", intoCopy),
		step("delete those rows from the target", fmt.Sprintf("DELETE FROM %s AS %s WHERE %s", t, ta, matched)),
		step("insert the copy's rows: the UNIQUE constraints are checked on the MERGE's result, not on a state in between",
			fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s", t, cl, cl, mergeCopy)),
		step("drop the copy", "DROP TABLE "+mergeCopy),
	}
}

// execMerge runs s (the job's MERGE) under a savepoint; on a unique
// violation it rolls back to the savepoint and runs s.fallback, unless
// the target cannot take a delete and an insert of its rows. A unique
// violation that stands is returned naming the conflicting value and the
// rows that hold it (uniqueError).
func (a *Apply) execMerge(ctx context.Context, q Querier, s stmt) error {
	mi := a.merge
	if _, err := q.Exec(ctx, "SAVEPOINT "+savepoint); err != nil {
		return err
	}
	_, err := q.Exec(ctx, s.step.SQL)
	if err != nil {
		if isCardinality(err) {
			return mi.cardinalityError(err)
		}
		if !isUniqueViolation(err) {
			return a.wrap(err, s.step)
		}
		if _, rerr := q.Exec(ctx, "ROLLBACK TO SAVEPOINT "+savepoint); rerr != nil {
			return errors.Join(a.wrap(err, s.step), rerr)
		}
		var referenced, generated bool
		if rerr := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE contype = 'f' AND confrelid = to_regclass($1)),
	EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped AND (attidentity = 'a' OR attgenerated <> ''))`,
			Quote(a.table)).Scan(&referenced, &generated); rerr != nil {
			return errors.Join(a.wrap(err, s.step), rerr)
		}
		switch {
		case referenced:
			return mi.uniqueError(ctx, q, err, s.step.What, fmt.Sprintf(" (not applied as a delete and an insert of the window's rows: a foreign key references %s)", Quote(a.table)))
		case generated:
			return mi.uniqueError(ctx, q, err, s.step.What, fmt.Sprintf(" (not applied as a delete and an insert of the window's rows: %s has a generated or GENERATED ALWAYS identity column)", Quote(a.table)))
		}
		for _, f := range s.fallback {
			if _, ferr := q.Exec(ctx, f.SQL); ferr != nil {
				if isUniqueViolation(ferr) {
					if _, rerr := q.Exec(ctx, "ROLLBACK TO SAVEPOINT "+savepoint); rerr != nil {
						return errors.Join(a.wrap(ferr, f), rerr)
					}
					return mi.uniqueError(ctx, q, ferr, s.step.What, " (also when the window is applied as a whole)")
				}
				return a.wrap(ferr, f)
			}
		}
	}
	_, err = q.Exec(ctx, "RELEASE SAVEPOINT "+savepoint)
	return err
}

// uniqueDetail is PostgreSQL's detail of a unique violation.
var uniqueDetail = regexp.MustCompile(`^Key \((.+)\)=\((.*)\) already exists\.?$`)

// uniqueError returns err (a unique violation of the MERGE what, the
// transaction rolled back to the savepoint) with the conflicting value
// named, from PostgreSQL's detail, and, for a constraint on one column,
// the keys of the window's rows that have the value and of the target's
// rows that hold it: `Key (email)=(b) already exists; the window's row
// (id=1) has it, the target's row (id=2) holds it`. note ends the
// message's first part.
func (mi *mergeInto) uniqueError(ctx context.Context, q Querier, err error, what, note string) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Detail == "" {
		return fmt.Errorf("postgres sink: %s %s%s: %w", what, Quote(mi.table), note, err)
	}
	msg := strings.TrimSuffix(pe.Detail, ".")
	if m := uniqueDetail.FindStringSubmatch(pe.Detail); m != nil {
		msg += mi.holders(ctx, q, m[1], m[2])
	}
	return fmt.Errorf("postgres sink: %s %s: %s%s: %w", what, Quote(mi.table), msg, note, err)
}

// holders names the window's rows whose column col (as PostgreSQL's
// detail prints it) has the value val, and the target's rows that hold
// it; "" when col is not one column of both, or nothing is found.
func (mi *mergeInto) holders(ctx context.Context, q Querier, col, val string) string {
	name := col
	if strings.HasPrefix(col, `"`) && strings.HasSuffix(col, `"`) && len(col) > 1 {
		name = strings.ReplaceAll(col[1:len(col)-1], `""`, `"`)
	}
	keys := func(alias string, cols []string) string {
		parts := make([]string, len(cols))
		for i, c := range cols {
			parts[i] = fmt.Sprintf("'%s=' || coalesce(%s.%s::text, 'NULL')", strings.ReplaceAll(mi.names[i], "'", "''"), alias, Quote(c))
		}
		return "'(' || " + strings.Join(parts, " || ', ' || ") + " || ')'"
	}
	list := func(query string) string {
		rows, err := q.Query(ctx, query, val)
		if err != nil {
			return ""
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var k string
			if rows.Scan(&k) == nil {
				out = append(out, k)
			}
		}
		return strings.Join(out, ", ")
	}
	var parts []string
	srcKeys := make([]string, len(mi.keys))
	for i, k := range mi.keys {
		srcKeys[i] = k.Name
	}
	if !slices.Contains(mi.targetCols, name) {
		return ""
	}
	if slices.Contains(mi.sourceCols, name) {
		if k := list(fmt.Sprintf("SELECT %s FROM %s AS %s WHERE %s.%s <> 'DELETE' AND %s.%s::text = $1 LIMIT 5",
			keys(mi.sa, srcKeys), mi.relation, mi.sa, mi.sa, colOp, mi.sa, Quote(name))); k != "" {
			parts = append(parts, "the window's row "+k+" has it")
		}
	}
	if k := list(fmt.Sprintf("SELECT %s FROM %s AS __h WHERE __h.%s::text = $1 LIMIT 5",
		keys("__h", mi.names), Quote(mi.table), Quote(name))); k != "" {
		parts = append(parts, "the target's row "+k+" holds it")
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}
