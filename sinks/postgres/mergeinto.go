package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/plan"
)

// mergeInto is what the cardinality error of a SQL MERGE needs.
type mergeInto struct {
	table string
	keys  []cdc.Column // the source columns of the ON equalities
	names []string     // the target columns they match, for the message
	// relation, sa and on are the MERGE's source, its (quoted) alias and
	// its ON condition: what the unique-violation fallback and its error
	// need (mergeunique.go).
	relation, sa, on       string
	targetCols, sourceCols []string
}

// compileMergeInto compiles a SQL MERGE INTO job (st.Merge) over relation
// into:
//
//  1. a cardinality query: the source rows that take a clause, grouped by
//     the ON source columns; a key with more than one row is an error
//     naming the key (PostgreSQL's own MERGE would fail with "cannot
//     affect row a second time", or insert a key twice);
//  2. a count of those rows by change type;
//  3. one native MERGE with the job's clauses, expressions bound in
//     expr.Scope{{target alias, target schema}, {source alias, projected
//     schema}} and rendered with expr's PostgreSQL dialect.
//
// MERGE needs PostgreSQL 15; on 13/14 a SQL MERGE job is refused.
func compileMergeInto(st *plan.SinkStage, target cdc.Schema, relation string, opt ApplyOptions) (*Apply, error) {
	m := st.Merge
	if opt.ServerVersion != 0 && opt.ServerVersion < MinMergeVersion {
		return nil, fmt.Errorf("postgres sink: %w: MERGE INTO %s needs PostgreSQL 15 or later (server_version_num %d); use a YAML job with mode merge, which falls back to INSERT … ON CONFLICT", ErrMergeClause, Quote(st.Table), opt.ServerVersion)
	}
	if len(m.On) == 0 {
		return nil, fmt.Errorf("postgres sink: %w: MERGE INTO %s: the ON condition pairs no columns", ErrMergeClause, Quote(st.Table))
	}
	ta, sa := m.TargetAlias, m.SourceAlias
	if ta == "" {
		ta = st.Table
	}
	if sa == "" {
		sa = "__s"
	}
	tq, sq := Quote(ta), Quote(sa)
	mi := &mergeInto{table: st.Table}
	var on, srcKeys []string
	for _, kp := range m.On {
		tc, ok := target.Column(kp.Target)
		if !ok {
			return nil, fmt.Errorf("postgres sink: %w: MERGE INTO %s: ON names target column %q, which the table does not have (it has %s)", ErrMergeClause, Quote(st.Table), kp.Target, strings.Join(target.Names(), ", "))
		}
		sc, ok := st.Schema.Column(kp.Source)
		if !ok {
			return nil, fmt.Errorf("postgres sink: %w: MERGE INTO %s: ON names source column %q, which the source does not have (it has %s)", ErrMergeClause, Quote(st.Table), kp.Source, strings.Join(st.Schema.Names(), ", "))
		}
		if !Compatible(sc.Type, tc.Type) {
			return nil, fmt.Errorf("postgres sink: %w: MERGE INTO %s: ON compares target %q (%s) with source %q (%s)", ErrMergeClause, Quote(st.Table), tc.Name, tc.Type, sc.Name, sc.Type)
		}
		mi.keys = append(mi.keys, sc)
		mi.names = append(mi.names, tc.Name)
		on = append(on, fmt.Sprintf("%s.%s = %s.%s", tq, Quote(tc.Name), sq, Quote(sc.Name)))
		srcKeys = append(srcKeys, sq+"."+Quote(sc.Name))
	}
	b := &mergeBinder{st: st, target: target, ta: tq, sa: sq}
	var clauses, matched, unmatched []string
	for i, wc := range m.Clauses {
		n := i + 1
		cond := "true"
		if wc.Cond != nil {
			c, _, err := b.render(wc.Cond, wc.Matched)
			if err != nil {
				return nil, err
			}
			cond = "(" + c + ")"
		}
		head := "WHEN NOT MATCHED"
		if wc.Matched {
			head = "WHEN MATCHED"
			matched = append(matched, cond)
		} else {
			unmatched = append(unmatched, cond)
		}
		if wc.Cond != nil {
			head += " AND " + cond
		}
		if wc.Matched && wc.Action == plan.ActionInsert || !wc.Matched && wc.Action != plan.ActionInsert {
			return nil, fmt.Errorf("postgres sink: %s: %w: MERGE INTO %s: %s clause %d cannot %s", wc.Pos, ErrMergeClause, Quote(st.Table), head, n, wc.Action)
		}
		switch wc.Action {
		case plan.ActionDelete:
			clauses = append(clauses, head+" THEN DELETE")
		case plan.ActionUpdate:
			sets, err := b.assignments(wc)
			if err != nil {
				return nil, err
			}
			clauses = append(clauses, head+" THEN UPDATE SET "+strings.Join(sets, ", "))
		case plan.ActionInsert:
			cols, vals, err := b.inserts(wc)
			if err != nil {
				return nil, err
			}
			clauses = append(clauses, fmt.Sprintf("%s THEN INSERT (%s) VALUES (%s)", head, cols, vals))
		default:
			return nil, fmt.Errorf("postgres sink: %s: %w: MERGE INTO %s: clause %d: unknown action %q", wc.Pos, ErrMergeClause, Quote(st.Table), n, wc.Action)
		}
	}
	orFalse := func(c []string) string {
		if len(c) == 0 {
			return "false"
		}
		return strings.Join(c, " OR ")
	}
	takes := fmt.Sprintf("CASE WHEN %s.ctid IS NOT NULL THEN %s ELSE %s END", tq, orFalse(matched), orFalse(unmatched))
	join := fmt.Sprintf("%s AS %s LEFT JOIN %s AS %s ON %s", relation, sq, Quote(st.Table), tq, strings.Join(on, " AND "))
	keyText := make([]string, len(srcKeys))
	for i, k := range srcKeys {
		keyText[i] = k + "::text"
	}
	a := &Apply{table: st.Table, st: st, merge: mi}
	a.add(kindCheck, "check that no target row (or new key) is touched by more than one source row",
		fmt.Sprintf("SELECT count(*), string_agg(%s.%s, ', ' ORDER BY %s.%s, %s.%s), %s FROM %s WHERE %s GROUP BY %s HAVING count(*) > 1 LIMIT 1",
			sq, colOp, sq, colVer, sq, colOrd, strings.Join(keyText, ", "), join, takes, strings.Join(srcKeys, ", ")))
	a.add(kindCount, "count the source rows that take a clause, by change type",
		fmt.Sprintf("SELECT %s.%s, count(*) FROM %s WHERE %s GROUP BY %s.%s", sq, colOp, join, takes, sq, colOp))
	merge := func(into string) string {
		return fmt.Sprintf("MERGE INTO %s AS %s USING %s AS %s ON %s\n%s", into, tq, relation, sq, strings.Join(on, " AND "), strings.Join(clauses, "\n"))
	}
	a.add(kindMerge, "MERGE with the job's clauses", merge(Quote(st.Table)))
	mi.relation, mi.sa, mi.on, mi.sourceCols = relation, sq, strings.Join(on, " AND "), st.Schema.Names()
	a.stmts[len(a.stmts)-1].fallback = mi.windowSteps(target, tq, merge(mergeCopy))
	return a, nil
}

// mergeBinder binds and renders the expressions of MERGE clauses.
type mergeBinder struct {
	st     *plan.SinkStage
	target cdc.Schema
	ta, sa string // quoted aliases
}

// render binds e (MATCHED clauses over the target and source aliases, NOT
// MATCHED clauses over the source only, as SQL allows) and renders it with
// expr's PostgreSQL dialect.
func (b *mergeBinder) render(e *plan.Expr, matched bool) (string, cdc.Type, error) {
	if Dialect == nil {
		return "", cdc.Type{}, fmt.Errorf("postgres sink: %s: %w: package expr has no PostgreSQL dialect yet", e.Pos, ErrMergeClause)
	}
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
	sql, err := bound.SQL(Dialect, func(rel, idx int) string {
		if matched && rel == 0 {
			return b.ta + "." + Quote(b.target.Columns[idx].Name)
		}
		return b.sa + "." + Quote(b.st.Schema.Columns[idx].Name)
	})
	if err != nil {
		return "", cdc.Type{}, err
	}
	return sql, bound.Type(), nil
}

// value renders an assigned or inserted value for target column name.
func (b *mergeBinder) value(e *plan.Expr, matched bool, column string) (string, string, error) {
	tc, ok := b.target.Column(column)
	if !ok {
		return "", "", fmt.Errorf("postgres sink: %s: %w: MERGE INTO %s: the table has no column %q (it has %s)", e.Pos, ErrMergeClause, Quote(b.st.Table), column, strings.Join(b.target.Names(), ", "))
	}
	sql, typ, err := b.render(e, matched)
	if err != nil {
		return "", "", err
	}
	if typ.Kind != cdc.KindInvalid && !Compatible(typ, tc.Type) {
		return "", "", fmt.Errorf("postgres sink: %s: %w: MERGE INTO %s: column %q is %s, which cannot hold %s (%s)", e.Pos, ErrMergeClause, Quote(b.st.Table), tc.Name, tc.Type, e.Text, typ)
	}
	return Quote(tc.Name), sql, nil
}

func (b *mergeBinder) assignments(wc plan.WhenClause) ([]string, error) {
	if len(wc.Set) == 0 {
		return nil, fmt.Errorf("postgres sink: %s: %w: MERGE INTO %s: UPDATE without SET", wc.Pos, ErrMergeClause, Quote(b.st.Table))
	}
	var sets []string
	for _, as := range wc.Set {
		col, val, err := b.value(&as.Value, true, stripQualifier(as.Column, b.st.Merge.TargetAlias))
		if err != nil {
			return nil, err
		}
		sets = append(sets, col+" = "+val)
	}
	return sets, nil
}

func (b *mergeBinder) inserts(wc plan.WhenClause) (string, string, error) {
	cols := wc.InsertColumns
	if len(cols) == 0 {
		cols = b.target.Names()
	}
	if len(cols) != len(wc.InsertValues) {
		return "", "", fmt.Errorf("postgres sink: %s: %w: MERGE INTO %s: INSERT lists %d columns and %d values", wc.Pos, ErrMergeClause, Quote(b.st.Table), len(cols), len(wc.InsertValues))
	}
	var cs, vs []string
	for i, c := range cols {
		col, val, err := b.value(&wc.InsertValues[i], false, stripQualifier(c, b.st.Merge.TargetAlias))
		if err != nil {
			return "", "", err
		}
		if slices.Contains(cs, col) {
			return "", "", fmt.Errorf("postgres sink: %s: %w: MERGE INTO %s: INSERT names column %s twice", wc.Pos, ErrMergeClause, Quote(b.st.Table), col)
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

// check runs the cardinality query; a row is an error naming the key.
func (mi *mergeInto) check(ctx context.Context, q Querier, query string) error {
	rows, err := q.Query(ctx, query)
	if err != nil {
		return fmt.Errorf("postgres sink: MERGE INTO %s: cardinality check: %w", Quote(mi.table), err)
	}
	defer rows.Close()
	if !rows.Next() {
		return rows.Err()
	}
	vals, err := rows.Values()
	if err != nil {
		return err
	}
	parts := make([]string, len(mi.keys))
	for i := range mi.keys {
		parts[i] = fmt.Sprintf("%s=%v", mi.names[i], vals[2+i])
	}
	return fmt.Errorf("%w: MERGE INTO %s: target key (%s) is touched by %v source rows (%v); a MERGE source may touch each target row at most once — filter the stream, e.g. WHERE `__change_type` IN ('INSERT', 'UPDATE_AFTER'), or add a condition to the WHEN clauses",
		ErrMergeCardinality, mi.table, strings.Join(parts, ", "), vals[0], vals[1])
}

// isCardinality reports PostgreSQL's "MERGE command cannot affect row a
// second time" (SQLSTATE 21000).
func isCardinality(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "21000"
}

// cardinalityError rewrites PostgreSQL's cardinality error (a race the
// check did not see).
func (mi *mergeInto) cardinalityError(err error) error {
	return fmt.Errorf("%w: MERGE INTO %s: a target row is touched by more than one source row; filter the stream to one change per key, e.g. WHERE `__change_type` IN ('INSERT', 'UPDATE_AFTER') (%v)",
		ErrMergeCardinality, mi.table, err)
}
