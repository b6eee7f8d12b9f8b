package postgres

import (
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/sinks/changerel"
)

// The sinks that add columns of their own: mode history (SCD type 2,
// __valid_from / __valid_to) and a merge with on_delete soft
// (__deleted_at). Their change relation carries changerel.TS, the commit
// timestamp of each change (timestamptz).

const (
	colTS   = changerel.TS
	histTbl = "sluice_hist"
)

// createTarget returns the CREATE TABLE of a missing target of st and the
// CREATE INDEX that goes with it ("" for none): mode merge has PRIMARY KEY
// (keys) (and __deleted_at with on_delete soft); mode history has the key
// columns NOT NULL, __valid_from timestamptz NOT NULL and __valid_to
// timestamptz, and an index on (keys, __valid_to), which finds a key's
// current version; other modes have the projected columns only.
func createTarget(st *plan.SinkStage) (create, index string) {
	switch st.Mode {
	case plan.ModeMerge:
		return CreateTableSQL(st.Table, st.WithAdded(), st.Keys), ""
	case plan.ModeHistory:
		s := st.WithAdded()
		for i, c := range s.Columns {
			if st.IsKey(c.Name) {
				s.Columns[i].NotNull = true
			}
		}
		cols := append(quotedKeys(st), Quote(plan.ColValidTo))
		return CreateTableSQL(st.Table, s, nil), fmt.Sprintf("CREATE INDEX ON %s (%s)", Quote(st.Table), strings.Join(cols, ", "))
	}
	return CreateTableSQL(st.Table, st.Schema, nil), ""
}

func quotedKeys(st *plan.SinkStage) []string {
	out := make([]string, len(st.Keys))
	for i, k := range st.Keys {
		out[i] = Quote(st.Schema.Columns[st.Schema.Index(k)].Name)
	}
	return out
}

// checkAdded verifies that an existing target has the columns st adds,
// each a timestamp (with or without time zone).
func checkAdded(t *Table, st *plan.SinkStage) error {
	target := t.Schema()
	for _, n := range st.AddedColumns() {
		tc, ok := target.Column(n)
		if !ok {
			return fmt.Errorf("postgres sink: %w: mode %s writes column %s, which target %s does not have; add it (ALTER TABLE %s ADD COLUMN %s timestamptz) or write to a new table",
				ErrAddedColumn, describeMode(st), n, Quote(st.Table), Quote(st.Table), Quote(n))
		}
		if tc.Type.Kind != cdc.KindTimestamp {
			return fmt.Errorf("postgres sink: %w: column %s of %s is %s; mode %s writes a timestamp into it", ErrAddedColumn, n, Quote(st.Table), t.Columns[target.Index(n)].PGType, describeMode(st))
		}
	}
	return nil
}

func describeMode(st *plan.SinkStage) string {
	if st.Mode == plan.ModeMerge && st.OnDelete != "" {
		return "merge with on_delete " + string(st.OnDelete)
	}
	return string(st.Mode)
}

// compileHistory compiles mode history over relation into the target
// columns names (aligned with the projected columns) of types target.
// Per key, the changes in (__ver, __ord) order after the key's current
// version (the target row whose __valid_to is NULL) are replayed:
// UPDATE_BEFORE is ignored; an INSERT or UPDATE_AFTER opens a version at
// its __ts unless the key is present with the same values (IS NOT
// DISTINCT FROM; text-typed columns compared as text, so json compares),
// closing the version before it; a DELETE of a present key closes its
// version. The changes that take effect go to a TEMP table with the __ts
// of the next one (__next); then the current version a change replaced
// gets __valid_to = __next and each opened version is inserted with
// __valid_from = __ts, __valid_to = __next. Written counts the changes
// that took effect.
func (a *Apply) compileHistory(names []string, target cdc.Schema, relation string) {
	s := a.st.Schema
	t := Quote(a.table)
	var keys, tkeys, cols, tcols, relVals, tgtVals, lags, differs, on []string
	for i, c := range s.Columns {
		q, tq := Quote(c.Name), Quote(names[i])
		cols, tcols = append(cols, q), append(tcols, tq)
		v := "__r." + q
		tc, _ := target.Column(names[i])
		if tc.Type != c.Type {
			v = fmt.Sprintf("CAST(%s AS %s)", v, ColumnType(tc.Type))
		}
		relVals = append(relVals, v+" AS "+q)
		tgtVals = append(tgtVals, "__t."+tq)
		if a.st.IsKey(c.Name) {
			keys, tkeys = append(keys, q), append(tkeys, "__t."+tq)
			on = append(on, fmt.Sprintf("__t.%s = __h.%s", tq, q))
			continue
		}
		lags = append(lags, fmt.Sprintf(", lag(%s) OVER __w AS __p%d", q, i))
		if c.Type.Kind.IsText() || tc.Type.Kind.IsText() {
			differs = append(differs, fmt.Sprintf(" OR %s::text IS DISTINCT FROM __p%d::text", q, i))
		} else {
			differs = append(differs, fmt.Sprintf(" OR %s IS DISTINCT FROM __p%d", q, i))
		}
	}
	kl := strings.Join(keys, ", ")
	order := fmt.Sprintf("PARTITION BY %s ORDER BY __s_src, %s, %s", kl, colVer, changerel.LastOrder(false))
	from, to := Quote(plan.ColValidFrom), Quote(plan.ColValidTo)
	query := fmt.Sprintf(`WITH __ev AS (SELECT %[1]s, __r.%[2]s AS %[2]s, __r.%[3]s::timestamptz AS %[3]s, 1 AS __s_src, __r.%[4]s::bigint AS %[4]s, __r.%[5]s::bigint AS %[5]s FROM %[6]s AS __r WHERE __r.%[2]s <> 'UPDATE_BEFORE'),
__all AS (SELECT * FROM __ev UNION ALL SELECT %[7]s, 'CURRENT', __t.%[8]s::timestamptz, 0, 0, 0 FROM %[9]s AS __t WHERE __t.%[10]s IS NULL AND (%[11]s) IN (SELECT %[12]s FROM __ev)),
__lag AS (SELECT *, lag(%[2]s) OVER __w AS __p_op%[13]s FROM __all WINDOW __w AS (%[14]s)),
__eff AS (SELECT * FROM __lag WHERE %[2]s = 'CURRENT' OR (%[2]s = 'DELETE' AND __p_op IS NOT NULL AND __p_op <> 'DELETE') OR (%[2]s <> 'DELETE' AND (__p_op IS NULL OR __p_op = 'DELETE'%[15]s)))
SELECT %[16]s, %[2]s, %[3]s, lead(%[3]s) OVER (%[14]s) AS __next FROM __eff`,
		strings.Join(relVals, ", "), colOp, colTS, colVer, colOrd, relation,
		strings.Join(tgtVals, ", "), from, t, to,
		strings.Join(tkeys, ", "), kl, strings.Join(lags, ""), order, strings.Join(differs, ""), strings.Join(cols, ", "))

	h := "pg_temp." + histTbl
	a.add(kindExec, "drop a leftover history table", "DROP TABLE IF EXISTS "+h)
	a.add(kindExec, "replay each key's changes after its current version (UPDATE_BEFORE ignored); keep those that change it, each with the commit timestamp of the next",
		fmt.Sprintf("CREATE TEMP TABLE %s AS %s", histTbl, query))
	a.add(kindCount, "count the changes that make history by change type",
		fmt.Sprintf("SELECT %s, count(*) FROM %s WHERE %s <> 'CURRENT' GROUP BY %s", colOp, h, colOp, colOp))
	a.add(kindExec, "close the current versions the changes replace or delete",
		fmt.Sprintf("UPDATE %s AS __t SET %s = __h.__next FROM %s AS __h WHERE __h.%s = 'CURRENT' AND __h.__next IS NOT NULL AND __t.%s IS NULL AND %s",
			t, to, h, colOp, to, strings.Join(on, " AND ")))
	a.add(kindExec, "insert the versions the changes open (INSERT / UPDATE_AFTER)",
		fmt.Sprintf("INSERT INTO %s (%s, %s, %s) SELECT %s, %s, __next FROM %s WHERE %s IN ('INSERT', 'UPDATE_AFTER') ORDER BY %s, %s",
			t, strings.Join(tcols, ", "), from, to, strings.Join(cols, ", "), colTS, h, colOp, kl, colTS))
	a.add(kindExec, "drop the history table", "DROP TABLE "+h)
}

// netMeta lists the change-relation columns a merge's net-change table
// keeps besides __present: __op, and __ts when the sink records commit
// times (plan.SinkStage.NeedsCommitTime).
func (a *Apply) netMeta() []string {
	if a.st.NeedsCommitTime() {
		return []string{colOp, colTS}
	}
	return []string{colOp}
}

// mergeDelete returns what a MERGE does with a matched key whose net
// change is a DELETE (plan.SinkStage.OnDelete), in words and as the THEN
// action: DELETE (the default), UPDATE SET __deleted_at to the DELETE's
// __ts (soft), or DO NOTHING (ignore).
func (a *Apply) mergeDelete() (what, action string) {
	switch a.st.OnDelete {
	case plan.OnDeleteSoft:
		return "DELETE sets __deleted_at, the row stays", fmt.Sprintf("UPDATE SET %s = __n.%s", Quote(plan.ColDeletedAt), colTS)
	case plan.OnDeleteIgnore:
		return "DELETE is ignored, the row stays", "DO NOTHING"
	}
	return "DELETE deletes", "DELETE"
}

// addDeletes adds the statement of PostgreSQL < 15 (no MERGE) for the keys
// whose net change is a DELETE, as mergeDelete says.
func (a *Apply) addDeletes(t, net, onl string) {
	switch a.st.OnDelete {
	case plan.OnDeleteSoft:
		a.add(kindExec, "PostgreSQL < 15 has no MERGE: set __deleted_at of keys whose net change is DELETE",
			fmt.Sprintf("UPDATE %s AS __t SET %s = __n.%s FROM %s AS __n WHERE %s AND __n.%s = 'DELETE'", t, Quote(plan.ColDeletedAt), colTS, net, onl, colOp))
	case plan.OnDeleteIgnore:
	default:
		a.add(kindExec, "PostgreSQL < 15 has no MERGE: delete keys whose net change is DELETE",
			fmt.Sprintf("DELETE FROM %s AS __t USING %s AS __n WHERE %s AND __n.%s = 'DELETE'", t, net, onl, colOp))
	}
}
