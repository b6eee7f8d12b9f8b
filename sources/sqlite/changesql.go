package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
)

// OrderColumn is an extra column of the relation ChangesQueryOrdered
// returns: 0 for every change except UPDATE_AFTER, which has 1, so that
// (__commit_version, __ord) orders the changes in commit order with each
// UPDATE_BEFORE directly before its UPDATE_AFTER.
const OrderColumn = "__ord"

// ChangesQuery returns ONE SQL SELECT and its arguments that yields exactly
// the changes of stream info between from (exclusive) and to (inclusive),
// as Changes returns them (Changes runs this query):
//
//	__change_type       TEXT    INSERT | UPDATE_BEFORE | UPDATE_AFTER | DELETE
//	__commit_version    INTEGER change-log seq of the last change contributing
//	__commit_timestamp  TEXT    its statement time, UTC, ms precision ("…+00:00")
//	<table columns>     in table order, values in SQLite storage form
//
// ordered in commit order (by __commit_version; an UPDATE_BEFORE directly
// before its UPDATE_AFTER). from and to are offsets of this backend
// (to is a read point: a plain seq). When from is the offset of a
// SHOW_INITIAL_ROWS stream not yet consumed, a STANDARD read compares with
// an empty table and therefore reads the table itself: the query must then
// run in a transaction whose snapshot is at to (as Changes and Pushdown do).
// Bad offsets yield a query that fails with the reason.
func (b *Backend) ChangesQuery(info *runner.StreamInfo, from, to cdc.Offset) (query string, args []any) {
	q, args, err := changesQuery(info, from, to, false)
	if err != nil {
		// Fails when run, naming the reason: "no such table: sluice: …".
		return "SELECT * FROM " + sqlitex.Quote("sluice: "+err.Error()), nil
	}
	return q, args
}

// ChangesQueryOrdered is ChangesQuery with OrderColumn appended after the
// table columns, for callers that re-order the changes.
func (b *Backend) ChangesQueryOrdered(info *runner.StreamInfo, from, to cdc.Offset) (query string, args []any, err error) {
	return changesQuery(info, from, to, true)
}

func changesQuery(info *runner.StreamInfo, from, to cdc.Offset, withOrd bool) (string, []any, error) {
	return changesQueryWith(info, from, to, gen{withOrd: withOrd})
}

// pushQuery is the read of a pushdown: ChangesQueryOrdered's relation, but
// a STANDARD read in no particular order (the apply statements order what
// needs an order by __commit_version and OrderColumn themselves), which
// spares a sort of the whole read.
// With afterOnly (a sink that ignores UPDATE_BEFORE) a STANDARD read leaves
// each update's UPDATE_BEFORE out: its count equals UPDATE_AFTER's.
func pushQuery(info *runner.StreamInfo, from, to cdc.Offset, afterOnly bool) (string, []any, error) {
	return changesQueryWith(info, from, to, gen{withOrd: true, unordered: true, afterOnly: afterOnly})
}

// changesQueryWith renders the read with the options of o (withOrd,
// unordered).
func changesQueryWith(info *runner.StreamInfo, from, to cdc.Offset, o gen) (string, []any, error) {
	f, t, err := parseRange(from, to)
	if err != nil {
		return "", nil, err
	}
	if t.initial || t.seq < f.seq {
		return "", nil, fmt.Errorf("%w: read point %s is before offset %s", cdc.ErrBadOffset, to, from)
	}
	g := gen{info: info, log: sqlitex.Quote(logTable(info.Table)), withOrd: o.withOrd, unordered: o.unordered, afterOnly: o.afterOnly}
	if info.Mode != "APPEND_ONLY" && len(info.TableSchema.Key) == 0 {
		return "", nil, fmt.Errorf("%w: stream %s: table %s", ErrNoPrimaryKey, info.Name, info.Table)
	}
	switch {
	case info.Mode == "APPEND_ONLY" && f.initial:
		return g.appendOnlyInitial(), []any{f.seq, f.seq, f.seq, t.seq, createdArg(info)}, nil
	case info.Mode == "APPEND_ONLY":
		return g.appendOnly(), []any{f.seq, t.seq}, nil
	case f.initial:
		return g.standardInitial(), []any{f.seq, t.seq, f.seq, createdArg(info)}, nil
	default:
		return g.standard(), []any{f.seq, t.seq}, nil
	}
}

// createdArg is the commit time of the stream's initial rows: its
// creation time, in the capture's own text (captureTimeLayout:
// milliseconds, three digits always, as every other change of the log;
// the initial rows of a history pushed down into the same file had 4 or 5
// digits among the others' 3).
func createdArg(info *runner.StreamInfo) string {
	return info.Created.UTC().Format(captureTimeLayout)
}

type gen struct {
	info    *runner.StreamInfo
	log     string
	withOrd bool
	// unordered: a STANDARD read without its ORDER BY (pushQuery).
	unordered bool
	// afterOnly: a STANDARD read without UPDATE_BEFORE rows (pushQuery).
	afterOnly bool
}

func (g gen) cols() []cdc.Column { return g.info.TableSchema.Columns }

// list renders f(column) for each table column, comma-separated.
func (g gen) list(f func(c cdc.Column) string) string {
	var b strings.Builder
	for i, c := range g.cols() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f(c))
	}
	return b.String()
}

// keyExpr is the key column k of a change-log row: the new image's for
// inserts and updates, the old one's for deletes (one of them is NULL).
func keyExpr(k string) string { return "coalesce(" + newCol(k) + ", " + oldCol(k) + ")" }

func (g gen) keyList(f func(k string) string) string {
	parts := make([]string, len(g.info.TableSchema.Key))
	for i, k := range g.info.TableSchema.Key {
		parts[i] = f(k)
	}
	return strings.Join(parts, ", ")
}

func (g gen) ord(expr string) string {
	if !g.withOrd {
		return ""
	}
	return ", " + expr + " AS " + sqlitex.Quote(OrderColumn)
}

// newVal is the new image of column c in log row alias a of a STANDARD
// read: the logged value, or — when the log holds the absent marker (the
// column was added after the change was captured, or was dropped and added
// back) — the table's value for the row's key, which is the row at the
// read point since a is the key's last change up to it.
func (g gen) newVal(a string, c cdc.Column) string {
	if slices.Contains(g.info.TableSchema.Key, c.Name) {
		return a + "." + newCol(c.Name) // a key column is never added later
	}
	var on []string
	for _, k := range g.info.TableSchema.Key {
		on = append(on, "sluice_cur."+sqlitex.Quote(k)+" = "+a+"."+newCol(k))
	}
	return "CASE WHEN " + a + "." + newCol(c.Name) + " IS " + absent + " THEN (SELECT sluice_cur." + sqlitex.Quote(c.Name) +
		" FROM " + sqlitex.Quote(g.info.Table) + " AS sluice_cur WHERE " + strings.Join(on, " AND ") + ") ELSE " + a + "." + newCol(c.Name) + " END"
}

// insertedVal is column c of insert log row alias a (APPEND_ONLY): the
// logged value, or when absent the table's value for the row's rowid
// (checkAppendAbsent refuses the read where that is not the inserted one).
func (g gen) insertedVal(a string, c cdc.Column) string {
	return "CASE WHEN " + a + "." + newCol(c.Name) + " IS " + absent + " THEN (SELECT sluice_cur." + sqlitex.Quote(c.Name) +
		" FROM " + sqlitex.Quote(g.info.Table) + " AS sluice_cur WHERE sluice_cur.rowid = " + a + ".rid) ELSE " + a + "." + newCol(c.Name) + " END"
}

const metaSelect = `%s AS "__change_type", %s AS "__commit_version", %s AS "__commit_timestamp"`

// standard: net change per key over the log rows in (?, ?]. For each key,
// f is its first log row in the range (the state before: absent when f is
// an insert) and l its last (the state after: absent when l is a delete).
func (g gen) standard() string {
	var diff []string
	for _, c := range g.cols() {
		if c.Type.Kind == cdc.KindDecimal {
			// DECIMAL is stored as text whose form depends on the writer
			// ('2', '2.00'): the same number is no change.
			diff = append(diff, "NOT sluice_dec_same("+oldCol(c.Name)+", "+newCol(c.Name)+")")
			continue
		}
		diff = append(diff, oldCol(c.Name)+" IS NOT "+newCol(c.Name))
	}
	images := g.list(func(c cdc.Column) string { return "f." + oldCol(c.Name) }) + ", " +
		g.list(func(c cdc.Column) string { return g.newVal("l", c) + " AS " + newCol(c.Name) })
	// e.ord: 0 for an update's UPDATE_BEFORE row and every other change,
	// 1 for its UPDATE_AFTER row; afterOnly reads only the latter.
	pair, ordExpr := "(SELECT 0 AS ord UNION ALL SELECT 1) AS e ON e.ord = 0 OR n.kind = 'U'", "e.ord"
	if g.afterOnly {
		pair, ordExpr = "(SELECT 1 AS ord) AS e", "CASE n.kind WHEN 'U' THEN 1 ELSE 0 END"
	}
	row := g.list(func(c cdc.Column) string {
		return "CASE WHEN n.kind = 'D' OR (n.kind = 'U' AND e.ord = 0) THEN n." + oldCol(c.Name) + " ELSE n." + newCol(c.Name) + " END AS " + sqlitex.Quote(c.Name)
	})
	return `WITH sluice_g AS (
	SELECT min(seq) AS s0, max(seq) AS s1 FROM ` + g.log + `
	WHERE seq > ? AND seq <= ?
	GROUP BY ` + g.keyList(keyExpr) + `
), sluice_r AS (
	SELECT g.s1 AS ver, l.ts AS ts, f.op AS fop, l.op AS lop,
		` + images + `
	FROM sluice_g AS g JOIN ` + g.log + ` AS f ON f.seq = g.s0 JOIN ` + g.log + ` AS l ON l.seq = g.s1
), sluice_n AS MATERIALIZED (
	SELECT ver, ts,
		CASE
			WHEN fop IN ('I', 'KI') THEN CASE WHEN lop IN ('D', 'KD') THEN NULL ELSE 'I' END
			WHEN lop IN ('D', 'KD') THEN 'D'
			WHEN ` + strings.Join(diff, " OR ") + ` THEN 'U'
		END AS kind,
		` + g.list(func(c cdc.Column) string { return oldCol(c.Name) }) + `, ` + g.list(func(c cdc.Column) string { return newCol(c.Name) }) + `
	FROM sluice_r AS r
)
SELECT ` + fmt.Sprintf(metaSelect,
		`CASE n.kind WHEN 'I' THEN 'INSERT' WHEN 'D' THEN 'DELETE' WHEN 'U' THEN CASE e.ord WHEN 0 THEN 'UPDATE_BEFORE' ELSE 'UPDATE_AFTER' END END`,
		"n.ver", "n.ts") + `,
	` + row + g.ord(ordExpr) + `
FROM sluice_n AS n JOIN ` + pair + `
WHERE n.kind IS NOT NULL` + g.orderBy("n.ver, e.ord")
}

// orderBy renders ORDER BY cols unless the read is unordered.
func (g gen) orderBy(cols string) string {
	if g.unordered {
		return ""
	}
	return "\nORDER BY " + cols
}

// appendOnly: every insert in (?, ?] with its inserted values.
func (g gen) appendOnly() string {
	return `SELECT ` + fmt.Sprintf(metaSelect, `'INSERT'`, "a.seq", "a.ts") + `,
	` + g.list(func(c cdc.Column) string { return g.insertedVal("a", c) + " AS " + sqlitex.Quote(c.Name) }) + g.ord("0") + `
FROM ` + g.log + ` AS a
WHERE a.op = 'I' AND a.seq > ? AND a.seq <= ?
ORDER BY a.seq`
}

// standardInitial: the table at the read point, every row an INSERT (the
// state at a not-yet-consumed SHOW_INITIAL_ROWS offset counts as empty).
// A row's version is the seq of its last change in (c, to], else c (the
// stream's creation point) with the stream's creation time.
// Arguments: c, to, c, created.
func (g gen) standardInitial() string {
	var on []string
	for i, k := range g.info.TableSchema.Key {
		on = append(on, fmt.Sprintf("g.k%d = t.%s", i, sqlitex.Quote(k)))
	}
	var keyCols []string
	for i, k := range g.info.TableSchema.Key {
		keyCols = append(keyCols, fmt.Sprintf("%s AS k%d", keyExpr(k), i))
	}
	return `WITH sluice_g AS (
	SELECT max(seq) AS s1, ` + strings.Join(keyCols, ", ") + ` FROM ` + g.log + `
	WHERE seq > ? AND seq <= ?
	GROUP BY ` + g.keyList(keyExpr) + `
)
SELECT ` + fmt.Sprintf(metaSelect, `'INSERT'`, "coalesce(g.s1, ?)", "coalesce(l.ts, ?)") + `,
	` + g.list(func(c cdc.Column) string { return "t." + sqlitex.Quote(c.Name) + " AS " + sqlitex.Quote(c.Name) }) + g.ord("0") + `
FROM ` + sqlitex.Quote(g.info.Table) + ` AS t
LEFT JOIN sluice_g AS g ON ` + strings.Join(on, " AND ") + `
LEFT JOIN ` + g.log + ` AS l ON l.seq = g.s1
ORDER BY 2, ` + g.keyList(func(k string) string { return "t." + sqlitex.Quote(k) })
}

// appendOnlyInitial: the rows present at the creation point c, as INSERT
// with version c and the creation time, then every insert in (c, to].
// Rows are identified by rowid: a row present at c is either untouched
// since (no log row for its rowid after c) or its first log row after c is
// not an insert, whose old image is its value at c.
// Arguments: c, c, c, to, created.
func (g gen) appendOnlyInitial() string {
	return `WITH sluice_f AS (
	SELECT rid, min(seq) AS s0 FROM ` + g.log + ` WHERE seq > ? GROUP BY rid
), sluice_init AS (
	SELECT ` + g.list(func(c cdc.Column) string { return "t." + sqlitex.Quote(c.Name) + " AS " + newCol(c.Name) }) + `
	FROM ` + sqlitex.Quote(g.info.Table) + ` AS t LEFT JOIN sluice_f AS f ON f.rid = t.rowid
	WHERE f.rid IS NULL
	UNION ALL
	SELECT ` + g.list(func(c cdc.Column) string { return "x." + oldCol(c.Name) }) + `
	FROM sluice_f AS f JOIN ` + g.log + ` AS x ON x.seq = f.s0
	WHERE x.op NOT IN ('I', 'KI')
), sluice_all AS (
	SELECT ? AS ver, NULL AS ts, 0 AS sub, ` + g.list(func(c cdc.Column) string { return newCol(c.Name) }) + ` FROM sluice_init
	UNION ALL
	SELECT a.seq, a.ts, 1, ` + g.list(func(c cdc.Column) string { return g.insertedVal("a", c) }) + ` FROM ` + g.log + ` AS a
	WHERE a.op = 'I' AND a.seq > ? AND a.seq <= ?
)
SELECT ` + fmt.Sprintf(metaSelect, `'INSERT'`, "ver", "coalesce(ts, ?)") + `,
	` + g.list(func(c cdc.Column) string { return newCol(c.Name) + " AS " + sqlitex.Quote(c.Name) }) + g.ord("0") + `
FROM sluice_all
ORDER BY ver, sub`
}

// checkAppendAbsent refuses an APPEND_ONLY read of (from, to] that would
// return an insert without the value one of its columns had when inserted:
// the column was added to the table after the insert was captured (before
// sluice re-installed capture) and the row was changed or deleted since,
// so the table no longer holds that value. It returns an error wrapping
// ErrSchemaChanged naming the table and the number of such rows; nil for
// STANDARD streams and when no such row is in range.
func checkAppendAbsent(ctx context.Context, q sqlitex.Querier, info *runner.StreamInfo, from, to cdc.Offset) error {
	if info.Mode != "APPEND_ONLY" {
		return nil
	}
	f, t, err := parseRange(from, to)
	if err != nil {
		return err
	}
	var abs []string
	for _, c := range info.TableSchema.Columns {
		abs = append(abs, "a."+newCol(c.Name)+" IS "+absent)
	}
	log := sqlitex.Quote(logTable(info.Table))
	tbl := sqlitex.Quote(info.Table)
	var n int64
	err = q.QueryRowContext(ctx, `SELECT count(*) FROM `+log+` AS a
		WHERE a.op = 'I' AND a.seq > ? AND a.seq <= ? AND (`+strings.Join(abs, " OR ")+`)
		AND (NOT EXISTS (SELECT 1 FROM `+tbl+` AS x WHERE x.rowid = a.rid)
			OR EXISTS (SELECT 1 FROM `+log+` AS z WHERE z.rid = a.rid AND z.seq > a.seq AND z.seq <= ?))`,
		f.seq, t.seq, t.seq).Scan(&n)
	if err != nil {
		return fmt.Errorf("check stream %s for inserts without their values: %w", info.Name, err)
	}
	if n > 0 {
		return fmt.Errorf("table stream %s: %w: %d row(s) of %s were inserted after a column was added to the table and before sluice re-installed its capture, and were changed or deleted since: the value the new column had when they were inserted is not known. "+
			"Nothing was consumed. To go on without them: CREATE OR REPLACE TABLE STREAM %s ON TABLE %s WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY') (the new stream starts after every pending insert; copy what you need from the table first)",
			info.Name, ErrSchemaChanged, n, info.Table, info.Name, info.Table)
	}
	return nil
}
