package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/sinks/changerel"
)

// The change-relation contract (package changerel).
const (
	colOp      = changerel.Op
	colVer     = changerel.Ver
	colOrd     = changerel.Ord
	colPresent = changerel.Present
	netTable   = changerel.NetTable
)

// StageTable is the TEMP table a sink transaction stages merge rows in.
const StageTable = changerel.StageTable

// MinMergeVersion is the first server_version_num with MERGE (15).
const MinMergeVersion = 150000

type stmtKind uint8

const (
	kindExec  stmtKind = iota // run it
	kindCount                 // a query returning (__op, count): rows written by change type
	kindCheck                 // a MERGE cardinality query: any row returned is an error
	kindMerge                 // a SQL MERGE: its cardinality error is rewritten
)

type stmt struct {
	step plan.Step
	kind stmtKind
	// fallback, when set, is what replaces the statement (a MERGE) after
	// a unique violation (unique.go).
	fallback []plan.Step
}

// ApplyOptions tune CompileApply.
type ApplyOptions struct {
	// ServerVersion is server_version_num; below 150000 the merge uses
	// DELETE + INSERT … ON CONFLICT instead of MERGE.
	ServerVersion int
	// Partial tells that the relation may hold partial rows (__present
	// not NULL): the merge then folds carried columns per key instead of
	// taking the last row (DISTINCT ON), and append writes NULL for columns
	// not carried.
	Partial bool
	// FullRows tells that, for mode merge, the relation holds full rows
	// only and at most one row per merge key besides an UPDATE_BEFORE: the
	// net changes of a STANDARD table stream (one change per primary key,
	// an update as an UPDATE_BEFORE/UPDATE_AFTER pair), projected with the
	// merge keys passed through from the table's primary key. The merge
	// then skips the collapse into a net-change table: it counts and
	// MERGEs the relation's rows other than UPDATE_BEFORE directly (one
	// pass each). Ignored with Partial and for other modes.
	FullRows bool
	// CountIdle, when set, is an SQL condition with a side effect (a
	// nextval() > 0) that the MERGE evaluates exactly once for each row
	// of the relation none of its actions takes: a DELETE of a key the
	// target does not have, and, when the target has only key columns, a
	// matched row other than a DELETE. The MERGE's row count plus the
	// rows so counted is then the relation's row count. For a caller
	// that counts the changes inside the MERGE's own statement
	// (pushdown); PostgreSQL 15+ only.
	CountIdle string
	// Analyze tells that relation is a table the caller filled (the
	// staging table): with FullRows the merge ANALYZEs it first, so the
	// planner sizes the MERGE's join by the rows staged rather than a
	// guess (without it PostgreSQL hashes the target instead of the
	// changes). The net-change table of a collapse is always analyzed.
	Analyze bool
	// Casts, when not nil, holds for each projected column the type the
	// relation's text column is cast to ("" for none): the staging table
	// holds values pgx cannot COPY in their type's binary form as text.
	Casts []string
	// DeferUnique makes a MERGE that fails on a unique violation roll back
	// and return errUniqueDeferred instead of reapplying its rows
	// (unique.go): for a batch whose keys may conflict with a later batch.
	DeferUnique bool
}

// Apply is the compiled application of a change relation to a target
// table. Commit of a sink transaction runs it over StageTable; pushdown
// runs it over the stream's filtered, projected net changes.
type Apply struct {
	table string
	st    *plan.SinkStage
	stmts []stmt
	merge *mergeInto // SQL MERGE jobs: what the cardinality error needs
	// deferUnique: ApplyOptions.DeferUnique
	deferUnique bool
}

// Steps returns the statements in execution order, for `sluice plan`.
func (a *Apply) Steps() []plan.Step {
	out := make([]plan.Step, 0, len(a.stmts))
	for _, s := range a.stmts {
		sqlMerge := s.kind == kindMerge && s.fallback != nil
		if sqlMerge {
			out = append(out, plan.Step{Where: "sink", What: "the MERGE runs under a savepoint (rolled back on a unique violation)", SQL: "SAVEPOINT " + savepoint})
		}
		out = append(out, s.step)
		if !a.deferUnique {
			out = append(out, s.fallback...)
		}
		if sqlMerge {
			out = append(out, plan.Step{Where: "sink", What: "keep the MERGE's writes", SQL: "RELEASE SAVEPOINT " + savepoint})
		}
	}
	return out
}

// MergeSQL returns the one writing statement of a FullRows merge on
// PostgreSQL 15+ (its MERGE) for a caller that runs it inside a statement
// of its own and counts by itself (pushdown); ok is false for an apply
// with other statements (a collapse, ANALYZE, the DELETE + upserts of
// PostgreSQL 13/14, a SQL MERGE's cardinality check).
func (a *Apply) MergeSQL() (sql string, ok bool) {
	if a.merge != nil {
		return "", false
	}
	for _, s := range a.stmts {
		switch {
		case s.kind == kindCount:
		case s.kind == kindExec && strings.HasPrefix(s.step.SQL, "MERGE INTO ") && sql == "":
			sql = s.step.SQL
		default:
			return "", false
		}
	}
	return sql, sql != ""
}

// CompileApply compiles the statements that apply the rows of relation
// (see the change-relation columns above; projected columns typed as
// st.Schema) to the target of st. target is the target's schema as Target
// returns it; a zero Schema means the target will be created from
// st.Schema.
//
// Append-like modes: one INSERT … SELECT ordered by (__ver, __ord)
// (overwrite's DELETE and table creation belong to the sink transaction).
// Mode merge: collapse to the net change per key into a TEMP table, then
// one MERGE INTO (PostgreSQL 15+) or DELETE + INSERT … ON CONFLICT (13/14).
// SQL MERGE jobs (st.Merge): a cardinality check, then one native MERGE
// with the job's clauses (PostgreSQL 15+ only).
func CompileApply(st *plan.SinkStage, target cdc.Schema, relation string, opt ApplyOptions) (*Apply, error) {
	if len(target.Columns) == 0 {
		target = cdc.Schema{Columns: st.Schema.Columns, Key: st.Keys}
	}
	if err := checkReserved(st.Schema); err != nil {
		return nil, err
	}
	raw := relation
	if opt.Casts != nil {
		relation = castRelation(st, relation, opt.Casts)
	}
	if st.Merge != nil {
		return compileMergeInto(st, target, relation, opt)
	}
	names, err := targetNames(st, target)
	if err != nil {
		return nil, err
	}
	a := &Apply{table: st.Table, st: st, deferUnique: opt.DeferUnique}
	if !st.Mode.Keyed() {
		a.compileAppend(names, relation, opt)
		return a, nil
	}
	if len(st.Keys) == 0 {
		return nil, fmt.Errorf("postgres sink: %w: mode merge into %s", ErrNoKeys, Quote(st.Table))
	}
	for _, k := range st.Keys {
		if st.Schema.Index(k) < 0 {
			return nil, fmt.Errorf("postgres sink: merge key %q of %s is not a projected column (projected: %s)", k, Quote(st.Table), strings.Join(st.Schema.Names(), ", "))
		}
	}
	if st.Mode == plan.ModeHistory {
		a.compileHistory(names, target, relation)
		return a, nil
	}
	a.compileMerge(names, relation, raw, opt)
	return a, nil
}

// castRelation wraps relation in a subquery that casts its text columns
// to their types (ApplyOptions.Casts).
func castRelation(st *plan.SinkStage, relation string, casts []string) string {
	cols := []string{colOp, colVer, colOrd, colPresent}
	if st.NeedsCommitTime() {
		cols = append(cols, colTS)
	}
	for i, c := range st.Schema.Columns {
		q := Quote(c.Name)
		if casts[i] != "" {
			q = fmt.Sprintf("CAST(%s AS %s) AS %s", q, casts[i], q)
		}
		cols = append(cols, q)
	}
	return fmt.Sprintf("(SELECT %s FROM %s)", strings.Join(cols, ", "), relation)
}

// checkReserved rejects projected columns named like the change-relation
// columns.
func checkReserved(s cdc.Schema) error {
	for _, c := range s.Columns {
		switch strings.ToLower(c.Name) {
		case colOp, colVer, colOrd, colPresent, colTS:
			return fmt.Errorf("postgres sink: projected column %q collides with sluice's staging column of that name; rename it with AS", c.Name)
		}
	}
	return nil
}

// targetNames returns, for each projected column, the target column it is
// written to (matched by name, case-insensitively), checking types.
func targetNames(st *plan.SinkStage, target cdc.Schema) ([]string, error) {
	out := make([]string, len(st.Schema.Columns))
	for i, c := range st.Schema.Columns {
		tc, ok := target.Column(c.Name)
		if !ok {
			return nil, fmt.Errorf("postgres sink: %w: %s has no column %q (it has %s); add it or project fewer columns", ErrUnknownColumn, Quote(st.Table), c.Name, strings.Join(target.Names(), ", "))
		}
		if !Compatible(c.Type, tc.Type) {
			return nil, fmt.Errorf("postgres sink: column %q of %s is %s, which cannot hold the projected %s", tc.Name, Quote(st.Table), tc.Type, c.Type)
		}
		out[i] = tc.Name
	}
	return out, nil
}

// Compatible reports whether values of type from can be stored in a
// column of type to: numbers (and booleans) among themselves, anything
// into text, dates and timestamps among themselves, text into anything
// (parsed, per value), binary into binary.
func Compatible(from, to cdc.Type) bool {
	num := func(k cdc.Kind) bool { return k.IsNumeric() || k == cdc.KindBoolean }
	tm := func(k cdc.Kind) bool { return k == cdc.KindDate || k == cdc.KindTimestamp }
	switch {
	case from.Kind == cdc.KindInvalid || to.Kind.IsText() || from.Kind.IsText():
		return true
	case num(from.Kind):
		return num(to.Kind)
	case tm(from.Kind):
		return tm(to.Kind)
	}
	return from.Kind == to.Kind
}

// carried renders "projected column i (0-based) is carried" over alias.
func carried(alias string, i int) string {
	return fmt.Sprintf("(%[1]s.%[2]s IS NULL OR substr(%[1]s.%[2]s, %[3]d, 1) = '1')", alias, colPresent, i+1)
}

func (a *Apply) add(kind stmtKind, what, sql string) {
	a.stmts = append(a.stmts, stmt{kind: kind, step: plan.Step{Where: "sink", What: what, SQL: sql}})
}

func (a *Apply) compileAppend(names []string, relation string, opt ApplyOptions) {
	cols := make([]string, len(names))
	vals := make([]string, len(names))
	for i, c := range a.st.Schema.Columns {
		cols[i] = Quote(names[i])
		vals[i] = "__r." + Quote(c.Name)
		if opt.Partial {
			vals[i] = fmt.Sprintf("CASE WHEN %s THEN %s END", carried("__r", i), vals[i])
		}
	}
	a.add(kindCount, "count the rows by change type",
		fmt.Sprintf("SELECT %s, count(*) FROM %s AS __r GROUP BY %s", colOp, relation, colOp))
	a.add(kindExec, fmt.Sprintf("insert the rows into %s", a.table),
		fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s AS __r ORDER BY __r.%s, __r.%s",
			Quote(a.table), strings.Join(cols, ", "), strings.Join(vals, ", "), relation, colVer, colOrd))
}

// compileMerge compiles mode merge: the net change per key (last change in
// (__ver, __ord) order, UPDATE_BEFORE ignored, partial rows folded) into a
// TEMP table, then MERGE (15+) or DELETE + upserts (13/14).
// raw is relation before castRelation (the table ANALYZE takes).
func (a *Apply) compileMerge(names []string, relation, raw string, opt ApplyOptions) {
	s := a.st.Schema
	isKey := make([]bool, len(s.Columns))
	var keys, on []string
	for _, k := range a.st.Keys {
		j := s.Index(k)
		isKey[j] = true
		keys = append(keys, Quote(s.Columns[j].Name))
		on = append(on, fmt.Sprintf("__t.%s = __n.%s", Quote(names[j]), Quote(s.Columns[j].Name)))
	}
	kl := strings.Join(keys, ", ")
	net := "pg_temp." + netTable
	full := opt.FullRows && !opt.Partial
	if full {
		// One row per key already (UPDATE_BEFORE aside): the relation's
		// other rows are the net changes.
		net = fmt.Sprintf("(SELECT * FROM %s AS __r WHERE __r.%s <> 'UPDATE_BEFORE')", relation, colOp)
	} else {
		a.add(kindExec, "drop a leftover net-change table", "DROP TABLE IF EXISTS "+net)
	}
	analyze := func(table string) {
		a.add(kindExec, "statistics of the net changes, so the MERGE is planned for their real number", "ANALYZE "+table)
	}
	switch {
	case full:
		if opt.Analyze {
			analyze(raw)
		}
	case opt.Partial:
		a.add(kindExec, "collapse to the net change per key (last in commit order; UPDATE_BEFORE ignored; partial rows folded column by column)",
			fmt.Sprintf("CREATE TEMP TABLE %s AS %s", netTable, foldSQL(s, isKey, kl, relation, a.st.NeedsCommitTime())))
		analyze(net)
	default:
		var cols []string
		for _, c := range s.Columns {
			cols = append(cols, Quote(c.Name))
		}
		a.add(kindExec, "collapse to the net change per key (last in commit order; UPDATE_BEFORE ignored)",
			fmt.Sprintf("CREATE TEMP TABLE %s AS SELECT DISTINCT ON (%s) %s, %s, %s FROM %s AS __r WHERE %s <> 'UPDATE_BEFORE' ORDER BY %s, %s DESC, %s",
				netTable, kl, strings.Join(a.netMeta(), ", "), colPresent, strings.Join(cols, ", "), relation, colOp, kl, colVer, changerel.LastOrder(true)))
		analyze(net)
	}
	if full {
		a.add(kindCount, "count the net changes by change type (the relation has one change per key besides UPDATE_BEFORE: no collapse)",
			fmt.Sprintf("SELECT %s, count(*) FROM %s AS __c GROUP BY %s", colOp, net, colOp))
	} else {
		a.add(kindCount, "count the net changes by change type",
			fmt.Sprintf("SELECT %s, count(*) FROM %s GROUP BY %s", colOp, net, colOp))
	}

	t := Quote(a.table)
	var tcols, ncols, sets, psets, pvals []string
	for i, c := range s.Columns {
		tq, nq := Quote(names[i]), "__n."+Quote(c.Name)
		tcols = append(tcols, tq)
		ncols = append(ncols, nq)
		if isKey[i] {
			pvals = append(pvals, nq)
			continue
		}
		if opt.Partial {
			sets = append(sets, fmt.Sprintf("%s = CASE WHEN %s THEN %s ELSE __t.%s END", tq, carried("__n", i), nq, tq))
		} else {
			sets = append(sets, fmt.Sprintf("%s = %s", tq, nq))
		}
		psets = append(psets, fmt.Sprintf("%s = CASE WHEN %s THEN %s ELSE __t.%s END", tq, carried("__n", i), nq, tq))
		pvals = append(pvals, nq)
	}
	tl, nl := strings.Join(tcols, ", "), strings.Join(ncols, ", ")
	onl := strings.Join(on, " AND ")
	if a.st.OnDelete == plan.OnDeleteSoft {
		// an INSERT or update of a soft-deleted key brings it back
		sets = append(sets, Quote(plan.ColDeletedAt)+" = NULL")
		psets = append(psets, Quote(plan.ColDeletedAt)+" = NULL")
	}
	if opt.ServerVersion == 0 || opt.ServerVersion >= MinMergeVersion {
		update := ""
		if len(sets) > 0 {
			update = "\nWHEN MATCHED THEN UPDATE SET " + strings.Join(sets, ", ")
		}
		idle := ""
		if opt.CountIdle != "" {
			// Last in each kind: reached only by rows no other clause took
			// (after an unconditional UPDATE no MATCHED clause may follow,
			// and none is needed).
			if update == "" {
				idle += "\nWHEN MATCHED AND " + opt.CountIdle + " THEN DO NOTHING"
			}
			idle += "\nWHEN NOT MATCHED AND " + opt.CountIdle + " THEN DO NOTHING"
		}
		what, del := a.mergeDelete()
		a.add(kindExec, "apply the net changes with one MERGE ("+what+"; INSERT/UPDATE_AFTER upsert)",
			fmt.Sprintf("MERGE INTO %s AS __t USING %s AS __n ON %s\nWHEN MATCHED AND __n.%s = 'DELETE' THEN %s%s\nWHEN NOT MATCHED AND __n.%s <> 'DELETE' THEN INSERT (%s) VALUES (%s)%s",
				t, net, onl, colOp, del, update, colOp, tl, nl, idle))
		if !opt.Partial && opt.CountIdle == "" {
			a.stmts[len(a.stmts)-1].fallback = a.reorderSteps(t, net, onl, tl, nl)
		}
	} else {
		a.addDeletes(t, net, onl)
		if opt.Partial && len(psets) > 0 {
			a.add(kindExec, "PostgreSQL < 15: update existing keys from partial rows (only the carried columns)",
				fmt.Sprintf("UPDATE %s AS __t SET %s FROM %s AS __n WHERE %s AND __n.%s <> 'DELETE' AND __n.%s IS NOT NULL",
					t, strings.Join(psets, ", "), net, onl, colOp, colPresent))
			a.add(kindExec, "PostgreSQL < 15: insert new keys from partial rows (columns not carried are NULL)",
				fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s AS __n WHERE __n.%s <> 'DELETE' AND __n.%s IS NOT NULL ON CONFLICT (%s) DO NOTHING",
					t, tl, strings.Join(pvals, ", "), net, colOp, colPresent, quoteTargetKeys(a.st, names)))
		}
		conflict := "DO NOTHING"
		if len(sets) > 0 {
			var ex []string
			for i := range s.Columns {
				if !isKey[i] {
					ex = append(ex, fmt.Sprintf("%s = EXCLUDED.%s", Quote(names[i]), Quote(names[i])))
				}
			}
			if a.st.OnDelete == plan.OnDeleteSoft {
				ex = append(ex, Quote(plan.ColDeletedAt)+" = NULL")
			}
			conflict = "DO UPDATE SET " + strings.Join(ex, ", ")
		}
		onlyFull := ""
		if opt.Partial {
			onlyFull = fmt.Sprintf(" AND __n.%s IS NULL", colPresent)
		}
		a.add(kindExec, "PostgreSQL < 15: upsert full rows (INSERT / UPDATE_AFTER) with INSERT … ON CONFLICT",
			fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s AS __n WHERE __n.%s <> 'DELETE'%s ON CONFLICT (%s) %s",
				t, tl, nl, net, colOp, onlyFull, quoteTargetKeys(a.st, names), conflict))
	}
	if !full {
		a.add(kindExec, "drop the net-change table", "DROP TABLE "+net)
	}
}

func quoteTargetKeys(st *plan.SinkStage, names []string) string {
	var out []string
	for _, k := range st.Keys {
		out = append(out, Quote(names[st.Schema.Index(k)]))
	}
	return strings.Join(out, ", ")
}

// foldSQL collapses a relation with partial rows to one row per key: the
// last segment of each key's changes starts at its last DELETE or full
// row; within it every column takes the last value carried; __present is
// NULL (full) when the segment starts with a full row or a DELETE (a row
// re-created after a DELETE has NULL in the columns not carried), else the
// mask of carried columns.
func foldSQL(s cdc.Schema, isKey []bool, kl, relation string, withTS bool) string {
	l1 := fmt.Sprintf(`SELECT __r.*, row_number() OVER __w AS __s_seq,
	count(*) FILTER (WHERE %[1]s = 'DELETE' OR %[2]s IS NULL) OVER (__w ROWS UNBOUNDED PRECEDING) AS __s_grp
	FROM %[3]s AS __r WHERE %[1]s <> 'UPDATE_BEFORE' WINDOW __w AS (PARTITION BY %[4]s ORDER BY %[5]s, %[6]s)`,
		colOp, colPresent, relation, kl, colVer, changerel.LastOrder(false))
	l2 := fmt.Sprintf(`SELECT * FROM (SELECT __l1.*, max(__s_grp) OVER (PARTITION BY %s) AS __s_maxgrp FROM (%s) AS __l1) AS __l2 WHERE __s_grp = __s_maxgrp`, kl, l1)
	var sel, mask, all []string
	for i, c := range s.Columns {
		q := Quote(c.Name)
		if isKey[i] {
			sel = append(sel, q)
			mask = append(mask, "'1'")
			continue
		}
		has := fmt.Sprintf("%s <> 'DELETE' AND %s", colOp, carried("__l", i))
		sel = append(sel, fmt.Sprintf("(array_agg(%s ORDER BY __s_seq DESC) FILTER (WHERE %s))[1] AS %s", q, has, q))
		mask = append(mask, fmt.Sprintf("CASE WHEN bool_or(%s) THEN '1' ELSE '0' END", has))
		all = append(all, fmt.Sprintf("coalesce(bool_or(%s), false)", has))
	}
	present := "NULL::text"
	if len(all) > 0 {
		present = fmt.Sprintf("CASE WHEN bool_or(%s = 'DELETE' OR %s IS NULL) OR (%s) THEN NULL ELSE %s END",
			colOp, colPresent, strings.Join(all, " AND "), strings.Join(mask, " || "))
	}
	if withTS {
		sel = append(sel, fmt.Sprintf("(array_agg(%[1]s ORDER BY __s_seq DESC))[1] AS %[1]s", colTS))
	}
	return fmt.Sprintf(`SELECT (array_agg(%s ORDER BY __s_seq DESC))[1] AS %s, %s AS %s, %s FROM (%s) AS __l GROUP BY %s`,
		colOp, colOp, present, colPresent, strings.Join(sel, ", "), l2, kl)
}

// Exec runs the statements on q (the caller's transaction) and returns the
// rows written by change type: for append modes every row of the relation
// by its __op; for merge the net change per key by the op of the key's last
// change; for SQL MERGE the source rows that take a clause, by their __op.
func (a *Apply) Exec(ctx context.Context, q Querier) (map[cdc.Op]int64, error) {
	written := map[cdc.Op]int64{}
	for _, s := range a.stmts {
		switch s.kind {
		case kindExec, kindMerge:
			if s.kind == kindMerge && s.fallback != nil {
				if err := a.execMerge(ctx, q, s); err != nil {
					return nil, err
				}
				continue
			}
			if s.fallback != nil {
				if err := a.execReordering(ctx, q, s, a.deferUnique); err != nil {
					return nil, err
				}
				continue
			}
			if _, err := q.Exec(ctx, s.step.SQL); err != nil {
				if s.kind == kindMerge && a.merge != nil && isCardinality(err) {
					return nil, a.merge.cardinalityError(err)
				}
				return nil, a.wrap(err, s.step)
			}
		case kindCount:
			if err := countOps(ctx, q, s.step.SQL, written); err != nil {
				return nil, a.wrap(err, s.step)
			}
		case kindCheck:
			if err := a.merge.check(ctx, q, s.step.SQL); err != nil {
				return nil, err
			}
		}
	}
	return written, nil
}

func (a *Apply) wrap(err error, s plan.Step) error {
	return fmt.Errorf("postgres sink: %s %s: %w", s.What, Quote(a.table), err)
}

// countOps runs a count query (see changerel.CountOps) and adds its rows to into.
func countOps(ctx context.Context, q Querier, query string, into map[cdc.Op]int64) error {
	rows, err := q.Query(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	return changerel.CountOps(rows, into)
}
