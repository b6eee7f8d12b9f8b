package sqlite

import (
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/sinks/changerel"
)

// The sinks that add columns of their own: mode history (SCD type 2,
// __valid_from / __valid_to) and a merge with on_delete soft
// (__deleted_at). Their change relation carries changerel.TS, the commit
// timestamp of each change.

const (
	colTS   = changerel.TS
	histTbl = "sluice_hist"
)

// createTarget returns the CREATE TABLE of a missing target of st and the
// CREATE INDEX that goes with it ("" for none): mode merge has PRIMARY KEY
// (keys) (and __deleted_at with on_delete soft); mode history has the key
// columns NOT NULL, __valid_from TIMESTAMP NOT NULL and __valid_to
// TIMESTAMP, and an index on (keys, __valid_to), which finds a key's
// current version; other modes have the projected columns only.
// CommitTimeLayout is how the sink writes a change's commit time
// (__commit_timestamp) when the change travels through sluice: the source
// of __valid_from and __valid_to (history) and __deleted_at (soft
// deletes). Six fraction digits always, whatever the value ("2026-12-01
// 10:00:03.120000+00:00"), so that every value of such a column has one
// width and the same precision, and sorts as text. A job pushed down
// within one SQLite database writes the capture's own text instead, three
// fraction digits always (strftime's %f: "2026-12-01 10:00:03.120+00:00").
const CommitTimeLayout = "2006-01-02 15:04:05.000000-07:00"

func createTarget(st *plan.SinkStage) (create, index string) {
	switch st.Mode {
	case plan.ModeMerge:
		return createTableSQL(st.Table, st.WithAdded(), st.Keys), ""
	case plan.ModeHistory:
		s := st.WithAdded()
		for i, c := range s.Columns {
			if st.Schema.Index(c.Name) >= 0 && st.IsKey(c.Name) {
				s.Columns[i].NotNull = true
			}
		}
		cols := append(quotedKeys(st), sqlitex.Quote(plan.ColValidTo))
		return createTableSQL(st.Table, s, nil), fmt.Sprintf("CREATE INDEX %s ON %s (%s)",
			sqlitex.Quote(st.Table+"_keys_valid_to"), sqlitex.Quote(st.Table), strings.Join(cols, ", "))
	}
	return createTableSQL(st.Table, st.Schema, nil), ""
}

func quotedKeys(st *plan.SinkStage) []string {
	out := make([]string, len(st.Keys))
	for i, k := range st.Keys {
		out[i] = sqlitex.Quote(st.Schema.Columns[st.Schema.Index(k)].Name)
	}
	return out
}

// checkAdded verifies that an existing target has the columns st adds,
// each TIMESTAMP (or text, which holds SQLite's timestamps as well).
func checkAdded(table string, target cdc.Schema, st *plan.SinkStage) error {
	for _, n := range st.AddedColumns() {
		tc, ok := target.Column(n)
		if !ok {
			return fmt.Errorf("sqlite sink: %w: mode %s writes column %s, which target %q does not have; add it (ALTER TABLE %s ADD COLUMN %s TIMESTAMP) or write to a new table",
				ErrAddedColumn, describeMode(st), n, table, sqlitex.Quote(table), sqlitex.Quote(n))
		}
		if tc.Type.Kind != cdc.KindTimestamp && !tc.Type.Kind.IsText() {
			return fmt.Errorf("sqlite sink: %w: column %s of %q is %s; mode %s writes a TIMESTAMP into it", ErrAddedColumn, n, table, tc.Type, describeMode(st))
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

// compileHistory compiles mode history over relation (projected columns of
// types rel, written as the target's types tt). Per key, the changes in
// (__ver, __ord) order after the key's current version (the target row
// whose __valid_to is NULL) are replayed: UPDATE_BEFORE is ignored; an
// INSERT or UPDATE_AFTER opens a version at its __ts unless the key is
// present with the same values (IS, so NULL equals NULL), closing the
// version before it; a DELETE of a present key closes its version. The
// changes that take effect go to a TEMP table with the __ts of the next
// one (__next); then the current version a change replaced gets __valid_to
// = __next and each opened version is inserted with __valid_from = __ts,
// __valid_to = __next. Written counts the changes that took effect.
func (a *Apply) compileHistory(rel, tt []cdc.Type, relation string) {
	s := a.st.Schema
	t := sqlitex.Quote(a.table)
	kt := keyTextSQL(s, a.st.Keys, "__r")
	keys := quotedKeys(a.st)
	kl := strings.Join(keys, ", ")
	var cols, relVals, tgtVals, lags, differs, on []string
	for i, c := range s.Columns {
		q := sqlitex.Quote(c.Name)
		cols = append(cols, q)
		relVals = append(relVals, fitExpr("__r."+q, rel[i], tt[i], c.Name, kt)+" AS "+q)
		tgtVals = append(tgtVals, "__t."+q)
		if a.st.IsKey(c.Name) {
			on = append(on, fmt.Sprintf("__t.%s = __h.%s", q, q))
			continue
		}
		lags = append(lags, fmt.Sprintf(", lag(%s) OVER __w AS __p%d", q, i))
		differs = append(differs, fmt.Sprintf(" OR %s IS NOT __p%d", q, i))
	}
	cl := strings.Join(cols, ", ")
	order := fmt.Sprintf("PARTITION BY %s ORDER BY __s_src, %s, %s", kl, colVer, changerel.LastOrder(false))
	query := fmt.Sprintf(`WITH __ev AS (SELECT %[1]s, __r.%[2]s AS %[2]s, __r.%[3]s AS %[3]s, 1 AS __s_src, __r.%[4]s AS %[4]s, __r.%[5]s AS %[5]s FROM %[6]s AS __r WHERE __r.%[2]s <> 'UPDATE_BEFORE'),
__all AS (SELECT * FROM __ev UNION ALL SELECT %[7]s, 'CURRENT', __t.%[8]s, 0, 0, 0 FROM %[9]s AS __t WHERE __t.%[10]s IS NULL AND (%[11]s) IN (SELECT %[12]s FROM __ev)),
__lag AS (SELECT *, lag(%[2]s) OVER __w AS __p_op%[13]s FROM __all WINDOW __w AS (%[14]s)),
__eff AS (SELECT * FROM __lag WHERE %[2]s = 'CURRENT' OR (%[2]s = 'DELETE' AND __p_op IS NOT NULL AND __p_op <> 'DELETE') OR (%[2]s <> 'DELETE' AND (__p_op IS NULL OR __p_op = 'DELETE'%[15]s)))
SELECT %[16]s, %[2]s, %[3]s, lead(%[3]s) OVER (%[14]s) AS __next FROM __eff`,
		strings.Join(relVals, ", "), colOp, colTS, colVer, colOrd, relation,
		strings.Join(tgtVals, ", "), sqlitex.Quote(plan.ColValidFrom), t, sqlitex.Quote(plan.ColValidTo),
		"__t."+strings.Join(keys, ", __t."), kl, strings.Join(lags, ""), order, strings.Join(differs, ""), cl)

	h := "temp." + histTbl
	a.add(kindExec, "drop a leftover history table", "DROP TABLE IF EXISTS "+h)
	a.add(kindExec, "replay each key's changes after its current version (UPDATE_BEFORE ignored); keep those that change it, each with the commit timestamp of the next",
		fmt.Sprintf("CREATE TEMP TABLE %s AS %s", histTbl, query))
	a.add(kindCount, "count the changes that make history by change type",
		fmt.Sprintf("SELECT %s, count(*) FROM %s WHERE %s <> 'CURRENT' GROUP BY %s", colOp, h, colOp, colOp))
	a.add(kindExec, "close the current versions the changes replace or delete",
		fmt.Sprintf("UPDATE %s AS __t SET %s = __h.__next FROM %s AS __h WHERE __h.%s = 'CURRENT' AND __h.__next IS NOT NULL AND __t.%s IS NULL AND %s",
			t, sqlitex.Quote(plan.ColValidTo), h, colOp, sqlitex.Quote(plan.ColValidTo), strings.Join(on, " AND ")))
	a.add(kindExec, "insert the versions the changes open (INSERT / UPDATE_AFTER)",
		fmt.Sprintf("INSERT INTO %s (%s, %s, %s) SELECT %s, %s, __next FROM %s WHERE %s IN ('INSERT', 'UPDATE_AFTER') ORDER BY %s, %s",
			t, cl, sqlitex.Quote(plan.ColValidFrom), sqlitex.Quote(plan.ColValidTo), cl, colTS, h, colOp, kl, colTS))
	a.add(kindExec, "drop the history table", "DROP TABLE "+h)
}

// addDeletes adds what a merge does with the keys whose net change is a
// DELETE (plan.SinkStage.OnDelete): delete them (the default), set
// __deleted_at to the DELETE's __ts (soft), or nothing (ignore). With
// partial rows, a key re-inserted after a DELETE in the same relation
// (__reset) is deleted first in every case, so that the columns its new
// row does not carry are NULL.
func (a *Apply) addDeletes(t, kl, net string, partial bool) {
	reset := ""
	if partial {
		reset = fmt.Sprintf(" OR (__reset = 1 AND %s <> 'DELETE')", colOp)
	}
	switch a.st.OnDelete {
	case plan.OnDeleteSoft:
		var on []string
		for _, k := range quotedKeys(a.st) {
			on = append(on, fmt.Sprintf("__t.%s = __n.%s", k, k))
		}
		a.add(kindExec, "soft-delete keys whose net change is DELETE: keep the row, set __deleted_at to the DELETE's commit timestamp",
			fmt.Sprintf("UPDATE %s AS __t SET %s = __n.%s FROM %s AS __n WHERE __n.%s = 'DELETE' AND %s",
				t, sqlitex.Quote(plan.ColDeletedAt), colTS, net, colOp, strings.Join(on, " AND ")))
	case plan.OnDeleteIgnore:
		// the rows stay as they were
	default:
		a.add(kindExec, "delete keys whose net change is DELETE (or a re-insert after DELETE)",
			fmt.Sprintf("DELETE FROM %s WHERE (%s) IN (SELECT %s FROM %s WHERE %s = 'DELETE' OR __reset = 1)", t, kl, kl, net, colOp))
		return
	}
	if partial {
		a.add(kindExec, "delete keys re-inserted after a DELETE (their new row sets every column)",
			fmt.Sprintf("DELETE FROM %s WHERE (%s) IN (SELECT %s FROM %s WHERE %s)", t, kl, kl, net, strings.TrimPrefix(reset, " OR ")))
	}
}
