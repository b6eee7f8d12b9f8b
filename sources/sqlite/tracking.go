package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
)

// Capture follows the table, not its name, and survives the
// application's DDL (doc.go, "Schema changes"). sqlite_schema is the
// source of truth: the capture triggers of change log sluice_changes_<sfx>
// are named sluice_capture_<kind>_<sfx>, and the table they are on is the
// tracked table, whatever its name now. sluice_tracking records the
// table's name, its change log and the table's definition (CREATE TABLE
// and CREATE INDEX statements) when capture was installed; a difference
// means DDL ran since and syncCapture re-installs.

// captureState is what sqlite_schema says about a tracked table's capture.
type captureState int

const (
	capFresh captureState = iota // installed for the table as it is
	capStale                     // DDL, a rename, or an earlier sluice's triggers: syncCapture re-installs
	capLost                      // the triggers are gone: the table was dropped or re-created
)

// liveCapture is a tracked table's capture as found in sqlite_schema.
type liveCapture struct {
	on       string // the table the triggers are on; "" when none is left
	triggers int    // capture triggers present (this design has 6)
	insSQL   string // the AFTER INSERT trigger's text
}

func inspectCapture(ctx context.Context, q sqlitex.Querier, c captured) (liveCapture, error) {
	sfx := suffix(c.log)
	var names []any
	marks := make([]string, len(triggerKinds))
	for i, k := range triggerKinds {
		names = append(names, triggerName(k, sfx))
		marks[i] = "?"
	}
	rows, err := q.QueryContext(ctx, `SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'trigger' AND name IN (`+strings.Join(marks, ", ")+`)`, names...)
	if err != nil {
		return liveCapture{}, fmt.Errorf("inspect change capture of %s: %w", c.table, err)
	}
	defer rows.Close()
	var l liveCapture
	for rows.Next() {
		var name, tbl, text string
		if err := rows.Scan(&name, &tbl, &text); err != nil {
			return liveCapture{}, fmt.Errorf("inspect change capture of %s: %w", c.table, err)
		}
		l.triggers++
		l.on = tbl
		if name == triggerName("ins", sfx) {
			l.insSQL = text
		}
	}
	return l, rows.Err()
}

// definition is what capture depends on: the table's CREATE TABLE and
// its CREATE INDEX statements (UNIQUE indexes decide what a REPLACE
// removes). "" when there is no such table.
func definition(ctx context.Context, q sqlitex.Querier, table string) (string, error) {
	var d sql.NullString
	err := q.QueryRowContext(ctx, `SELECT group_concat(sql, char(10)) FROM (
		SELECT sql FROM sqlite_schema WHERE tbl_name = ? COLLATE NOCASE AND type IN ('table', 'index') AND sql IS NOT NULL
		ORDER BY type DESC, name)`, table).Scan(&d)
	if err != nil {
		return "", fmt.Errorf("read definition of %s: %w", table, err)
	}
	return d.String, nil
}

// status compares a tracked table's capture with the table.
func status(ctx context.Context, q sqlitex.Querier, c captured) (captureState, liveCapture, error) {
	live, err := inspectCapture(ctx, q, c)
	if err != nil {
		return 0, live, err
	}
	if st, decided := liveState(live, c); decided {
		return st, live, nil
	}
	def, err := definition(ctx, q, c.table)
	if err != nil {
		return 0, live, err
	}
	if def != c.tableSQL {
		return capStale, live, nil
	}
	return capFresh, live, nil
}

// liveState is the capture state the triggers alone decide (lost, or
// stale: on another table, missing some, or of an earlier design); decided
// is false when the table's definition decides (status).
func liveState(live liveCapture, c captured) (st captureState, decided bool) {
	if live.triggers == 0 {
		return capLost, true
	}
	if live.on != c.table || live.triggers != len(triggerKinds) || !strings.Contains(live.insSQL, captureVersion) {
		return capStale, true
	}
	return capFresh, false
}

// lostError explains a capture whose triggers are gone and how to go on.
func lostError(ctx context.Context, q sqlitex.Querier, c captured, streams string) error {
	_, exists, err := sqlitex.TableName(ctx, q, c.table)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("%w: table %s was dropped, and its change capture with it (the change log keeps what was captured until then). "+
			"To go on: DROP TABLE STREAM %s; if the table is created again, enable change tracking on it and create the stream again (a new stream: use sluice backfill to copy the table)",
			ErrCaptureLost, c.table, streams)
	}
	return fmt.Errorf("%w: table %s has no change capture any more: it was dropped and created again (for example by the CREATE new / INSERT … SELECT / DROP / ALTER TABLE … RENAME rebuild), or its sluice triggers were dropped; its changes since then were not captured. "+
		"To go on: ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'true') re-installs capture and the stream (%s) goes on from its offset; writes made between the rebuild and that statement are not in the stream (if there were any, run sluice backfill for the jobs reading it)",
		ErrCaptureLost, c.table, c.table, streams)
}

// syncCapture re-installs a stale capture (after DDL on the table, a
// rename of it, or triggers from an earlier sluice) and returns the
// registration as it is now; a lost capture is an error wrapping
// ErrCaptureLost. It is for a table that has (or is getting) a stream, so
// capture stays on. It must run in a write transaction.
func syncCapture(ctx context.Context, tx sqlitex.Querier, c captured) (captured, error) {
	st, live, err := status(ctx, tx, c)
	if err != nil {
		return c, err
	}
	switch st {
	case capFresh:
		return c, nil
	case capLost:
		streams, err := listStreams(ctx, tx, c.table)
		if err != nil {
			return c, err
		}
		return c, lostError(ctx, tx, c, streamNames(streams))
	}
	return reinstall(ctx, tx, c, live, true)
}

// reinstall re-creates the capture of c on the table live says it is on
// (renaming its change log and registration when the table was renamed),
// keeping the change log and the streams; without capture (no stream on
// the table) it leaves the triggers off (install).
func reinstall(ctx context.Context, tx sqlitex.Querier, c captured, live liveCapture, capture bool) (captured, error) {
	table := c.table
	if live.on != "" {
		table = live.on
	}
	oldSfx := suffix(c.log)
	if err := execAll(ctx, tx, append(dropTriggers(oldSfx), dropHelpers(oldSfx)...)); err != nil {
		return c, fmt.Errorf("re-install change capture of %s: %w", table, err)
	}
	if table != c.table {
		log := logTable(table)
		if log != c.log {
			if _, taken, err := sqlitex.TableName(ctx, tx, log); err != nil {
				return c, err
			} else if taken {
				return c, fmt.Errorf("table %s was renamed from %s, but its change log cannot follow: %s exists", table, c.table, log)
			}
			if _, err := tx.ExecContext(ctx, `ALTER TABLE `+sqlitex.Quote(c.log)+` RENAME TO `+sqlitex.Quote(log)); err != nil {
				return c, fmt.Errorf("rename change log of %s: %w", table, err)
			}
		}
		for _, q := range []string{
			`UPDATE sluice_tracking SET tbl = ?, log = ? WHERE tbl = ?`,
			`UPDATE sluice_streams SET tbl = ? WHERE tbl = ?`,
		} {
			args := []any{table, log, c.table}
			if strings.HasPrefix(q, "UPDATE sluice_streams") {
				args = []any{table, c.table}
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return c, fmt.Errorf("follow rename of %s to %s: %w", c.table, table, err)
			}
		}
		c.table, c.log = table, log
	}
	var owned map[string]string
	if strings.Contains(live.insSQL, captureVersion) {
		owned = capturedNames(live.insSQL)
		readded, err := readdedColumns(ctx, tx, c, table, owned)
		if err != nil {
			return c, err
		}
		for _, n := range readded {
			delete(owned, n)
		}
	}
	if err := install(ctx, tx, table, owned, capture); err != nil {
		return c, err
	}
	n, _, err := lookupTracking(ctx, tx, table)
	return n, err
}

// markerRE finds a column reference followed by its marker: the
// reference as SQLite wrote it (quoted, or bare after some renames) and
// the hex of the log column it fills.
var markerRE = regexp.MustCompile("(\"(?:[^\"]|\"\")*\"|`(?:[^`]|``)*`|\\[[^\\]]*\\]|[^\\s,()\"`\\[\\]]+)\\s*/\\*sluice:([0-9a-f]*)\\*/")

// capturedNames reads the AFTER INSERT trigger's column references: the
// table's current name of each column → the log column (o_/n_ suffix)
// holding its values.
func capturedNames(trigger string) map[string]string {
	out := map[string]string{}
	for _, m := range markerRE.FindAllStringSubmatch(trigger, -1) {
		logCol, err := hex.DecodeString(m[2])
		if err != nil {
			continue
		}
		name := m[1]
		switch name[0] {
		case '"':
			name = strings.ReplaceAll(name[1:len(name)-1], `""`, `"`)
		case '`':
			name = strings.ReplaceAll(name[1:len(name)-1], "``", "`")
		case '[':
			name = name[1 : len(name)-1]
		}
		if _, dup := out[name]; !dup {
			out[name] = string(logCol)
		}
	}
	return out
}

// column is one column of a tracked table as install needs it.
type column struct {
	name, dflt string // dflt: the declared DEFAULT as SQL, "" for none
}

func tableColumns(ctx context.Context, q sqlitex.Querier, table string) ([]column, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, coalesce(dflt_value, '') FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		return nil, fmt.Errorf("read columns of %s: %w", table, err)
	}
	defer rows.Close()
	var out []column
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.name, &c.dflt); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// uniqueKeys returns the UNIQUE indexes of table over plain columns (a
// non-INTEGER primary key is one); partial and expression indexes are left
// out (a REPLACE conflicting on one of them is captured only with
// recursive_triggers on).
func uniqueKeys(ctx context.Context, q sqlitex.Querier, table string) ([]uniqueKey, error) {
	rows, err := q.QueryContext(ctx, `SELECT l.name, x.name, x.coll FROM pragma_index_list(?) AS l, pragma_index_xinfo(l.name) AS x
		WHERE l."unique" AND NOT l.partial AND x.key ORDER BY l.name, x.seqno`, table)
	if err != nil {
		return nil, fmt.Errorf("read unique indexes of %s: %w", table, err)
	}
	defer rows.Close()
	var out []uniqueKey
	skip, last := "", ""
	for rows.Next() {
		var idx string
		var col sql.NullString
		var coll string
		if err := rows.Scan(&idx, &col, &coll); err != nil {
			return nil, err
		}
		if idx == skip {
			continue
		}
		if !col.Valid { // an expression
			if idx == last {
				out = out[:len(out)-1]
			}
			skip = idx
			continue
		}
		if idx != last {
			out = append(out, uniqueKey{})
			last = idx
		}
		u := &out[len(out)-1]
		u.cols = append(u.cols, col.String)
		u.colls = append(u.colls, coll)
	}
	return out, rows.Err()
}

// install creates or re-creates the change tracking of table: the change
// log (kept when it exists, with columns renamed, added and moved aside
// to match the table) and its registration in sluice_tracking; with
// capture (a stream is on the table, or is being created) also the
// pending and absent tables and the triggers, else it drops them (no
// stream: nothing is logged). owned maps the table's column names to the
// log columns that hold their values (from the triggers being replaced);
// nil means "by name" (a first install, an earlier sluice's triggers, or
// triggers that were lost or off). It verifies that the triggers exist,
// or that none is left.
func install(ctx context.Context, tx sqlitex.Querier, table string, owned map[string]string, capture bool) error {
	fail := func(err error) error { return fmt.Errorf("install change capture on %s: %w", table, err) }
	cols, err := tableColumns(ctx, tx, table)
	if err != nil {
		return fail(err)
	}
	schema, _, err := sqlitex.TableSchema(ctx, tx, table)
	if err != nil {
		return fail(err)
	}
	uniq, err := uniqueKeys(ctx, tx, table)
	if err != nil {
		return fail(err)
	}
	log := logTable(table)
	have, err := tableColumns(ctx, tx, log)
	if err != nil {
		return fail(err)
	}
	if len(have) == 0 {
		var defs []string
		for _, c := range cols {
			// No declared type: BLOB affinity keeps each value exactly as
			// the table holds it.
			defs = append(defs, oldCol(c.name), newCol(c.name))
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE `+sqlitex.Quote(log)+` (seq INTEGER PRIMARY KEY AUTOINCREMENT, op TEXT NOT NULL, ts TEXT NOT NULL, rid INTEGER, `+strings.Join(defs, ", ")+`)`); err != nil {
			return fail(err)
		}
	} else if err := alignLog(ctx, tx, log, cols, have, owned); err != nil {
		return fail(err)
	}
	spec := captureSpec{table: table, sfx: table, key: schema.Key, uniq: uniq}
	for _, c := range cols {
		spec.cols = append(spec.cols, c.name)
	}
	stmts := append(dropTriggers(table), dropHelpers(table)...)
	if capture {
		stmts = append(append(stmts, spec.createHelpers()...), spec.triggers()...)
	}
	if err := execAll(ctx, tx, stmts); err != nil {
		return fail(err)
	}
	def, err := definition(ctx, tx, table)
	if err != nil {
		return fail(err)
	}
	names, _ := json.Marshal(schema.Names())
	_, now := nowUTC()
	if _, err := tx.ExecContext(ctx, `INSERT INTO sluice_tracking (tbl, log, columns, enabled, table_sql) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tbl) DO UPDATE SET log = excluded.log, columns = excluded.columns, table_sql = excluded.table_sql`,
		table, log, string(names), now, def); err != nil {
		return fail(err)
	}
	live, err := inspectCapture(ctx, tx, captured{table: table, log: log})
	if err != nil {
		return fail(err)
	}
	if !capture {
		if live.triggers != 0 {
			return fail(fmt.Errorf("%d capture triggers left after dropping them", live.triggers))
		}
		return nil
	}
	if live.triggers != len(triggerKinds) || live.on != table {
		return fail(fmt.Errorf("%d of %d capture triggers found after creating them", live.triggers, len(triggerKinds)))
	}
	return nil
}

// captureOff drops the capture triggers and helper tables of c (the last
// stream on its table is gone): nothing is logged until the next CREATE
// TABLE STREAM installs them again. The log and the registration stay.
func captureOff(ctx context.Context, tx sqlitex.Querier, c captured) error {
	sfx := suffix(c.log)
	if err := execAll(ctx, tx, append(dropTriggers(sfx), dropHelpers(sfx)...)); err != nil {
		return fmt.Errorf("switch off the change capture of %s: %w", c.table, err)
	}
	return nil
}

// captureOn installs the capture of c for the table's first stream, in a
// write transaction (so no application write is under way): a table
// without triggers (capture off) gets them by name into its kept log; one
// whose triggers are there is brought in line (syncCapture). It returns
// the registration as it is now.
func captureOn(ctx context.Context, tx sqlitex.Querier, c captured) (captured, error) {
	st, _, err := status(ctx, tx, c)
	if err != nil {
		return c, err
	}
	if st != capLost {
		return syncCapture(ctx, tx, c)
	}
	if _, ok, err := sqlitex.TableName(ctx, tx, c.table); err != nil {
		return c, err
	} else if !ok {
		return c, fmt.Errorf("%w: %s", ErrNoTable, c.table)
	}
	if err := install(ctx, tx, c.table, nil, true); err != nil {
		return c, err
	}
	n, _, err := lookupTracking(ctx, tx, c.table)
	return n, err
}

// alignLog makes the log's o_/n_ columns match cols: a column whose values
// a log column already holds under another name (a RENAME COLUMN) gets it
// renamed; a log column in the way (of a dropped column whose name came
// back: a sync in between, or readdedColumns) is moved aside; a new column gets o_ with the column's DEFAULT
// (its value, as SQLite reads it, in rows older than the column) and n_
// with the absent marker. Old images a trigger recorded as absent (a column
// dropped and added back between two syncs) become the column's DEFAULT.
func alignLog(ctx context.Context, tx sqlitex.Querier, log string, cols, have []column, owned map[string]string) error {
	exists := map[string]bool{}
	for _, h := range have {
		exists[h.name] = true
	}
	qlog := sqlitex.Quote(log)
	rename := func(from, to string) error {
		for _, p := range []string{"o_", "n_"} {
			if _, err := tx.ExecContext(ctx, `ALTER TABLE `+qlog+` RENAME COLUMN `+sqlitex.Quote(p+from)+` TO `+sqlitex.Quote(p+to)); err != nil {
				return err
			}
		}
		delete(exists, "o_"+from)
		exists["o_"+to] = true
		return nil
	}
	free := func(base string) string {
		for i := 1; ; i++ {
			n := fmt.Sprintf("%s~%d", base, i)
			if !exists["o_"+n] && !exists["n_"+n] {
				return n
			}
		}
	}
	src := map[string]string{} // column → log suffix holding its values
	for _, c := range cols {
		switch {
		case owned == nil && exists["o_"+c.name]:
			src[c.name] = c.name
		case owned != nil && owned[c.name] != "" && exists["o_"+owned[c.name]]:
			src[c.name] = owned[c.name]
		}
	}
	// Renamed columns move to temporary names first (swaps), columns in
	// the way move aside, then the temporary names become the final ones.
	tmp := map[string]string{}
	for _, c := range cols {
		if s, ok := src[c.name]; ok && s != c.name {
			t := free("~" + s)
			if err := rename(s, t); err != nil {
				return err
			}
			tmp[c.name] = t
		}
	}
	for _, c := range cols {
		if src[c.name] != c.name && exists["o_"+c.name] {
			if err := rename(c.name, free(c.name+"~dropped")); err != nil {
				return err
			}
		}
	}
	for name, t := range tmp {
		if err := rename(t, name); err != nil {
			return err
		}
	}
	var fix []string
	var where []string
	for _, c := range cols {
		if _, ok := src[c.name]; ok {
			if c.dflt != "" {
				fix = append(fix, oldCol(c.name)+" = CASE WHEN "+oldCol(c.name)+" IS "+absent+" THEN ("+c.dflt+") ELSE "+oldCol(c.name)+" END")
			} else {
				fix = append(fix, oldCol(c.name)+" = CASE WHEN "+oldCol(c.name)+" IS "+absent+" THEN NULL ELSE "+oldCol(c.name)+" END")
			}
			where = append(where, oldCol(c.name)+" IS "+absent)
			continue
		}
		add := func(col, dflt string) error {
			_, err := tx.ExecContext(ctx, `ALTER TABLE `+qlog+` ADD COLUMN `+col+` DEFAULT `+dflt)
			return err
		}
		d := c.dflt
		if d == "" {
			d = "NULL"
		}
		if err := add(oldCol(c.name), d); err != nil {
			// A DEFAULT ALTER TABLE ADD COLUMN does not take (an
			// expression, CURRENT_TIMESTAMP): older rows read NULL.
			if err := add(oldCol(c.name), "NULL"); err != nil {
				return err
			}
		}
		if err := add(newCol(c.name), absent); err != nil {
			return err
		}
		exists["o_"+c.name] = true
	}
	if len(fix) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE `+qlog+` SET `+strings.Join(fix, ", ")+` WHERE `+strings.Join(where, " OR ")); err != nil {
			return err
		}
	}
	return nil
}

// reconcileAll follows every tracked table that was renamed (so that a
// statement naming the table by its new name finds its capture, and a new
// table under the old name is not taken for it). It runs in a write
// transaction. It reads the catalog and the capture triggers once each
// (sqlite_schema has no index: a scan per tracked table made every
// statement O(tables²), issue #19) and inspects only the tables whose
// triggers sit on another table.
func reconcileAll(ctx context.Context, tx sqlitex.Querier) error {
	moved, err := movedTables(ctx, tx)
	if err != nil {
		return err
	}
	for _, table := range moved {
		c, ok, err := lookupTracking(ctx, tx, table)
		if err != nil || !ok {
			return err
		}
		live, err := inspectCapture(ctx, tx, c)
		if err != nil {
			return err
		}
		if live.triggers > 0 && live.on != c.table {
			streams, err := listStreams(ctx, tx, c.table)
			if err != nil {
				return err
			}
			if _, err := reinstall(ctx, tx, c, live, len(streams) > 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// movedTables returns the tracked tables (their registered names) whose
// capture triggers sit on a table of another name: renamed since
// (reconcileAll follows them). It only reads: two queries, whatever the
// number of tracked tables.
func movedTables(ctx context.Context, q sqlitex.Querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT tbl, log FROM sluice_tracking`)
	if err != nil {
		return nil, fmt.Errorf("read change tracking: %w", err)
	}
	var tracked [][2]string
	for rows.Next() {
		var t, log string
		if err := rows.Scan(&t, &log); err != nil {
			rows.Close()
			return nil, err
		}
		tracked = append(tracked, [2]string{t, log})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(tracked) == 0 {
		return nil, nil
	}
	on, err := captureTriggers(ctx, q)
	if err != nil {
		return nil, err
	}
	var moved []string
	for _, tl := range tracked {
		sfx := suffix(tl[1])
		for _, k := range triggerKinds {
			if tbl, ok := on[triggerName(k, sfx)]; ok && tbl != tl[0] {
				moved = append(moved, tl[0])
				break
			}
		}
	}
	return moved, nil
}

// captureTriggers maps the name of every capture trigger of the database
// to the table it is on, in one scan of sqlite_schema.
func captureTriggers(ctx context.Context, q sqlitex.Querier) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, tbl_name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'sluice\_capture\_%' ESCAPE '\'`)
	if err != nil {
		return nil, fmt.Errorf("read the capture triggers: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, tbl string
		if err := rows.Scan(&name, &tbl); err != nil {
			return nil, fmt.Errorf("read the capture triggers: %w", err)
		}
		out[name] = tbl
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the capture triggers: %w", err)
	}
	return out, nil
}

// enableTracking enables change tracking on table: it creates the change
// log and the registration, or brings them in line (keeping the change
// log and the streams) when DDL changed the table. The capture triggers
// exist only while a stream is on the table (CREATE TABLE STREAM installs
// them, dropping the last stream removes them): with streams it
// re-installs them when DDL changed the table or they were lost; without,
// it drops any an earlier sluice left. The triggers are verified to exist
// (or not) afterwards. It runs in tx.
func enableTracking(ctx context.Context, tx *sqlitex.Tx, table string) error {
	if err := reconcileAll(ctx, tx); err != nil {
		return err
	}
	name, ok, err := sqlitex.TableName(ctx, tx, table)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("cannot enable change tracking: %w: %s", ErrNoTable, table)
	}
	if isSluiceTable(name) {
		return fmt.Errorf("cannot enable change tracking on %s: it is one of sluice's own tables", name)
	}
	var withoutRowid bool
	if err := tx.QueryRowContext(ctx, `SELECT wr FROM pragma_table_list WHERE name = ? AND schema = 'main'`, name).Scan(&withoutRowid); err != nil {
		return fmt.Errorf("enable change tracking on %s: %w", name, err)
	}
	if withoutRowid {
		return fmt.Errorf("cannot enable change tracking on %s: %w: the table is WITHOUT ROWID (capture reads changed rows back by rowid); rebuild it as a rowid table", name, ErrUnsupported)
	}
	c, tracked, err := lookupTracking(ctx, tx, name)
	if err != nil {
		return err
	}
	if tracked {
		streams, err := listStreams(ctx, tx, name)
		if err != nil {
			return err
		}
		capture := len(streams) > 0
		st, live, err := status(ctx, tx, c)
		if err != nil {
			return err
		}
		switch {
		case st == capFresh && capture:
			return nil
		case st == capLost && !capture:
			return install(ctx, tx, name, nil, false) // the log and registration in line with the table
		case st == capLost:
			return install(ctx, tx, name, nil, true) // lost: by name into the kept log
		}
		_, err = reinstall(ctx, tx, c, live, capture)
		return err
	}
	if _, exists, err := sqlitex.TableName(ctx, tx, logTable(name)); err != nil {
		return err
	} else if exists {
		// A log no registration owns (left by a crash of an old version):
		// it holds nothing any stream can read.
		if _, err := tx.ExecContext(ctx, `DROP TABLE `+sqlitex.Quote(logTable(name))); err != nil {
			return err
		}
	}
	return install(ctx, tx, name, nil, false)
}

func isSluiceTable(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, "sluice_changes_") || strings.HasPrefix(n, "sluice_pending_") || strings.HasPrefix(n, "sluice_absent_") ||
		n == "sluice_tracking" || n == "sluice_streams"
}

// disableTracking removes change capture from table; an error wrapping
// ErrStreamsExist, naming them, while streams read the table. Disabling an
// untracked table is a no-op. It works on a table that was dropped (its
// registration and change log are removed); a name that is neither a
// table nor tracked is ErrNoTable.
func disableTracking(ctx context.Context, tx *sqlitex.Tx, table string) error {
	if err := reconcileAll(ctx, tx); err != nil {
		return err
	}
	c, tracked, err := lookupTracking(ctx, tx, table)
	if err != nil {
		return err
	}
	if tracked {
		return untrack(ctx, tx, c, "disable change tracking on")
	}
	if _, ok, err := sqlitex.TableName(ctx, tx, table); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("cannot disable change tracking: %w: %s", ErrNoTable, table)
	}
	return nil
}

// untrack drops capture and the tracking row of a table.
func untrack(ctx context.Context, tx *sqlitex.Tx, c captured, what string) error {
	streams, err := listStreams(ctx, tx, c.table)
	if err != nil {
		return err
	}
	if len(streams) > 0 {
		return fmt.Errorf("cannot %s %s: %w: %s (drop them first with DROP TABLE STREAM)", what, c.table, ErrStreamsExist, streamNames(streams))
	}
	if err := execAll(ctx, tx, dropCaptureDDL(suffix(c.log))); err != nil {
		return fmt.Errorf("%s %s: %w", what, c.table, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM sluice_tracking WHERE tbl = ?`, c.table); err != nil {
		return fmt.Errorf("%s %s: %w", what, c.table, err)
	}
	return nil
}

// errNotFresh is returned by a read whose snapshot shows DDL on the table
// after the capture was last installed. It wraps runner.ErrPlanStale too:
// the runner plans the run again, which re-installs capture.
func errNotFresh(stream, table string) error {
	return fmt.Errorf("table stream %s: %w: table %s changed (DDL) after the run started (%w); run again (the next run re-installs its capture)", stream, ErrSchemaChanged, table, runner.ErrPlanStale)
}
