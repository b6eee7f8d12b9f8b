package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
)

// tsExpr is the commit time the triggers record: the time of the statement
// that made the change, UTC, millisecond precision (SQLite's 'now'), in the
// TIMESTAMP storage form with an explicit +00:00 zone.
const tsExpr = `strftime('%Y-%m-%d %H:%M:%f','now') || '+00:00'`

// Change-log op codes (doc.go).
const (
	opInsert    = "I"  // INSERT
	opUpdate    = "U"  // UPDATE keeping the primary key
	opDelete    = "D"  // DELETE
	opKeyDelete = "KD" // UPDATE changing the primary key: the old row leaves
	opKeyInsert = "KI" // UPDATE changing the primary key: the new row arrives
)

func oldCol(c string) string { return sqlitex.Quote("o_" + c) }
func newCol(c string) string { return sqlitex.Quote("n_" + c) }

// triggerName names the capture trigger of table for kind ins/upd/del.
func triggerName(kind, table string) string {
	return sqlitex.Quote("sluice_capture_" + kind + "_" + table)
}

// captureDDL returns the statements that create the change log of table
// and its capture triggers.
func captureDDL(table string, s cdc.Schema) []string {
	log := sqlitex.Quote(logTable(table))
	t := sqlitex.Quote(table)
	var cols, olds, news, oldVals, newVals []string
	for _, c := range s.Columns {
		// No declared type: BLOB affinity stores each value exactly as the
		// table holds it.
		cols = append(cols, oldCol(c.Name), newCol(c.Name))
		olds = append(olds, oldCol(c.Name))
		news = append(news, newCol(c.Name))
		oldVals = append(oldVals, "OLD."+sqlitex.Quote(c.Name))
		newVals = append(newVals, "NEW."+sqlitex.Quote(c.Name))
	}
	sameKey := "1"
	if len(s.Key) > 0 {
		var eq []string
		for _, k := range s.Key {
			eq = append(eq, "OLD."+sqlitex.Quote(k)+" IS NEW."+sqlitex.Quote(k))
		}
		sameKey = strings.Join(eq, " AND ")
	}
	j := func(xs []string) string { return strings.Join(xs, ", ") }
	return []string{
		`CREATE TABLE ` + log + ` (seq INTEGER PRIMARY KEY AUTOINCREMENT, op TEXT NOT NULL, ts TEXT NOT NULL, rid INTEGER, ` + j(cols) + `)`,
		`CREATE TRIGGER ` + triggerName("ins", table) + ` AFTER INSERT ON ` + t + ` FOR EACH ROW BEGIN
	INSERT INTO ` + log + ` (op, ts, rid, ` + j(news) + `) VALUES ('I', ` + tsExpr + `, NEW.rowid, ` + j(newVals) + `);
END`,
		`CREATE TRIGGER ` + triggerName("del", table) + ` AFTER DELETE ON ` + t + ` FOR EACH ROW BEGIN
	INSERT INTO ` + log + ` (op, ts, rid, ` + j(olds) + `) VALUES ('D', ` + tsExpr + `, OLD.rowid, ` + j(oldVals) + `);
END`,
		`CREATE TRIGGER ` + triggerName("upd", table) + ` AFTER UPDATE ON ` + t + ` FOR EACH ROW BEGIN
	INSERT INTO ` + log + ` (op, ts, rid, ` + j(olds) + `, ` + j(news) + `) SELECT 'U', ` + tsExpr + `, NEW.rowid, ` + j(oldVals) + `, ` + j(newVals) + ` WHERE ` + sameKey + `;
	INSERT INTO ` + log + ` (op, ts, rid, ` + j(olds) + `) SELECT 'KD', ` + tsExpr + `, OLD.rowid, ` + j(oldVals) + ` WHERE NOT (` + sameKey + `);
	INSERT INTO ` + log + ` (op, ts, rid, ` + j(news) + `) SELECT 'KI', ` + tsExpr + `, NEW.rowid, ` + j(newVals) + ` WHERE NOT (` + sameKey + `);
END`,
	}
}

// dropCaptureDDL removes what captureDDL created.
func dropCaptureDDL(table string) []string {
	return []string{
		`DROP TRIGGER IF EXISTS ` + triggerName("ins", table),
		`DROP TRIGGER IF EXISTS ` + triggerName("upd", table),
		`DROP TRIGGER IF EXISTS ` + triggerName("del", table),
		`DROP TABLE IF EXISTS ` + sqlitex.Quote(logTable(table)),
	}
}

func execAll(ctx context.Context, q sqlitex.Querier, stmts []string) error {
	for _, s := range stmts {
		if _, err := q.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%w (in %.60s…)", err, s)
		}
	}
	return nil
}

// enableTracking installs change capture on table (idempotent when the
// columns did not change). It runs in tx.
func enableTracking(ctx context.Context, tx *sqlitex.Tx, table string) error {
	name, ok, err := sqlitex.TableName(ctx, tx, table)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("cannot enable change tracking: %w: %s", ErrNoTable, table)
	}
	schema, _, err := sqlitex.TableSchema(ctx, tx, name)
	if err != nil {
		return err
	}
	cur, tracked, err := lookupTracking(ctx, tx, name)
	if err != nil {
		return err
	}
	if tracked {
		if slices.Equal(cur.columns, schema.Names()) {
			return nil
		}
		streams, err := listStreams(ctx, tx, name)
		if err != nil {
			return err
		}
		if len(streams) > 0 {
			return fmt.Errorf("%w: table %s has new columns; drop its streams (%s) and enable change tracking again", ErrSchemaChanged, name, streamNames(streams))
		}
	}
	stmts := append(dropCaptureDDL(name), captureDDL(name, schema)...)
	if err := execAll(ctx, tx, stmts); err != nil {
		return fmt.Errorf("enable change tracking on %s: %w", name, err)
	}
	cols, _ := json.Marshal(schema.Names())
	_, now := nowUTC()
	_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO sluice_tracking (tbl, log, columns, enabled) VALUES (?, ?, ?, ?)`,
		name, logTable(name), string(cols), now)
	if err != nil {
		return fmt.Errorf("enable change tracking on %s: %w", name, err)
	}
	return nil
}

// disableTracking removes change capture from table; an error wrapping
// ErrStreamsExist, naming them, while streams read the table. Disabling an
// untracked table is a no-op; a missing table is ErrNoTable.
func disableTracking(ctx context.Context, tx *sqlitex.Tx, table string) error {
	name, ok, err := sqlitex.TableName(ctx, tx, table)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("cannot disable change tracking: %w: %s", ErrNoTable, table)
	}
	return untrack(ctx, tx, name, "disable change tracking on")
}

// untrack drops capture and the tracking row of a table (stored name).
func untrack(ctx context.Context, tx *sqlitex.Tx, name, what string) error {
	streams, err := listStreams(ctx, tx, name)
	if err != nil {
		return err
	}
	if len(streams) > 0 {
		return fmt.Errorf("cannot %s %s: %w: %s (drop them first with DROP TABLE STREAM)", what, name, ErrStreamsExist, streamNames(streams))
	}
	if err := execAll(ctx, tx, dropCaptureDDL(name)); err != nil {
		return fmt.Errorf("%s %s: %w", what, name, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM sluice_tracking WHERE tbl = ?`, name); err != nil {
		return fmt.Errorf("%s %s: %w", what, name, err)
	}
	return nil
}
