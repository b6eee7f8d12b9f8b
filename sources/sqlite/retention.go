package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
)

// Bounding the change log. The capture triggers exist only while a stream
// is on the table (the first CREATE TABLE STREAM installs them, dropping
// the last removes them), so a table without a stream logs nothing; the
// log keeps only what some stream can still read:
//
//   - a stream's advance purges its table's log (purgeTable); CREATE and
//     DROP TABLE STREAM, enabling tracking and TrimLogs (which sluice
//     serve calls on every lag poll) purge every tracked table's log, all
//     of it for a table without a stream;
//   - a stream whose oldest unconsumed change is older than its retention
//     (stale_after, 'STALE_AFTER', default runner.DefaultStaleAfter) is
//     marked stale (stale_since) and no longer holds log rows back; reading
//     it fails with runner.StaleError, which says how to recover.

// markStale marks stale every stream of streams (those on c's table, as
// read in this transaction) whose oldest unconsumed change is older than
// its retention, and returns them as they are after it, with the time
// from which the next of them would go stale if nothing moves (the zero
// time when none can: no stream has an unconsumed change). It logs each
// stream it marks.
func (b *Backend) markStale(ctx context.Context, q sqlitex.Querier, c captured, streams []streamRow) ([]streamRow, time.Time, error) {
	now, nowText := nowUTC()
	var next time.Time
	for i, s := range streams {
		if !s.staleSince.IsZero() || s.staleAfter <= 0 {
			continue
		}
		at, pending, err := oldestUnconsumed(ctx, q, c.log, s)
		if err != nil {
			return nil, time.Time{}, err
		}
		if !pending {
			continue
		}
		if now.Sub(at) <= s.staleAfter {
			if due := at.Add(s.staleAfter); next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		if _, err := q.ExecContext(ctx, `UPDATE sluice_streams SET stale_since = ? WHERE name = ? AND id = ?`, nowText, s.name, s.id); err != nil {
			return nil, time.Time{}, fmt.Errorf("mark stream %s stale: %w", s.name, err)
		}
		streams[i].staleSince = now
		b.log.WarnContext(ctx, "table stream is stale: its oldest unconsumed change is older than its retention; the change log no longer keeps changes for it",
			"stream", s.name, "table", c.table, "stale_after", runner.FormatRetention(s.staleAfter), "oldest_change", at)
	}
	return streams, next, nil
}

// oldestUnconsumed returns the commit time of the oldest change in log
// after stream s's offset; pending is false when there is none (or the
// stream is stale: the log keeps nothing for it).
func oldestUnconsumed(ctx context.Context, q sqlitex.Querier, log string, s streamRow) (at time.Time, pending bool, err error) {
	if !s.staleSince.IsZero() {
		return time.Time{}, false, nil
	}
	// Log rows are in seq order, and seq follows the time of the write.
	var ts string
	err = q.QueryRowContext(ctx, `SELECT ts FROM `+sqlitex.Quote(log)+` WHERE seq > ? ORDER BY seq LIMIT 1`, s.pos.seq).Scan(&ts)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("oldest unconsumed change of stream %s: %w", s.name, err)
	}
	t, err := cdc.ParseTimestamp(ts)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("oldest unconsumed change of stream %s: %w", s.name, err)
	}
	return t.UTC(), true, nil
}

// purgeAll purges the log of every tracked table (purge); q is in a write
// transaction. A table whose log is gone (its capture was lost) is left to
// the reads that report it.
//
// It reads the catalog, the streams, the logs' last seqs and sluice's
// tables once each, and skips a log whose last seq and streams are what
// they were after this Backend's previous purge of it: no row was logged
// since and no offset moved, so the purge would delete nothing, and it
// would mark no stream stale before the time that purge found the next
// one due (a change's ts is written once, by the capture trigger). full
// (TrimLogs, which serve calls every lag poll) purges again every log in
// which a stream has changes left to read, so that what the clock alone
// does not show (a log edited by hand) is seen there. Every
// statement and lag poll purges every log (a run's advance only its
// table's: purgeTable), so a per-table purge cost
// O(tables) statements and O(tables²) catalog reads each (issue #19). A
// skipped log's pending images (rows a skipped statement left, see purge)
// wait for the next write to the table.
func (b *Backend) purgeAll(ctx context.Context, q sqlitex.Querier, full bool) (int64, error) {
	type trackedLog struct{ table, log, enabled string }
	var logs []trackedLog
	err := queryEach(ctx, q, `SELECT tbl, log, enabled FROM sluice_tracking ORDER BY tbl`, func(rows *sql.Rows) error {
		var t trackedLog
		logs = append(logs, t)
		return rows.Scan(&logs[len(logs)-1].table, &logs[len(logs)-1].log, &logs[len(logs)-1].enabled)
	})
	if err != nil {
		return 0, fmt.Errorf("list tracked tables: %w", err)
	}
	if len(logs) == 0 {
		return 0, nil
	}
	tables, err := b.sluiceTablesOf(ctx, q)
	if err != nil {
		return 0, err
	}
	seqs := map[string]int64{}
	if tables["sqlite_sequence"] {
		err = queryEach(ctx, q, `SELECT name, seq FROM sqlite_sequence WHERE name LIKE 'sluice\_changes\_%' ESCAPE '\'`, func(rows *sql.Rows) error {
			var n string
			var seq sql.NullInt64
			if err := rows.Scan(&n, &seq); err != nil {
				return err
			}
			seqs[n] = seq.Int64
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("read change log positions: %w", err)
		}
	}
	byTable := map[string][]streamRow{}
	all, err := listStreams(ctx, q, "")
	if err != nil {
		return 0, err
	}
	for _, s := range all {
		byTable[WatchKey(s.table)] = append(byTable[WatchKey(s.table)], s)
	}
	var total int64
	for _, t := range logs {
		n, err := b.purgeLog(ctx, q, t.table, t.log, t.enabled, seqs[t.log], byTable[WatchKey(t.table)], tables, full)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// purgeLog purges the log of one tracked table (purge) unless its last
// seq and streams are what they were after this Backend's previous purge
// of it (purgeAll); q is in a write transaction. tables is sluiceTables':
// a log that is gone is left alone.
func (b *Backend) purgeLog(ctx context.Context, q sqlitex.Querier, table, log, enabled string, seq int64, streams []streamRow, tables map[string]bool, full bool) (int64, error) {
	if !tables[WatchKey(log)] {
		return 0, nil
	}
	key := table + "\x00" + log + "\x00" + enabled
	state := purgeState(seq, streams)
	b.purgeMu.Lock()
	p, ok := b.purged[key]
	b.purgeMu.Unlock()
	if ok && p.state == state && (p.due.IsZero() || !full && time.Now().Before(p.due)) {
		return 0, nil
	}
	c := captured{table: table, log: log}
	n, due, err := b.purge(ctx, q, c, streams, tables[WatchKey(pendingTable(suffix(log)))])
	if err != nil {
		return 0, err
	}
	// A stream this purge marked stale has a stale_since the next read
	// sees: the state differs and the log is purged once more.
	b.purgeMu.Lock()
	if b.purged == nil {
		b.purged = map[string]purged{}
	}
	b.purged[key] = purged{state: state, due: due}
	b.purgeMu.Unlock()
	return n, nil
}

// purgeTable is purgeLog for the log of table alone (a run's Advance):
// a handful of statements, where purgeAll reads every tracked table's
// catalog rows, streams and last seq (at 1,000 tracked tables that made
// each run's advance cost O(tables), and the runs O(tables²), issue #19).
// The other logs are purged by statements and TrimLogs (serve's lag
// poll): a table without a stream logs nothing (its capture is off), so
// what waits for them is a stream going stale by its retention.
func (b *Backend) purgeTable(ctx context.Context, q sqlitex.Querier, table string) (int64, error) {
	var log, enabled string
	err := q.QueryRowContext(ctx, `SELECT tbl, log, enabled FROM sluice_tracking WHERE tbl = ?`, table).Scan(&table, &log, &enabled)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read change tracking of %s: %w", table, err)
	}
	tables, err := b.sluiceTablesOf(ctx, q)
	if err != nil {
		return 0, err
	}
	var seq int64
	if tables["sqlite_sequence"] {
		if seq, err = lastSeq(ctx, q, log); err != nil {
			return 0, err
		}
	}
	streams, err := listStreams(ctx, q, table)
	if err != nil {
		return 0, err
	}
	return b.purgeLog(ctx, q, table, log, enabled, seq, streams, tables, false)
}

// sluiceTables returns the names of sluice's tables (change logs, pending
// tables) and sqlite_sequence, by WatchKey (SQLite compares table names
// without case), from the connection's parsed schema (pragma_table_list
// reads no page: a schema of 1,000 tracked tables with their triggers is
// megabytes, more than the page cache).
func sluiceTables(ctx context.Context, q sqlitex.Querier) (map[string]bool, error) {
	tables := map[string]bool{}
	err := queryEach(ctx, q, `SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND (name LIKE 'sluice\_%' ESCAPE '\' OR name = 'sqlite_sequence')`, func(rows *sql.Rows) error {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		tables[WatchKey(n)] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list change logs: %w", err)
	}
	return tables, nil
}

// purged is what purgeAll remembers of its last purge of one change log:
// the log's last seq and its streams as they were (purgeState), and when
// the next of those streams goes stale if nothing moves (zero: none can).
type purged struct {
	state string
	due   time.Time
}

// purgeState is the text purgeAll compares: a log's last seq and the
// state of its streams.
func purgeState(seq int64, streams []streamRow) string {
	var sb strings.Builder
	sb.WriteString(strconv.FormatInt(seq, 10))
	for _, s := range streams {
		sb.WriteString("|" + s.name + "," + s.id + "," + s.pos.String() + "," + strconv.FormatInt(int64(s.staleAfter), 10) + "," + s.staleSince.String())
	}
	return sb.String()
}

// purge deletes the change-log rows of c's table that every stream on it
// (streams, as read in this transaction) has consumed: seq <= the
// smallest offset of the streams that are not stale (markStale runs
// first); all rows when no such stream is left. pending says whether the
// table's pending-image table exists. It returns the rows deleted and the
// time the next stream would go stale (markStale).
func (b *Backend) purge(ctx context.Context, q sqlitex.Querier, c captured, streams []streamRow, pending bool) (int64, time.Time, error) {
	streams, until, err := b.markStale(ctx, q, c, streams)
	if err != nil {
		return 0, time.Time{}, err
	}
	var upTo int64 = -1
	for _, s := range streams {
		if !s.staleSince.IsZero() {
			continue // the log keeps nothing for a stale stream
		}
		if upTo < 0 || s.pos.seq < upTo {
			upTo = s.pos.seq
		}
	}
	if upTo < 0 {
		upTo = 1<<63 - 1
	}
	res, err := q.ExecContext(ctx, `DELETE FROM `+sqlitex.Quote(c.log)+` WHERE seq <= ?`, upTo)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("purge change log of %s: %w", c.table, err)
	}
	n, _ := res.RowsAffected()
	// Images of rows a skipped statement (OR IGNORE, an upsert that
	// updated) left behind: no statement is under way while sluice writes.
	if pending {
		if _, err := q.ExecContext(ctx, `DELETE FROM `+sqlitex.Quote(pendingTable(suffix(c.log)))); err != nil {
			return 0, time.Time{}, fmt.Errorf("purge change log of %s: %w", c.table, err)
		}
	}
	return n, until, nil
}

// queryEach runs query on q and calls scan for each row.
func queryEach(ctx context.Context, q sqlitex.Querier, query string, scan func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// TrimLogs implements runner.LogKeeper: in one write transaction it marks
// stale streams and purges every tracked table's log (purgeAll), then
// returns each log's rows and bytes (SQLite's dbstat: the pages of the log
// table).
func (b *Backend) TrimLogs(ctx context.Context) ([]runner.LogSize, error) {
	var n int64
	err := sqlitex.WithImmediate(ctx, b.db, func(tx *sqlitex.Tx) error {
		var err error
		n, err = b.purgeAll(ctx, tx, true)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("trim change logs: %w", err)
	}
	if n > 0 {
		b.log.DebugContext(ctx, "change logs purged", "rows", n)
	}
	rows, err := b.db.QueryContext(ctx, `SELECT tbl, log FROM sluice_tracking ORDER BY tbl`)
	if err != nil {
		return nil, fmt.Errorf("change log sizes: %w", err)
	}
	type tracked struct{ table, log string }
	var ts []tracked
	for rows.Next() {
		var t tracked
		if err := rows.Scan(&t.table, &t.log); err != nil {
			rows.Close()
			return nil, fmt.Errorf("change log sizes: %w", err)
		}
		ts = append(ts, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("change log sizes: %w", err)
	}
	tables, err := b.sluiceTablesOf(ctx, b.db)
	if err != nil {
		return nil, fmt.Errorf("change log sizes: %w", err)
	}
	bytes, err := logBytes(ctx, b.db)
	if err != nil {
		return nil, err
	}
	out := make([]runner.LogSize, 0, len(ts))
	for _, t := range ts {
		if !tables[WatchKey(t.log)] {
			continue
		}
		sz := runner.LogSize{Database: b.loc.Path, Table: t.table, Bytes: bytes[WatchKey(t.log)]}
		if err := b.db.QueryRowContext(ctx, `SELECT count(*) FROM `+sqlitex.Quote(t.log)).Scan(&sz.Rows); err != nil {
			return nil, fmt.Errorf("change log size of %s: %w", t.table, err)
		}
		out = append(out, sz)
	}
	return out, nil
}

// logBytes returns the bytes of the pages of every table whose name
// begins with sluice_changes_ (the change logs), by WatchKey of its name,
// in one pass of SQLite's dbstat (aggregate: one row per table). A query
// per log with dbstat's name = ? looks the name up in sqlite_schema, which
// has no index: a scan of megabytes per log at 1,000 tracked tables, over
// a minute per trim (issue #19).
func logBytes(ctx context.Context, q sqlitex.Querier) (map[string]int64, error) {
	out := map[string]int64{}
	err := queryEach(ctx, q, `SELECT name, pgsize FROM dbstat WHERE aggregate = TRUE AND name LIKE 'sluice\_changes\_%' ESCAPE '\'`, func(rows *sql.Rows) error {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return err
		}
		out[WatchKey(name)] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("change log sizes: %w", err)
	}
	return out, nil
}
