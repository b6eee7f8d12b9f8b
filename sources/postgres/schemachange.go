package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// attnamesOf returns the column names of attrs by attnum (index attnum-1),
// "" where a column was dropped: sluice.tracking.attnames, which lets
// enabling tracking again tell a renamed column (same attnum, new name)
// from a dropped and an added one.
func attnamesOf(attrs []attribute) []string {
	n := 0
	for _, a := range attrs {
		n = max(n, int(a.Num))
	}
	out := make([]string, n)
	for _, a := range attrs {
		out[a.Num-1] = a.Name
	}
	return out
}

// logOwnColumns are the change log's own columns, never a table's.
var logOwnColumns = map[string]bool{"__seq": true, "__txid": true, "__op": true, "__ts": true, "__extra": true, "__attnums": true, "__attnames": true}

// followColumns brings the change log of t in line with the table's
// columns attrs before the missing ones are added. The log's typed
// columns are the columns oldNames names by attnum (sluice.tracking.
// attnames, recorded whenever the log was last brought in line; the typed
// path logs only while the table has exactly those columns):
//   - a log column whose attnum is dropped now, or that is none of
//     oldNames (a column dropped before), holds values of a column that
//     is gone: it is dropped, so that a column added later under its name
//     starts empty and is filled as a new column (addLogColumns);
//   - a column renamed since (the same attnum under another name) renames
//     its log column, so the changes logged under the old name are read
//     under the new one (through temporary names: swapped names do not
//     collide);
//   - a column whose type changed has its log column converted
//     (USING col::newtype), so the logged values are read in the table's
//     type. A logged value the new type cannot hold (a narrowing change)
//     is an error that names the column; nothing is changed.
//
// With no oldNames (tracking enabled by a sluice that recorded none), log
// columns are matched to the table's by name. tx holds sluice's tracking
// lock.
func followColumns(ctx context.Context, tx pgx.Tx, t *Tracked, attrs []attribute, oldNames []string) (altered bool, err error) {
	logTab, ok, err := sinkpg.DescribeQualified(ctx, tx, "sluice", t.Log)
	if err != nil || !ok {
		return false, err
	}
	have := map[string]string{}
	for _, c := range logTab.Columns {
		if !logOwnColumns[c.Name] {
			have[c.Name] = c.PGType
		}
	}
	if len(oldNames) > 0 {
		live := map[int16]bool{}
		for _, a := range attrs {
			live[a.Num] = true
		}
		known := map[string]int16{}
		for i, n := range oldNames {
			if n != "" {
				known[n] = int16(i + 1)
			}
		}
		var gone []string
		for _, c := range logTab.Columns {
			if num, ok := known[c.Name]; !logOwnColumns[c.Name] && (!ok || !live[num]) {
				gone = append(gone, "DROP COLUMN "+sinkpg.Quote(c.Name))
				delete(have, c.Name)
			}
		}
		if len(gone) > 0 {
			if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s %s`, t.LogRef(), strings.Join(gone, ", "))); err != nil {
				return false, err
			}
			altered = true
		}
	}
	type rename struct{ from, to string }
	var renames []rename
	for _, a := range attrs {
		if int(a.Num) > len(oldNames) {
			continue
		}
		o := oldNames[a.Num-1]
		if _, logged := have[o]; o == "" || o == a.Name || !logged {
			continue
		}
		renames = append(renames, rename{o, a.Name})
	}
	for i, r := range renames {
		tmp := fmt.Sprintf("__sluice_rename_%d", i)
		if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s RENAME COLUMN %s TO %s`, t.LogRef(), sinkpg.Quote(r.from), sinkpg.Quote(tmp))); err != nil {
			return false, err
		}
		altered = true
		have[tmp] = have[r.from]
		delete(have, r.from)
	}
	for i, r := range renames {
		tmp := fmt.Sprintf("__sluice_rename_%d", i)
		if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s RENAME COLUMN %s TO %s`, t.LogRef(), sinkpg.Quote(tmp), sinkpg.Quote(r.to))); err != nil {
			return false, err
		}
		have[r.to] = have[tmp]
		delete(have, tmp)
	}
	for _, c := range t.Table.Columns {
		typ, ok := have[c.Name]
		if !ok || typ == c.PGType {
			continue
		}
		_, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s ALTER COLUMN %[2]s TYPE %[3]s USING %[2]s::%[3]s`, t.LogRef(), sinkpg.Quote(c.Name), c.PGType))
		altered = true
		if err != nil {
			return false, fmt.Errorf("%w: column %s of %s changed type from %s to %s, and values of it in the change log do not convert (%v); nothing was read and the offset did not move. To go on: give the column its earlier type again (ALTER TABLE %s ALTER COLUMN %s TYPE %s), run the jobs of every stream on %s until each has consumed the changes written before the type change (a job that stops on on_schema_change: fail, or on a value that does not fit under ignore, holds its stream there: fix it first, or drop its stream), then change the type; or drop and recreate those streams and backfill their targets",
				ErrTableChanged, sinkpg.Quote(c.Name), sinkpg.Quote(t.Table.Name), typ, c.PGType, err, sinkpg.Quote(t.Table.Name), sinkpg.Quote(c.Name), typ, t.Table.Name)
		}
	}
	return altered, nil
}

// migrateExtra moves the rows the capture function logged on the JSON
// path (__extra, while the table's columns differed from the log's) into
// the log's typed columns, which names (attnum → log column, "" for a
// dropped attnum; the attnames just recorded) describes and which are the
// table's. Each value goes to the column of its attnum (__attnums,
// logged with it, and __attnames, the names the values had): renamed
// since → its new name, dropped since → left out, a column added since
// (another attnum, whatever its name) → the value the source row holds
// for it now (its missing value, else re-read from the table by key:
// addcolumn.go). The rows are taken in groups of one shape (attnums,
// names and form).
//
// A row logged as its record text (a JSON string, rowtext.go) is parsed
// by its fields' types (moveRowText): each value is read by its column
// type's input function from the text its output function wrote, as
// exact as the typed path (TestJSONPathExact: a json value's text byte
// for byte, JSON's null apart from SQL NULL, an array's bounds).
//
// A row an earlier sluice logged as a to_json object is read as before,
// through json_populate_record, with that form's losses (a json value's
// surrounding whitespace and the escapes of a bare string, an array's
// lower bound, JSON's null read as SQL NULL): a group whose names are
// the log's columns (the common case: a column added, or dropped under a
// name no column took since) from its JSON as it is, the others through
// JSON objects rebuilt under the log's names.
//
// Rows logged by an earlier sluice carry no attnums and are matched by
// name; one with a value under a name the table no longer has (renamed,
// or dropped) cannot be told apart and is refused (legacyExtraError),
// changing nothing.
func migrateExtra(ctx context.Context, tx pgx.Tx, t *Tracked, names []string) error {
	cols := make([]string, len(t.Table.Columns))
	vals := make([]string, len(t.Table.Columns))
	for i, c := range t.Table.Columns {
		cols[i] = sinkpg.Quote(c.Name)
		vals[i] = "r." + cols[i]
	}
	if len(cols) == 0 {
		return nil
	}
	var live []string
	isLive := map[string]bool{}
	for _, n := range names {
		if n != "" {
			live = append(live, n)
			isLive[n] = true
		}
	}
	wrap := func(err error) error {
		return fmt.Errorf("move the changes captured after a change of the columns of %s into its change log's columns: %w", sinkpg.Quote(t.Table.Name), err)
	}
	var keys []string
	var legacy int64
	err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(DISTINCT l.__seq), coalesce(pg_catalog.array_agg(DISTINCT k.k), '{}') FROM %s l, pg_catalog.json_object_keys(l.__extra) k(k)
		WHERE l.__extra IS NOT NULL AND l.__attnums IS NULL AND k.k <> ALL($1::text[])`, t.LogRef()), live).Scan(&legacy, &keys)
	if err != nil {
		return wrap(err)
	}
	if legacy > 0 {
		return legacyExtraError(t, legacy, keys)
	}
	fill, err := newAddedFill(ctx, tx, t)
	if err != nil {
		return wrap(err)
	}
	// setFrom moves the rows where selects into the typed columns: from
	// is a FROM item r holding the row's values under the log's column
	// names, vals the values, by column. The statement is not prepared
	// for the connection's cache: from may name a type made for it
	// (rowTextFrom).
	setFrom := func(from string, vals []string, where string, args ...any) error {
		_, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %[1]s l SET (%[2]s) = (SELECT %[3]s FROM %[4]s),
				__extra = NULL, __attnums = NULL, __attnames = NULL
			WHERE l.__extra IS NOT NULL AND %[5]s`, t.LogRef(), strings.Join(cols, ", "), strings.Join(vals, ", "), from, where), append([]any{pgx.QueryExecModeDescribeExec}, args...)...)
		return err
	}
	// set: the rows' JSON object src populating the record r.
	set := func(src string, vals []string, where string, args ...any) error {
		return setFrom(fmt.Sprintf(`pg_catalog.json_populate_record(NULL::%s, %s) r`, t.LogRef(), src), vals, where, args...)
	}
	// Rows of an earlier sluice: a column whose name the JSON lacks was
	// added after the row was logged.
	legacyVals := make([]string, len(vals))
	for i, c := range t.Table.Columns {
		legacyVals[i] = vals[i]
		if v, ok, err := fill.expr(ctx, tx, c.Name, "r"); err != nil {
			return wrap(err)
		} else if ok {
			legacyVals[i] = fmt.Sprintf(`CASE WHEN l.__extra OPERATOR(pg_catalog.->) %s IS NULL THEN %s ELSE %s END`, sqlLiteral(c.Name), v, vals[i])
		}
	}
	if err := set("l.__extra", legacyVals, "l.__attnums IS NULL"); err != nil {
		return wrap(err)
	}
	rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT DISTINCT l.__attnums, l.__attnames, pg_catalog.json_typeof(l.__extra) = 'string' FROM %s l WHERE l.__extra IS NOT NULL`, t.LogRef()))
	if err != nil {
		return wrap(err)
	}
	type shape struct {
		nums  []int16
		names []string
		text  bool // the row's record text (rowtext.go), else its to_json object
	}
	var shapes []shape
	for rows.Next() {
		var s shape
		if err := rows.Scan(&s.nums, &s.names, &s.text); err != nil {
			rows.Close()
			return wrap(err)
		}
		shapes = append(shapes, s)
	}
	if err := rows.Err(); err != nil {
		return wrap(err)
	}
	for _, sh := range shapes {
		if len(sh.nums) != len(sh.names) {
			return wrap(fmt.Errorf("change-log rows of sluice.%s hold %d attnums but %d names", sinkpg.Quote(t.Log), len(sh.nums), len(sh.names)))
		}
		// to: the log column of each JSON value ("" none).
		to := make([]string, len(sh.nums))
		asIs := true
		logged := map[string]bool{}
		for i, n := range sh.nums {
			if int(n) >= 1 && int(n) <= len(names) {
				to[i] = names[n-1]
				logged[to[i]] = true
			}
			if to[i] != sh.names[i] && (to[i] != "" || isLive[sh.names[i]]) {
				asIs = false
			}
		}
		// A column none of the row's values is of was added after the
		// row was logged: the value the source row holds for it now.
		shVals := slices.Clone(vals)
		var unfilled []string
		for i, c := range t.Table.Columns {
			if logged[c.Name] {
				continue
			}
			if v, ok, err := fill.expr(ctx, tx, c.Name, "r"); err != nil {
				return wrap(err)
			} else if ok {
				shVals[i] = v
			} else {
				unfilled = append(unfilled, c.Name)
			}
		}
		where := "l.__attnums = $1 AND l.__attnames = $2 AND pg_catalog.json_typeof(l.__extra) <> 'string'"
		if sh.text {
			where = "l.__attnums = $1 AND l.__attnames = $2 AND pg_catalog.json_typeof(l.__extra) = 'string'"
		}
		if len(unfilled) > 0 {
			var n int64
			if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s l WHERE l.__extra IS NOT NULL AND %s`, t.LogRef(), where), sh.nums, sh.names).Scan(&n); err != nil {
				return wrap(err)
			}
			return unfillableError(t, unfilled, n)
		}
		switch {
		case sh.text:
			err = moveRowText(ctx, tx, t, to, func(from string) error { return setFrom(from, shVals, where, sh.nums, sh.names) })
		case asIs:
			err = set("l.__extra", shVals, where, sh.nums, sh.names)
		default:
			err = set(`(SELECT pg_catalog.json_object_agg(m.name, e.value)
				FROM pg_catalog.json_each(l.__extra) WITH ORDINALITY e(key, value, i)
				JOIN pg_catalog.unnest($3::pg_catalog.text[]) WITH ORDINALITY m(name, i) ON m.i = e.i WHERE m.name <> '')`, shVals, where, sh.nums, sh.names, to)
		}
		if err != nil {
			return wrap(err)
		}
	}
	return nil
}

// legacyExtraError refuses n change-log rows of t that an earlier sluice
// logged as JSON keyed by column names only, with values under names the
// table no longer has (keys): a rename and a drop followed by an add look
// alike there.
func legacyExtraError(t *Tracked, n int64, keys []string) error {
	return fmt.Errorf("%w: %d change(s) of %s were captured as JSON by an earlier sluice with values of column(s) %s, which %s no longer has under that name; renamed and dropped columns cannot be told apart in them, so nothing was read and the offset did not move. Rename the column(s) back and run the jobs of the streams on %s (the run brings the changes in under the old name), or drop and recreate those streams and run sluice backfill on their jobs",
		ErrTableChanged, n, sinkpg.Quote(t.Table.Name), strings.Join(keys, ", "), sinkpg.Quote(t.Table.Name), t.Table.Name)
}

// extraRowsError is the refusal of a read whose window holds n rows
// captured as JSON (the table's columns changed since tracking was
// enabled), with the one statement that moves past it losing nothing.
func extraRowsError(t *Tracked, n int64) error {
	return fmt.Errorf("%w: %d change(s) of %s were captured after a column of it was added, dropped, renamed or changed type, and are held as JSON until its change log is brought in line with its columns (%w: the run plans again, and describing the stream does it); nothing was read and the offset did not move. ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'true') does the same",
		ErrTableChanged, n, sinkpg.Quote(t.Table.Name), runner.ErrPlanStale, t.Table.Name)
}

// logBehind reports whether the change log of t (described by checkLog)
// lags the table's columns although every column has a log column: a
// column dropped, renamed or added since tracking was last enabled or
// brought in line (sluice.tracking.attnames against the table's live
// columns), or rows the capture logged as JSON (__extra); or whether its
// capture function was written by a sluice that logged the JSON path's
// rows as to_json objects (funcCurrentSQL), which bringing the log in
// line rewrites. One row of sluice.tracking with its function's source,
// the table's pg_attribute rows and one probe of the log's partial index
// on __extra.
func logBehind(ctx context.Context, q sinkpg.Querier, t *Tracked) (bool, error) {
	if t.Relid != 0 {
		var names []string
		var current bool
		err := q.QueryRow(ctx, `SELECT coalesce(attnames, '{}'), `+funcCurrentSQL+` FROM sluice.tracking WHERE table_name = $1`, t.Key, rowTextMark).Scan(&names, &current)
		if err != nil {
			return false, err
		}
		if !current {
			return true, nil
		}
		attrs, err := tableAttributes(ctx, q, t.Relid)
		if err != nil {
			return false, err
		}
		if !slices.Equal(names, attnamesOf(attrs)) {
			return true, nil
		}
	}
	if pending, err := pendingRereads(ctx, q, t); err != nil || len(pending) > 0 {
		return len(pending) > 0, err
	}
	if !t.HasExtra {
		return false, nil
	}
	var extra bool
	err := q.QueryRow(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s l WHERE l.__extra IS NOT NULL)`, t.LogRef())).Scan(&extra)
	return extra, err
}

// followColumnsNow brings the change log of the table of stream s (t)
// in line with the table's columns, so that a run reads every change
// with every column without anyone enabling tracking again: the log's
// columns follow the table's by attnum (followColumns; new ones added),
// the capture function is rewritten for them and the tracking's attnames
// recorded — one transaction that locks only the log, and only when a
// log column changes (ALTER TABLE on the log; CREATE OR REPLACE FUNCTION
// keeps the function's oid, so the triggers on the application's table
// are not touched and the table is not locked) — then, in a second
// transaction that locks no more than the rows it updates, the rows
// logged as JSON are moved into the typed columns (migrateExtra). Each
// transaction takes sluice's tracking lock and waits at most lockAttempt
// per attempt, as enabling does (locks.go).
//
// The capture pairs UPDATE images under the primary key recorded when
// tracking was enabled; after the key changed, this enables tracking
// again instead (EnableTracking: the pairs logged under the old key are
// unmarked while the table is locked, so no statement can still log
// under the old key afterwards), which refuses a key that unread changes
// have no value for (ErrKeyNotLogged). A failure (a narrowing type change
// whose logged values do not convert, a role that may not alter the log)
// is returned, saying so.
func (b *Backend) followColumnsNow(ctx context.Context, s *runner.StreamInfo, t *Tracked) error {
	wrap := func(err error) error {
		return fmt.Errorf("table stream %s: the columns or the primary key of %s changed, and %w: %w", s.Name, sinkpg.Quote(t.Table.Name), ErrLogNotAligned, err)
	}
	if t.Relid == 0 || !t.HasExtra || len(t.PairedKey) > 0 && !slices.Equal(t.PairedKey, t.Table.Key) {
		b.log.Info("the primary key of a tracked table changed (or its tracking predates this sluice): enabling tracking again", "stream", s.Name, "table", t.Table.Name)
		if err := b.EnableTracking(ctx, t.Table.Name); err != nil {
			return wrap(err)
		}
		return nil
	}
	b.log.Info("the columns of a tracked table changed: bringing its change log in line", "stream", s.Name, "table", t.Table.Name)
	var names []string
	lock := func(ctx context.Context, tx pgx.Tx) (tableLock, error) {
		var relid *uint32
		err := tx.QueryRow(ctx, `SELECT to_regclass($1)::oid`, t.LogRef()).Scan(&relid)
		if relid == nil {
			return tableLock{mode: accessExclusive}, err
		}
		return tableLock{relid: *relid, mode: accessExclusive}, err
	}
	err := b.withTableLock(ctx, "bring the change log in line", t.LogRef(), lock, func(tx pgx.Tx) error {
		var err error
		names, err = b.alignLog(ctx, tx, t.Key, false)
		return err
	})
	if errors.Is(err, errKeyChanged) {
		b.log.Info("the primary key of a tracked table changed: enabling tracking again", "stream", s.Name, "table", t.Table.Name)
		err = b.EnableTracking(ctx, t.Table.Name)
	}
	if err != nil {
		return wrap(err)
	}
	err = b.withTableLock(ctx, "bring the change log in line", t.LogRef(), lock, func(tx pgx.Tx) error {
		cur, ok, err := b.tracked(ctx, tx, t.Key)
		if err != nil || !ok {
			return err
		}
		if err := rereadPending(ctx, tx, cur); err != nil {
			return err
		}
		var now []string
		if err := tx.QueryRow(ctx, `SELECT coalesce(attnames, '{}') FROM sluice.tracking WHERE table_name = $1`, t.Key).Scan(&now); err != nil {
			return err
		}
		if !slices.Equal(now, names) || !sameColumns(cur.Table, names) {
			return nil // changed again meanwhile: the next read brings it in line
		}
		return migrateExtra(ctx, tx, cur, names)
	})
	if err != nil {
		return wrap(err)
	}
	return nil
}

// errKeyChanged: alignLog found the primary key changed (a concurrent
// ALTER); followColumnsNow enables tracking again instead.
var errKeyChanged = errors.New("primary key changed")

// sameColumns reports whether tab's columns are, in order, the live
// names of names (attnum → name).
func sameColumns(tab *sinkpg.Table, names []string) bool {
	var live []string
	for _, n := range names {
		if n != "" {
			live = append(live, n)
		}
	}
	if len(live) != len(tab.Columns) {
		return false
	}
	for i, c := range tab.Columns {
		if c.Name != live[i] {
			return false
		}
	}
	return true
}

// alignLog is followColumnsNow's first transaction (tx holds sluice's
// tracking lock): it reads the tracking of the table tracked as key and
// the table's columns, makes the log's typed columns the table's
// (followColumns, then the missing ones added), rewrites the capture
// function for them and records them as the tracking's attnames, which
// it returns. The table's columns are read twice around describing it; a
// DDL in between is refused (runner.ErrPlanStale: the run plans again),
// so the function's column list and its shape check agree. The function
// logs typed rows only while the table has exactly those columns, so a
// DDL committed after this read makes it log JSON again. With rewrite
// the function is written again even when nothing changed (a renamed
// table's notify channel, followRename); so it is when an earlier sluice
// wrote it (funcCurrentSQL: it logs the JSON path's rows as to_json
// objects).
func (b *Backend) alignLog(ctx context.Context, tx pgx.Tx, key string, rewrite bool) ([]string, error) {
	t, ok, err := b.tracked(ctx, tx, key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotTracked, sinkpg.Quote(key))
	}
	if len(t.PairedKey) > 0 && !slices.Equal(t.PairedKey, t.Table.Key) {
		return nil, errKeyChanged
	}
	attrs, err := tableAttributes(ctx, tx, t.Relid)
	if err != nil {
		return nil, err
	}
	if again, err := tableAttributes(ctx, tx, t.Relid); err != nil {
		return nil, err
	} else if !slices.Equal(attrs, again) || !sameColumns(t.Table, attnamesOf(attrs)) {
		return nil, fmt.Errorf("%w: the columns of %s changed while its change log was brought in line", runner.ErrPlanStale, sinkpg.Quote(t.Table.Name))
	}
	var oldNames []string
	var recorded *uint32 // the oid the function was written for (its shape check names it)
	var current bool     // the function logs the JSON path's rows as record text
	if err := tx.QueryRow(ctx, `SELECT coalesce(attnames, '{}'), relid, `+funcCurrentSQL+` FROM sluice.tracking WHERE table_name = $1`, key, rowTextMark).Scan(&oldNames, &recorded, &current); err != nil {
		return nil, err
	}
	altered, err := followColumns(ctx, tx, t, attrs, oldNames)
	if err != nil {
		return nil, err
	}
	logTab, ok, err := sinkpg.DescribeQualified(ctx, tx, "sluice", t.Log)
	if err != nil || !ok {
		return nil, errors.Join(err, errorIf(!ok, fmt.Errorf("%w: change log sluice.%s of %s is missing; enable change tracking again", ErrTableChanged, sinkpg.Quote(t.Log), sinkpg.Quote(t.Table.Name))))
	}
	have := map[string]bool{}
	for _, c := range logTab.Columns {
		have[c.Name] = true
	}
	var adds []string
	if !have["__attnums"] {
		adds = append(adds, "ADD COLUMN __attnums pg_catalog.int2[]")
	}
	if !have["__attnames"] {
		adds = append(adds, "ADD COLUMN __attnames pg_catalog.text[]")
	}
	if len(adds) > 0 {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s %s`, t.LogRef(), strings.Join(adds, ", "))); err != nil {
			return nil, err
		}
	}
	added, err := addLogColumns(ctx, tx, t, have, true)
	if err != nil {
		return nil, err
	}
	names := attnamesOf(attrs)
	// A restored database gives the table a new oid: the function's shape
	// check, written for the old one, is false, and every row travels as
	// JSON until the function is written again for this oid.
	sameOid := recorded != nil && *recorded == t.Relid
	if !rewrite && !altered && !added && len(adds) == 0 && slices.Equal(names, oldNames) && sameOid && current {
		return names, nil // only rows logged as JSON to move: the function is the columns' already
	}
	for _, st := range captureFuncDDL(t, attrs) {
		if _, err := tx.Exec(ctx, st); err != nil {
			return nil, fmt.Errorf("%w (in: %s)", err, firstLine(st))
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE sluice.tracking SET attnames = $1, relid = $3 WHERE table_name = $2`, names, key, t.Relid); err != nil {
		return nil, err
	}
	return names, nil
}

// countExtraRows counts the rows of the window after from (nil: all) up
// to now that were captured as JSON, along the log's partial index on
// them.
func countExtraRows(ctx context.Context, tx pgx.Tx, t *Tracked, from *Position, now Position) (int64, error) {
	if !t.HasExtra {
		return 0, nil
	}
	var n int64
	err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s l WHERE l.__extra IS NOT NULL AND %s`, t.LogRef(), WindowPredicate("l.__txid", from, now))).Scan(&n)
	return n, err
}
