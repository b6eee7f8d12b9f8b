package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
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

type stmtKind uint8

const (
	kindExec  stmtKind = iota // run it
	kindCount                 // a query returning (__op, count): rows written by change type
	kindCheck                 // a MERGE cardinality query: any row returned is an error
)

type stmt struct {
	step plan.Step
	kind stmtKind
	// fallback replaces the statement (an upsert) after a UNIQUE failure
	// (unique.go); for the last statement of a SQL MERGE's clauses, it
	// replaces them all (mergeunique.go).
	fallback []plan.Step
	// merge marks the statements of a SQL MERGE's WHEN clauses: they run
	// under one savepoint (mergeunique.go).
	merge bool
}

// Apply is the compiled application of a change relation to a target
// table: the SQL statements that write (append modes) or merge the
// relation's rows. Commit of a sink transaction runs it over StageTable;
// pushdown runs it over a subquery of the change log.
type Apply struct {
	table string
	st    *plan.SinkStage
	full  bool // the relation carries only full rows (ApplyOptions.FullRows)
	stmts []stmt
	merge *mergeInto // SQL MERGE jobs: what the cardinality error needs
}

// Steps returns the statements in execution order, for `sluice plan`.
func (a *Apply) Steps() []plan.Step {
	out := make([]plan.Step, 0, len(a.stmts))
	for i, s := range a.stmts {
		if s.merge && (i == 0 || !a.stmts[i-1].merge) {
			out = append(out, plan.Step{Where: "sink", What: "the WHEN clauses run under a savepoint (undone together on a UNIQUE failure)", SQL: "SAVEPOINT " + applySavepoint})
		}
		out = append(out, s.step)
		out = append(out, s.fallback...)
		if s.merge && (i == len(a.stmts)-1 || !a.stmts[i+1].merge) {
			out = append(out, plan.Step{Where: "sink", What: "keep the WHEN clauses' writes", SQL: "RELEASE " + applySavepoint})
		}
	}
	return out
}

// CompileApply compiles the statements that apply the rows of relation to
// the target of st. relation is a table name or a parenthesized SELECT whose
// columns follow the change-relation contract of the package doc, with the
// projected columns named and encoded as st.Schema says. target is the
// target table's schema as Target returns it; a zero Schema means the
// target will be created from st.Schema (so it has the same types).
//
// For append-like modes the result is one INSERT … SELECT (overwrite's
// DELETE and table creation are done by the sink transaction, not here).
// For mode merge it collapses the relation to the net change per key into a
// TEMP table, deletes, then upserts. For a SQL MERGE job (st.Merge set) it
// evaluates the WHEN clauses into a TEMP table, checks that no target row is
// touched twice, then runs one statement per clause.
func CompileApply(st *plan.SinkStage, target cdc.Schema, relation string) (*Apply, error) {
	return CompileApplyWith(st, target, relation, ApplyOptions{})
}

// ApplyOptions tell CompileApplyWith what the caller knows of the
// relation.
type ApplyOptions struct {
	// FullRows: every row of the relation carries every column (__present
	// is NULL), as a table stream of a SQL database produces. A merge then
	// collapses each key to its last change with one window pass and skips
	// the partial-row statements; and when the sink stage also says
	// OneChangePerKey (plan.SinkStage), it skips the collapse: the relation
	// without its UPDATE_BEFORE rows is already the net change per key, and
	// the delete and upsert read it directly.
	FullRows bool
}

// CompileApplyWith is CompileApply with options.
func CompileApplyWith(st *plan.SinkStage, target cdc.Schema, relation string, opt ApplyOptions) (*Apply, error) {
	if len(target.Columns) == 0 {
		target = cdc.Schema{Columns: st.Schema.Columns, Key: st.Keys}
	}
	if st.Merge != nil {
		return compileMergeInto(st, target, relation)
	}
	if err := checkReserved(st.Schema); err != nil {
		return nil, err
	}
	tt, err := checkTarget(st.Table, target, st.Schema)
	if err != nil {
		return nil, err
	}
	rel := make([]cdc.Type, len(st.Schema.Columns))
	for i, c := range st.Schema.Columns {
		rel[i] = c.Type
	}
	a, err := compileApply(st, rel, tt, relation, opt.FullRows)
	return a, err
}

// compileApply compiles append or merge statements for a relation whose
// projected columns have types rel, into target columns of types tt.
func compileApply(st *plan.SinkStage, rel, tt []cdc.Type, relation string, full bool) (*Apply, error) {
	a := &Apply{table: st.Table, st: st, full: full}
	if !st.Mode.Keyed() {
		a.compileAppend(rel, tt, relation)
		return a, nil
	}
	if len(st.Keys) == 0 {
		return nil, fmt.Errorf("sqlite sink: mode %s into %q needs key columns", st.Mode, st.Table)
	}
	for _, k := range st.Keys {
		if st.Schema.Index(k) < 0 {
			return nil, fmt.Errorf("sqlite sink: %s key %q of %q is not a projected column (projected: %s)", st.Mode, k, st.Table, strings.Join(st.Schema.Names(), ", "))
		}
	}
	if st.Mode == plan.ModeHistory {
		a.compileHistory(rel, tt, relation)
		return a, nil
	}
	a.compileMerge(rel, tt, relation)
	return a, nil
}

// checkReserved rejects projected columns whose names collide with the
// change-relation metadata columns.
func checkReserved(s cdc.Schema) error {
	for _, c := range s.Columns {
		switch strings.ToLower(c.Name) {
		case colOp, colVer, colOrd, colPresent, colTS:
			return fmt.Errorf("sqlite sink: projected column %q collides with sluice's staging column of that name; rename it with AS", c.Name)
		}
	}
	return nil
}

// fitExpr wraps x (a value of type from) so that it is stored as type to,
// or returns x when no conversion is needed. keyText is a SQL expression
// naming the row's key for errors.
func fitExpr(x string, from, to cdc.Type, column, keyText string) string {
	if from == to || (from.Kind == to.Kind && !(to.Kind == cdc.KindDecimal || to.Kind.IsInteger())) {
		return x
	}
	return fmt.Sprintf("%s(%s, %s, %s, %s, %s)", fitFunc, x, sqlitex.QuoteString(from.String()), sqlitex.QuoteString(to.String()), sqlitex.QuoteString(column), keyText)
}

// keyTextSQL renders a SQL expression producing "k1=v1, k2=v2" for the key
// columns of s, qualified by alias ("" for none); "NULL" without keys.
func keyTextSQL(s cdc.Schema, keys []string, alias string) string {
	if len(keys) == 0 {
		return "NULL"
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		pre := ""
		if i > 0 {
			pre = ", "
		}
		parts[i] = fmt.Sprintf("%s || quote(%s)", sqlitex.QuoteString(pre+k+"="), qual(alias, k))
	}
	return strings.Join(parts, " || ")
}

func qual(alias, col string) string {
	if alias == "" {
		return sqlitex.Quote(col)
	}
	return alias + "." + sqlitex.Quote(col)
}

// carried renders "column i (0-based) is carried by the row" over alias.
func carried(alias string, i int) string {
	return fmt.Sprintf("(%s.%s IS NULL OR substr(%s.%s, %d, 1) = '1')", alias, colPresent, alias, colPresent, i+1)
}

func (a *Apply) add(kind stmtKind, what, sql string) {
	a.stmts = append(a.stmts, stmt{kind: kind, step: plan.Step{Where: "sink", What: what, SQL: sql}})
}

func (a *Apply) compileAppend(rel, tt []cdc.Type, relation string) {
	s := a.st.Schema
	cols := make([]string, len(s.Columns))
	vals := make([]string, len(s.Columns))
	kt := keyTextSQL(s, a.st.Keys, "__r")
	for i, c := range s.Columns {
		cols[i] = sqlitex.Quote(c.Name)
		v := fmt.Sprintf("CASE WHEN %s THEN __r.%s END", carried("__r", i), sqlitex.Quote(c.Name))
		vals[i] = fitExpr(v, rel[i], tt[i], c.Name, kt)
	}
	a.add(kindCount, "count the rows by change type",
		fmt.Sprintf("SELECT %s, count(*) FROM %s AS __r GROUP BY %s", colOp, relation, colOp))
	a.add(kindExec, fmt.Sprintf("insert the rows into %s", a.table),
		fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s AS __r ORDER BY __r.%s, __r.%s",
			sqlitex.Quote(a.table), strings.Join(cols, ", "), strings.Join(vals, ", "), relation, colVer, colOrd))
}

// compileMerge compiles the implied merge of mode merge: collapse to the net
// change per key (last change in (__ver, __ord) order, UPDATE_BEFORE
// dropped, partial rows folded), delete, update partial rows, insert new
// partial rows, upsert full rows.
func (a *Apply) compileMerge(rel, tt []cdc.Type, relation string) {
	s := a.st.Schema
	keys := make([]string, len(a.st.Keys))
	isKey := make([]bool, len(s.Columns))
	for i, k := range a.st.Keys {
		j := s.Index(k)
		keys[i] = sqlitex.Quote(s.Columns[j].Name)
		isKey[j] = true
	}
	kl := strings.Join(keys, ", ")
	order := fmt.Sprintf("ORDER BY %s, %s", colVer, changerel.LastOrder(false))
	kt := keyTextSQL(s, a.st.Keys, "")
	if a.full && a.st.OneChangePerKey {
		a.compileMergeOne(rel, tt, relation, kl, kt)
		return
	}
	if a.full {
		a.compileMergeFull(rel, tt, relation, kl, kt, isKey)
		return
	}

	// Layer 1: sequence and segment number ("grp" counts the rows that
	// reset a key's columns: DELETEs and full rows) per key.
	l1 := fmt.Sprintf("SELECT *, row_number() OVER (PARTITION BY %[1]s %[2]s) AS __s_seq, "+
		"sum(%[3]s = 'DELETE' OR %[4]s IS NULL) OVER (PARTITION BY %[1]s %[2]s ROWS UNBOUNDED PRECEDING) AS __s_grp "+
		"FROM %[5]s AS __r WHERE %[3]s <> 'UPDATE_BEFORE'", kl, order, colOp, colPresent, relation)
	// Layer 2: the last segment of each key.
	l2 := fmt.Sprintf("SELECT *, max(__s_grp) OVER (PARTITION BY %s) AS __s_maxgrp FROM (%s)", kl, l1)
	// Layer 3: within it, the last row and the last row carrying each column.
	var l3 strings.Builder
	fmt.Fprintf(&l3, "SELECT *, max(__s_seq) OVER __s_k AS __s_last")
	for i := range s.Columns {
		if isKey[i] {
			continue
		}
		fmt.Fprintf(&l3, ", max(CASE WHEN %s = 'DELETE' OR %s THEN __s_seq END) OVER __s_k AS __s_lc%d",
			colOp, carried("__l", i), i)
	}
	fmt.Fprintf(&l3, " FROM (%s) AS __l WHERE __s_grp = __s_maxgrp WINDOW __s_k AS (PARTITION BY %s)", l2, kl)

	// Outer: one row per key, values fitted to the target types.
	var out strings.Builder
	out.WriteString("SELECT ")
	for i, c := range s.Columns {
		if isKey[i] {
			fmt.Fprintf(&out, "%s AS %s, ", fitExpr(sqlitex.Quote(c.Name), rel[i], tt[i], c.Name, kt), sqlitex.Quote(c.Name))
		}
	}
	fmt.Fprintf(&out, "max(CASE WHEN __s_seq = __s_last THEN %[1]s END) AS %[1]s, max(%[1]s = 'DELETE') AS __reset", colOp)
	if a.st.NeedsCommitTime() {
		fmt.Fprintf(&out, ", max(CASE WHEN __s_seq = __s_last THEN %[1]s END) AS %[1]s", colTS)
	}
	var mask, full []string
	for i, c := range s.Columns {
		if isKey[i] {
			mask = append(mask, "'1'")
			continue
		}
		v := fmt.Sprintf("max(CASE WHEN __s_seq = __s_lc%d AND %s <> 'DELETE' THEN %s END)", i, colOp, sqlitex.Quote(c.Name))
		fmt.Fprintf(&out, ", %s AS %s", fitExpr(v, rel[i], tt[i], c.Name, kt), sqlitex.Quote(c.Name))
		mask = append(mask, fmt.Sprintf("CASE WHEN max(__s_lc%d) IS NULL THEN '0' ELSE '1' END", i))
		full = append(full, fmt.Sprintf("max(__s_lc%d) IS NOT NULL", i))
	}
	present := "NULL"
	if len(full) > 0 {
		present = fmt.Sprintf("CASE WHEN %s THEN NULL ELSE %s END", strings.Join(full, " AND "), strings.Join(mask, " || "))
	}
	fmt.Fprintf(&out, ", %s AS %s FROM (%s) GROUP BY %s", present, colPresent, l3.String(), kl)

	a.applyNet(out.String(), "collapse to the net change per key (last in commit order; UPDATE_BEFORE ignored)", kl, isKey, true)
}

// compileMergeFull collapses a relation of full rows: each key takes its
// last change in commit order (one window pass); a full row replaces every
// column, so nothing needs the partial-row statements.
func (a *Apply) compileMergeFull(rel, tt []cdc.Type, relation, kl, kt string, isKey []bool) {
	s := a.st.Schema
	var out strings.Builder
	out.WriteString("SELECT ")
	for i, c := range s.Columns {
		fmt.Fprintf(&out, "%s AS %s, ", fitExpr(sqlitex.Quote(c.Name), rel[i], tt[i], c.Name, kt), sqlitex.Quote(c.Name))
	}
	if a.st.NeedsCommitTime() {
		fmt.Fprintf(&out, "%s, ", colTS)
	}
	fmt.Fprintf(&out, "%[1]s, 0 AS __reset, NULL AS %[2]s FROM (SELECT *, row_number() OVER (PARTITION BY %[3]s ORDER BY %[4]s DESC, %[5]s) AS __s_rn "+
		"FROM %[6]s AS __r WHERE %[1]s <> 'UPDATE_BEFORE') WHERE __s_rn = 1", colOp, colPresent, kl, colVer, changerel.LastOrder(true), relation)
	a.applyNet(out.String(), "keep the last change per key in commit order (UPDATE_BEFORE ignored)", kl, isKey, false)
}

// compileMergeOne applies a relation of full rows holding at most one
// change per key besides UPDATE_BEFORE (plan.SinkStage.OneChangePerKey):
// the net change per key is the relation without its UPDATE_BEFORE rows,
// read in place by the count, the delete and the upsert — no window, no
// TEMP table.
func (a *Apply) compileMergeOne(rel, tt []cdc.Type, relation, kl, kt string) {
	s := a.st.Schema
	var out strings.Builder
	out.WriteString("(SELECT ")
	for i, c := range s.Columns {
		fmt.Fprintf(&out, "%s AS %s, ", fitExpr("__r."+sqlitex.Quote(c.Name), rel[i], tt[i], c.Name, kt), sqlitex.Quote(c.Name))
	}
	if a.st.NeedsCommitTime() {
		fmt.Fprintf(&out, "__r.%[1]s AS %[1]s, ", colTS)
	}
	fmt.Fprintf(&out, "__r.%[1]s AS %[1]s, 0 AS __reset, NULL AS %[2]s FROM %[3]s AS __r WHERE __r.%[1]s <> 'UPDATE_BEFORE')", colOp, colPresent, relation)
	a.applyNetIn(out.String(), kl, a.isKeys(), false)
}

func (a *Apply) isKeys() []bool {
	isKey := make([]bool, len(a.st.Schema.Columns))
	for _, k := range a.st.Keys {
		isKey[a.st.Schema.Index(k)] = true
	}
	return isKey
}

// applyNet adds the statements that materialize the net change per key
// (query) and apply it: delete, then partial rows (when partial), then
// upsert full rows.
func (a *Apply) applyNet(query, what, kl string, isKey []bool, partial bool) {
	net := "temp." + netTable
	a.add(kindExec, "drop a leftover net-change table", "DROP TABLE IF EXISTS "+net)
	a.add(kindExec, what, fmt.Sprintf("CREATE TEMP TABLE %s AS %s", netTable, query))
	a.applyNetIn(net, kl, isKey, partial)
	a.add(kindExec, "drop the net-change table", "DROP TABLE "+net)
}

// applyNetIn adds the statements that apply the net change per key held in
// net (a table or a parenthesized SELECT with the columns of applyNet's
// query): count, delete, then partial rows (when partial), then upsert
// full rows.
func (a *Apply) applyNetIn(net, kl string, isKey []bool, partial bool) {
	s := a.st.Schema
	a.add(kindCount, "count the net changes by change type",
		fmt.Sprintf("SELECT %s, count(*) FROM %s GROUP BY %s", colOp, net, colOp))

	t := sqlitex.Quote(a.table)
	a.addDeletes(t, kl, net, partial)

	var cols, sets, psets, pvals, on []string
	for i, c := range s.Columns {
		q := sqlitex.Quote(c.Name)
		cols = append(cols, q)
		if isKey[i] {
			pvals = append(pvals, q)
			on = append(on, fmt.Sprintf("__t.%s = __n.%s", q, q))
			continue
		}
		sets = append(sets, fmt.Sprintf("%s = excluded.%s", q, q))
		psets = append(psets, fmt.Sprintf("%s = CASE WHEN substr(__n.%s, %d, 1) = '1' THEN __n.%s ELSE __t.%s END", q, colPresent, i+1, q, q))
		pvals = append(pvals, fmt.Sprintf("CASE WHEN substr(%s, %d, 1) = '1' THEN %s END", colPresent, i+1, q))
	}
	if a.st.OnDelete == plan.OnDeleteSoft {
		// an INSERT or update of a soft-deleted key brings it back
		sets = append(sets, sqlitex.Quote(plan.ColDeletedAt)+" = NULL")
		psets = append(psets, sqlitex.Quote(plan.ColDeletedAt)+" = NULL")
	}
	cl := strings.Join(cols, ", ")
	if partial && len(psets) > 0 {
		a.add(kindExec, "update existing keys from partial rows (only the carried columns)",
			fmt.Sprintf("UPDATE %s AS __t SET %s FROM %s AS __n WHERE __n.%s <> 'DELETE' AND __n.%s IS NOT NULL AND %s",
				t, strings.Join(psets, ", "), net, colOp, colPresent, strings.Join(on, " AND ")))
		a.add(kindExec, "insert new keys from partial rows (columns not carried are NULL)",
			fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s <> 'DELETE' AND %s IS NOT NULL ON CONFLICT (%s) DO NOTHING",
				t, cl, strings.Join(pvals, ", "), net, colOp, colPresent, kl))
	}
	conflict := "DO NOTHING"
	if len(sets) > 0 {
		conflict = "DO UPDATE SET " + strings.Join(sets, ", ")
	}
	a.add(kindExec, "upsert full rows (INSERT / UPDATE_AFTER)",
		fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s <> 'DELETE' AND %s IS NULL ON CONFLICT (%s) %s",
			t, cl, cl, net, colOp, colPresent, kl, conflict))
	a.stmts[len(a.stmts)-1].fallback = reorderSteps(t, net, kl, cl)
}

// Exec runs the statements on q (a connection inside the caller's write
// transaction) and returns the rows written by change type: for append
// modes every row of the relation by its __op; for merge the net change per
// key by the op of the key's last change; for SQL MERGE the source rows
// that took an action, by their __op.
func (a *Apply) Exec(ctx context.Context, q Querier) (map[cdc.Op]int64, error) {
	written := map[cdc.Op]int64{}
	for i := 0; i < len(a.stmts); i++ {
		s := a.stmts[i]
		if s.merge {
			j := i
			for j < len(a.stmts) && a.stmts[j].merge {
				j++
			}
			if err := a.execMerge(ctx, q, a.stmts[i:j]); err != nil {
				return nil, err
			}
			i = j - 1
			continue
		}
		switch s.kind {
		case kindExec:
			if s.fallback != nil {
				if err := a.execReordering(ctx, q, s); err != nil {
					return nil, err
				}
				continue
			}
			if _, err := q.ExecContext(ctx, s.step.SQL); err != nil {
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
	if ve := fitError(err); ve != nil {
		return fmt.Errorf("sqlite sink: write %q: %w", a.table, ve)
	}
	what := s.What
	if what == "" {
		what = firstWords(s.SQL)
	}
	return fmt.Errorf("sqlite sink: %s: %w", what, err)
}

func firstWords(sql string) string {
	f := strings.Fields(sql)
	if len(f) > 4 {
		f = f[:4]
	}
	return strings.Join(f, " ")
}

// countOps runs a count query (see changerel.CountOps) and adds its rows to into.
func countOps(ctx context.Context, q Querier, query string, into map[cdc.Op]int64) error {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	return changerel.CountOps(rows, into)
}
