package sqlite

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/internal/sqlitex"
)

// tsExpr is the commit time the triggers record: the time of the statement
// that made the change, UTC, millisecond precision (SQLite's 'now'), in the
// TIMESTAMP storage form with an explicit +00:00 zone.
const tsExpr = `strftime('%Y-%m-%d %H:%M:%f','now') || '+00:00'`

// captureTimeLayout is the Go layout of tsExpr's text: three fraction
// digits always. The commit time of a stream's initial rows (its
// creation time) is written in it, so that a job pushed down into the
// same file stores every commit time in one width (docs/sinks.md).
const captureTimeLayout = "2006-01-02 15:04:05.000-07:00"

// absent is the default of new-image log columns added after the log
// was created (a trigger records NULL, not this, for a column it names
// but the table no longer has: see captureSpec.triggers): "this change's
// value of the column is not in the log". It is a 15-byte BLOB no
// application writes by accident.
const absent = `x'f0736c756963653a616273656e74'`

// Change-log op codes (doc.go), written as literals in the trigger SQL:
//
//	I   INSERT
//	U   UPDATE keeping the primary key
//	D   DELETE, or a row a REPLACE removed
//	KD  UPDATE changing the primary key: the old row leaves
//	KI  UPDATE changing the primary key: the new row arrives

// captureVersion marks triggers of this design in their text; triggers
// without it (installed by an earlier sluice) are replaced on first use.
const captureVersion = "sluice capture v2"

// triggerKinds are the capture triggers of a table, as name parts.
var triggerKinds = []string{"bins", "ins", "bupd", "upd", "bdel", "del"}

func oldCol(c string) string { return sqlitex.Quote("o_" + c) }
func newCol(c string) string { return sqlitex.Quote("n_" + c) }

// suffix is the part of a change log's name after "sluice_changes_": the
// table's name when capture was (last) installed or renamed.
func suffix(log string) string { return strings.TrimPrefix(log, "sluice_changes_") }

// triggerName names the capture trigger of kind for the change log with
// suffix sfx (unquoted).
func triggerName(kind, sfx string) string { return "sluice_capture_" + kind + "_" + sfx }

// pendingTable holds the images of rows about to change (see captureSpec).
func pendingTable(sfx string) string { return "sluice_pending_" + sfx }

// absentTable has the table's column names and one row of absent
// markers: the right side of the NATURAL LEFT JOIN in captureSpec.triggers.
func absentTable(sfx string) string { return "sluice_absent_" + sfx }

// marker tags a column reference in a trigger with the log column it
// fills; SQLite rewrites the reference on RENAME COLUMN and keeps the
// comment, which is how sluice learns the new name (capturedNames).
func marker(logCol string) string { return "/*sluice:" + hex.EncodeToString([]byte(logCol)) + "*/" }

// uniqueKey is one UNIQUE index (or constraint, or a non-INTEGER primary
// key) of plain columns: its columns and their collations.
type uniqueKey struct{ cols, colls []string }

// captureSpec is what the triggers of one table are generated from.
type captureSpec struct {
	table string   // the table's name
	sfx   string   // change-log suffix: log sluice_changes_<sfx>
	cols  []string // every column, in table order; log columns o_/n_<name>
	key   []string // primary key columns ("" rowid-only tables: none)
	uniq  []uniqueKey
}

// triggers returns the CREATE TRIGGER statements of s.
//
// The triggers name no column that an application's DDL can remove:
// values are read back from the table itself by rowid, as
//
//	SELECT "a" /*sluice:…*/, "b" /*…*/ FROM "t"
//	  NATURAL LEFT JOIN "sluice_absent_t" WHERE "t".rowid = …
//
// where sluice_absent_t has columns a, b and one row of absent markers: a
// column the table has resolves to the table's (the join column of a
// NATURAL join is the left table's) and a column it lost resolves to
// sluice_absent_t's — NULL, since the join compares every column the two
// share and the marker row never matches (the marker itself would show
// only for a table sharing no column with it): ALTER TABLE DROP COLUMN
// finds every reference resolvable and
// succeeds, RENAME COLUMN rewrites the references, and writes go on. Only
// primary-key and UNIQUE columns, which SQLite refuses to drop, are named
// through NEW/OLD.
//
// Old images are therefore taken BEFORE the change into the table
// sluice_pending_<sfx> (by rowid) and moved to the log by the AFTER
// trigger, so a row an application's BEFORE trigger skipped (RAISE(IGNORE),
// OR IGNORE) is never logged. BEFORE INSERT and BEFORE UPDATE also take the
// rows the new values conflict with (rowid, each UNIQUE index): REPLACE
// conflict resolution deletes those without firing delete triggers when
// recursive_triggers is off (SQLite's default for every connection), and
// the AFTER trigger logs each one that is gone as a delete. With
// recursive_triggers on, the delete triggers log them and clear them from
// the pending table first.
func (s captureSpec) triggers() []string {
	t := sqlitex.Quote(s.table)
	log := sqlitex.Quote(logTable(s.sfx))
	pend := sqlitex.Quote(pendingTable(s.sfx))
	var img, olds, news []string
	for _, c := range s.cols {
		img = append(img, sqlitex.Quote(c)+" "+marker(c))
		olds = append(olds, oldCol(c))
		news = append(news, newCol(c))
	}
	j := func(xs []string) string { return strings.Join(xs, ", ") }
	// image selects the row with rowid r as it is now.
	from := ` FROM ` + t + ` NATURAL LEFT JOIN ` + sqlitex.Quote(absentTable(s.sfx)) + ` WHERE `
	image := func(r string) string { return j(img) + from + t + `.rowid = ` + r }
	// rowids(first) selects first and the rows the NEW values collide with
	// on each UNIQUE index, one indexed lookup each (an OR of them is not
	// planned as lookups inside a trigger). The index's collation goes on
	// the column, where SQLite can still use the index.
	rowids := func(first string) string {
		parts := []string{`SELECT ` + first}
		for _, u := range s.uniq {
			var eq []string
			for i, c := range u.cols {
				col := t + "." + sqlitex.Quote(c)
				if !strings.EqualFold(u.colls[i], "BINARY") {
					col += " COLLATE " + sqlitex.Quote(u.colls[i])
				}
				eq = append(eq, col+" = NEW."+sqlitex.Quote(c))
			}
			parts = append(parts, `SELECT `+t+`.rowid FROM `+t+` WHERE `+strings.Join(eq, " AND "))
		}
		return t + `.rowid IN (` + strings.Join(parts, " UNION ALL ") + `)`
	}
	sameKey := "1"
	if len(s.key) > 0 {
		var eq []string
		for _, k := range s.key {
			eq = append(eq, "OLD."+sqlitex.Quote(k)+" IS NEW."+sqlitex.Quote(k))
		}
		sameKey = "(" + strings.Join(eq, " AND ") + ")"
	}
	gone := `(rid = NEW.rowid OR NOT EXISTS (SELECT 1 FROM ` + t + ` WHERE ` + t + `.rowid = ` + pend + `.rid))`
	logGone := func(extra string) string {
		return `INSERT INTO ` + log + ` (op, ts, rid, ` + j(olds) + `) SELECT 'D', ` + tsExpr + `, rid, ` + j(olds) + ` FROM ` + pend + ` WHERE ` + extra + gone + ` ORDER BY rid;
	DELETE FROM ` + pend + ` WHERE ` + extra + gone + `;`
	}
	setNew := `UPDATE ` + log + ` SET ` + j(news) + ` = (SELECT ` + image("NEW.rowid") + `) WHERE seq = last_insert_rowid() AND ` + sameKey + `;`
	if len(news) > 1 {
		setNew = `UPDATE ` + log + ` SET (` + j(news) + `) = (SELECT ` + image("NEW.rowid") + `) WHERE seq = last_insert_rowid() AND ` + sameKey + `;`
	}
	trig := func(kind, when, event, body string) string {
		return `CREATE TRIGGER ` + sqlitex.Quote(triggerName(kind, s.sfx)) + ` ` + when + ` ` + event + ` ON ` + t + ` FOR EACH ROW BEGIN -- ` + captureVersion + `
	` + body + `
END`
	}
	// takeOld replaces the pending images of the rows where selects. (Not
	// INSERT OR REPLACE: the conflict policy of the statement that fired
	// the trigger overrides the trigger's own.)
	takeOld := func(where string) string {
		return `DELETE FROM ` + pend + ` WHERE rid IN (SELECT ` + t + `.rowid FROM ` + t + ` WHERE ` + where + `);
	INSERT INTO ` + pend + ` (rid, ` + j(olds) + `) SELECT ` + t + `.rowid, ` + j(img) + from + where + `;`
	}
	return []string{
		trig("bins", "BEFORE", "INSERT", takeOld(rowids("NEW.rowid"))),
		trig("ins", "AFTER", "INSERT", logGone("")+`
	INSERT INTO `+log+` (op, ts, rid, `+j(news)+`) SELECT 'I', `+tsExpr+`, NEW.rowid, `+image("NEW.rowid")+`;`),
		trig("bupd", "BEFORE", "UPDATE", takeOld(rowids("OLD.rowid UNION ALL SELECT NEW.rowid"))),
		trig("upd", "AFTER", "UPDATE", logGone("rid <> OLD.rowid AND ")+`
	INSERT INTO `+log+` (op, ts, rid, `+j(olds)+`) SELECT CASE WHEN `+sameKey+` THEN 'U' ELSE 'KD' END, `+tsExpr+`, CASE WHEN `+sameKey+` THEN NEW.rowid ELSE rid END, `+j(olds)+` FROM `+pend+` WHERE rid = OLD.rowid;
	`+setNew+`
	INSERT INTO `+log+` (op, ts, rid, `+j(news)+`) SELECT 'KI', `+tsExpr+`, NEW.rowid, `+image("NEW.rowid")+` AND NOT `+sameKey+`;
	DELETE FROM `+pend+` WHERE rid = OLD.rowid;`),
		trig("bdel", "BEFORE", "DELETE", takeOld(t+`.rowid = OLD.rowid`)),
		trig("del", "AFTER", "DELETE", `INSERT INTO `+log+` (op, ts, rid, `+j(olds)+`) SELECT 'D', `+tsExpr+`, rid, `+j(olds)+` FROM `+pend+` WHERE rid = OLD.rowid;
	DELETE FROM `+pend+` WHERE rid = OLD.rowid;`),
	}
}

// dropTriggers removes the capture triggers of the log with suffix sfx,
// this design's and the earlier one's (ins, upd, del).
func dropTriggers(sfx string) []string {
	var out []string
	for _, k := range triggerKinds {
		out = append(out, `DROP TRIGGER IF EXISTS `+sqlitex.Quote(triggerName(k, sfx)))
	}
	return out
}

// dropHelpers removes the pending and absent tables of sfx.
func dropHelpers(sfx string) []string {
	return []string{`DROP TABLE IF EXISTS ` + sqlitex.Quote(pendingTable(sfx)), `DROP TABLE IF EXISTS ` + sqlitex.Quote(absentTable(sfx))}
}

// createHelpers creates the pending and absent tables of s.
func (s captureSpec) createHelpers() []string {
	var pend, cols, vals []string
	for _, c := range s.cols {
		pend = append(pend, oldCol(c))
		cols = append(cols, sqlitex.Quote(c))
		vals = append(vals, absent)
	}
	return []string{
		`CREATE TABLE ` + sqlitex.Quote(pendingTable(s.sfx)) + ` (rid INTEGER PRIMARY KEY, ` + strings.Join(pend, ", ") + `)`,
		`CREATE TABLE ` + sqlitex.Quote(absentTable(s.sfx)) + ` (` + strings.Join(cols, ", ") + `)`,
		`INSERT INTO ` + sqlitex.Quote(absentTable(s.sfx)) + ` VALUES (` + strings.Join(vals, ", ") + `)`,
	}
}

// dropCaptureDDL removes the triggers, the helper tables and the change log.
func dropCaptureDDL(sfx string) []string {
	return append(append(dropTriggers(sfx), dropHelpers(sfx)...),
		`DROP TABLE IF EXISTS `+sqlitex.Quote(logTable(sfx)))
}

func execAll(ctx context.Context, q sqlitex.Querier, stmts []string) error {
	for _, s := range stmts {
		if _, err := q.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%w (in %.80s…)", err, s)
		}
	}
	return nil
}
