package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
)

// mergeTable is the TEMP table holding each (source row, matched target
// row) pair of a SQL MERGE with the WHEN clause it takes.
const mergeTable = "sluice_merge"

// Names of the computed columns of mergeTable.
const (
	colTrow   = "__trow"   // rowid of the matched target row, NULL when not matched
	colAction = "__action" // 1-based index of the WHEN clause taken, NULL for none
)

// mergeInto is what the cardinality check of a SQL MERGE needs.
type mergeInto struct {
	table string
	keys  []cdc.Column // the source columns of the ON equalities
	names []string     // the target columns they match, for the message
	// targetCols and sourceCols are the target's and the source's column
	// names, for the message of a UNIQUE failure (mergeunique.go).
	targetCols, sourceCols []string
}

// compileMergeInto compiles a SQL MERGE INTO (st.Merge) over relation.
//
// SQL semantics: a source row is matched when a target row satisfies the
// ON equalities, evaluated against the target as it was before the merge;
// each (source row, target row) pair, or unmatched source row, takes the
// first WHEN clause whose matched-ness and AND condition hold. SQLite has
// no MERGE, so the statements are:
//
//  1. CREATE TEMP TABLE sluice_merge AS the relation LEFT JOIN the target
//     on the ON equalities, with __trow (the target rowid) and __action
//     (a CASE over the clauses);
//  2. a cardinality query: a target row taken by more than one source row,
//     or a key inserted by more than one source row, is an error naming
//     the key (never a silent pick);
//  3. one UPDATE … FROM / DELETE per MATCHED clause (by rowid), then one
//     INSERT … SELECT per NOT MATCHED clause.
//
// Columns a partial source row does not carry read as NULL. The target must
// be a rowid table (not WITHOUT ROWID).
func compileMergeInto(st *plan.SinkStage, target cdc.Schema, relation string) (*Apply, error) {
	m := st.Merge
	if err := checkReserved(st.Schema); err != nil {
		return nil, err
	}
	for _, c := range st.Schema.Columns {
		if n := strings.ToLower(c.Name); n == colTrow || n == colAction {
			return nil, fmt.Errorf("sqlite sink: MERGE source column %q collides with sluice's column of that name; rename it with AS", c.Name)
		}
	}
	if len(m.On) == 0 {
		return nil, fmt.Errorf("sqlite sink: MERGE INTO %q: the ON condition pairs no columns", st.Table)
	}
	mi := &mergeInto{table: st.Table, sourceCols: st.Schema.Names()}
	var on []string
	for _, kp := range m.On {
		tc, ok := target.Column(kp.Target)
		if !ok {
			return nil, fmt.Errorf("sqlite sink: MERGE INTO %q: ON names target column %q, which the table does not have (it has %s)", st.Table, kp.Target, strings.Join(target.Names(), ", "))
		}
		sc, ok := st.Schema.Column(kp.Source)
		if !ok {
			return nil, fmt.Errorf("sqlite sink: MERGE INTO %q: ON names source column %q, which the source does not have (it has %s)", st.Table, kp.Source, strings.Join(st.Schema.Names(), ", "))
		}
		if !compatible(sc.Type, tc.Type) {
			return nil, fmt.Errorf("sqlite sink: MERGE INTO %q: ON compares target %q (%s) with source %q (%s)", st.Table, tc.Name, tc.Type, sc.Name, sc.Type)
		}
		mi.keys = append(mi.keys, sc)
		mi.names = append(mi.names, tc.Name)
		on = append(on, fmt.Sprintf("__t.%s = %s", sqlitex.Quote(tc.Name), fitExpr("__s."+sqlitex.Quote(sc.Name), sc.Type, tc.Type, tc.Name, "NULL")))
	}
	keyNames := make([]string, len(mi.keys))
	for i, k := range mi.keys {
		keyNames[i] = k.Name
	}

	b := &mergeBinder{st: st, target: target}
	a := &Apply{table: st.Table, st: st, merge: mi}
	// The CASE that picks each pair's clause.
	var cases []string
	for i, wc := range m.Clauses {
		match := "__t.rowid IS NOT NULL"
		if !wc.Matched {
			match = "__t.rowid IS NULL"
		}
		if wc.Cond != nil {
			cond, _, err := b.render(wc.Cond, wc.Matched, "__t", "__s")
			if err != nil {
				return nil, err
			}
			match += " AND (" + cond + ")"
		}
		cases = append(cases, fmt.Sprintf("WHEN %s THEN %d", match, i+1))
	}
	mt := "temp." + mergeTable
	a.add(kindExec, "drop a leftover MERGE table", "DROP TABLE IF EXISTS "+mt)
	a.add(kindExec, "evaluate ON (against the target before the merge) and pick each source row's first applicable WHEN clause",
		fmt.Sprintf("CREATE TEMP TABLE %s AS SELECT __s.*, __t.rowid AS %s, CASE %s END AS %s FROM %s AS __s LEFT JOIN %s AS __t ON %s",
			mergeTable, colTrow, strings.Join(cases, " "), colAction, relation, sqlitex.Quote(st.Table), strings.Join(on, " AND ")))

	keySel := make([]string, len(mi.keys))
	notNull := make([]string, len(mi.keys))
	for i, k := range mi.keys {
		keySel[i] = "min(" + sqlitex.Quote(k.Name) + ")"
		notNull[i] = sqlitex.Quote(k.Name) + " IS NOT NULL"
	}
	ordered := fmt.Sprintf("(SELECT * FROM %s WHERE %s IS NOT NULL ORDER BY %s, %s)", mt, colAction, colVer, colOrd)
	a.add(kindCheck, "check that no target row is touched by more than one source row",
		fmt.Sprintf("SELECT count(*), group_concat(%[1]s, ', '), %[2]s FROM %[3]s WHERE %[4]s IS NOT NULL GROUP BY %[4]s HAVING count(*) > 1 "+
			"UNION ALL SELECT count(*), group_concat(%[1]s, ', '), %[2]s FROM %[3]s WHERE %[4]s IS NULL AND %[5]s GROUP BY %[6]s HAVING count(*) > 1 LIMIT 1",
			colOp, strings.Join(keySel, ", "), ordered, colTrow, strings.Join(notNull, " AND "), quoteList(keyNames)))
	a.add(kindCount, "count the source rows that take a clause, by change type",
		fmt.Sprintf("SELECT %s, count(*) FROM %s WHERE %s IS NOT NULL GROUP BY %s", colOp, mt, colAction, colOp))

	// Matched clauses first (they address target rows by rowid, which a
	// later INSERT might reuse), then the NOT MATCHED inserts.
	kt := keyTextSQL(st.Schema, keyNames, "__m")
	clauses, err := b.clauseSteps(kt)
	if err != nil {
		return nil, err
	}
	for _, c := range clauses {
		a.stmts = append(a.stmts, stmt{kind: kindExec, merge: true, step: c(sqlitex.Quote(st.Table))})
	}
	if len(clauses) > 0 {
		a.stmts[len(a.stmts)-1].fallback = mi.windowSteps(target, clauses)
	}
	a.add(kindExec, "drop the MERGE table", "DROP TABLE "+mt)
	return a, nil
}

// clauseSteps returns, for each WHEN clause in the order they run (the
// MATCHED ones first), its statement over the target t (a quoted table
// name); kt names the row's key in a value's conversion error.
func (b *mergeBinder) clauseSteps(kt string) ([]func(t string) plan.Step, error) {
	st, m, mt := b.st, b.st.Merge, "temp."+mergeTable
	var out []func(t string) plan.Step
	for pass := 0; pass < 2; pass++ {
		for i, wc := range m.Clauses {
			if wc.Matched != (pass == 0) {
				continue
			}
			n := i + 1
			if wc.Matched && wc.Action == plan.ActionInsert || !wc.Matched && wc.Action != plan.ActionInsert {
				return nil, fmt.Errorf("sqlite sink: MERGE INTO %q: WHEN %s clause %d cannot %s", st.Table, matchedWord(wc.Matched), n, wc.Action)
			}
			switch wc.Action {
			case plan.ActionDelete:
				out = append(out, func(t string) plan.Step {
					return plan.Step{Where: "sink", What: fmt.Sprintf("WHEN clause %d: DELETE", n),
						SQL: fmt.Sprintf("DELETE FROM %s WHERE rowid IN (SELECT %s FROM %s WHERE %s = %d)", t, colTrow, mt, colAction, n)}
				})
			case plan.ActionUpdate:
				sets, err := b.assignments(wc, kt)
				if err != nil {
					return nil, err
				}
				out = append(out, func(t string) plan.Step {
					return plan.Step{Where: "sink", What: fmt.Sprintf("WHEN clause %d: UPDATE", n),
						SQL: fmt.Sprintf("UPDATE %s AS __t SET %s FROM %s AS __m WHERE __m.%s = %d AND __t.rowid = __m.%s", t, strings.Join(sets, ", "), mt, colAction, n, colTrow)}
				})
			case plan.ActionInsert:
				cols, vals, err := b.inserts(wc, kt)
				if err != nil {
					return nil, err
				}
				out = append(out, func(t string) plan.Step {
					return plan.Step{Where: "sink", What: fmt.Sprintf("WHEN clause %d: INSERT", n),
						SQL: fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s AS __m WHERE __m.%s = %d ORDER BY __m.%s, __m.%s", t, cols, vals, mt, colAction, n, colVer, colOrd)}
				})
			default:
				return nil, fmt.Errorf("sqlite sink: MERGE INTO %q: WHEN clause %d: unknown action %q", st.Table, n, wc.Action)
			}
		}
	}
	return out, nil
}

func matchedWord(m bool) string {
	if m {
		return "MATCHED"
	}
	return "NOT MATCHED"
}

// mergeBinder binds and renders the expressions of MERGE clauses.
type mergeBinder struct {
	st     *plan.SinkStage
	target cdc.Schema
}

// render binds e (in MATCHED clauses over the target and source aliases, in
// NOT MATCHED clauses over the source alias only, as SQL allows) and renders
// it for SQLite with the target's columns qualified by ta and the source's
// by sa.
func (b *mergeBinder) render(e *plan.Expr, matched bool, ta, sa string) (string, cdc.Type, error) {
	m := b.st.Merge
	pe, err := expr.Parse(e.Text, e.Pos)
	if err != nil {
		return "", cdc.Type{}, err
	}
	src := expr.Relation{Alias: m.SourceAlias, Schema: b.st.Schema}
	scope := expr.Scope{src}
	if matched {
		scope = expr.Scope{{Alias: m.TargetAlias, Schema: b.target}, src}
	}
	bound, err := pe.Bind(scope)
	if err != nil {
		return "", cdc.Type{}, err
	}
	sql, err := bound.SQL(expr.SQLite, func(rel, idx int) string {
		if matched && rel == 0 {
			return ta + "." + sqlitex.Quote(b.target.Columns[idx].Name)
		}
		return sa + "." + sqlitex.Quote(b.st.Schema.Columns[idx].Name)
	})
	if err != nil {
		return "", cdc.Type{}, err
	}
	return sql, bound.Type(), nil
}

// value renders an assigned or inserted value for target column name,
// converted to the column's type (sluice_sink_fit) when it differs.
func (b *mergeBinder) value(e *plan.Expr, matched bool, column, keyText string) (string, string, error) {
	tc, ok := b.target.Column(column)
	if !ok {
		return "", "", fmt.Errorf("sqlite sink: %s: MERGE INTO %q: the table has no column %q (it has %s)", e.Pos, b.st.Table, column, strings.Join(b.target.Names(), ", "))
	}
	sql, typ, err := b.render(e, matched, "__t", "__m")
	if err != nil {
		return "", "", err
	}
	if typ.Kind != cdc.KindInvalid && !compatible(typ, tc.Type) {
		return "", "", fmt.Errorf("sqlite sink: %s: MERGE INTO %q: column %q is %s, which cannot hold %s (%s)", e.Pos, b.st.Table, tc.Name, tc.Type, e.Text, typ)
	}
	if typ.Kind != cdc.KindInvalid {
		sql = fitExpr(sql, typ, tc.Type, tc.Name, keyText)
	}
	return sqlitex.Quote(tc.Name), sql, nil
}

func (b *mergeBinder) assignments(wc plan.WhenClause, keyText string) ([]string, error) {
	if len(wc.Set) == 0 {
		return nil, fmt.Errorf("sqlite sink: %s: MERGE INTO %q: UPDATE without SET", wc.Pos, b.st.Table)
	}
	var sets []string
	for _, as := range wc.Set {
		col, val, err := b.value(&as.Value, true, stripQualifier(as.Column, b.st.Merge.TargetAlias), keyText)
		if err != nil {
			return nil, err
		}
		sets = append(sets, col+" = "+val)
	}
	return sets, nil
}

func (b *mergeBinder) inserts(wc plan.WhenClause, keyText string) (string, string, error) {
	cols := wc.InsertColumns
	if len(cols) == 0 {
		cols = b.target.Names()
	}
	if len(cols) != len(wc.InsertValues) {
		return "", "", fmt.Errorf("sqlite sink: %s: MERGE INTO %q: INSERT lists %d columns and %d values", wc.Pos, b.st.Table, len(cols), len(wc.InsertValues))
	}
	var cs, vs []string
	for i, c := range cols {
		col, val, err := b.value(&wc.InsertValues[i], false, stripQualifier(c, b.st.Merge.TargetAlias), keyText)
		if err != nil {
			return "", "", err
		}
		if slices.Contains(cs, col) {
			return "", "", fmt.Errorf("sqlite sink: %s: MERGE INTO %q: INSERT names column %s twice", wc.Pos, b.st.Table, col)
		}
		cs, vs = append(cs, col), append(vs, val)
	}
	return strings.Join(cs, ", "), strings.Join(vs, ", "), nil
}

// stripQualifier turns "t.name" (the target alias) into "name".
func stripQualifier(col, alias string) string {
	if alias != "" && len(col) > len(alias)+1 && strings.EqualFold(col[:len(alias)+1], alias+".") {
		return col[len(alias)+1:]
	}
	return col
}

// check runs the cardinality query; a row means a target row (or a new key)
// is touched by several source rows.
func (mi *mergeInto) check(ctx context.Context, q Querier, query string) error {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("sqlite sink: MERGE INTO %q: cardinality check: %w", mi.table, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return rows.Err()
	}
	vals := make([]any, 2+len(mi.keys))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return err
	}
	parts := make([]string, len(mi.keys))
	for i, k := range mi.keys {
		v, err := sqlitex.Decode(vals[2+i], k.Type)
		if err != nil {
			v = vals[2+i]
		}
		parts[i] = mi.names[i] + "=" + cdc.FormatValue(v, k.Type)
	}
	return &cardinalityError{fmt.Sprintf("sqlite sink: MERGE INTO %s: target key (%s) is touched by %v source rows (%s); a MERGE source may touch each target row at most once — filter the stream, e.g. WHERE `__change_type` IN ('INSERT', 'UPDATE_AFTER'), or add a condition to the WHEN clauses",
		mi.table, strings.Join(parts, ", "), vals[0], asString(vals[1]))}
}

type cardinalityError struct{ msg string }

func (e *cardinalityError) Error() string        { return e.msg }
func (e *cardinalityError) Is(target error) bool { return target == ErrMergeCardinality }
