package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
)

// Bounding the change log. The capture triggers log every write of a
// tracked table, whether or not a stream is on it; the log keeps only what
// some stream can still read:
//
//   - every purge (a stream's advance, CREATE and DROP TABLE STREAM, and
//     TrimLogs, which sluice serve calls on every lag poll, and enabling
//     tracking) purges every tracked table's log, so a table without a
//     stream keeps nothing past the next of them;
//   - a stream whose oldest unconsumed change is older than its retention
//     (stale_after, 'STALE_AFTER', default runner.DefaultStaleAfter) is
//     marked stale (stale_since) and no longer holds log rows back; reading
//     it fails with runner.StaleError, which says how to recover.

// markStale marks stale every stream on c's table whose oldest unconsumed
// change is older than its retention, and returns the table's streams as
// they are after it. It logs each stream it marks.
func (b *Backend) markStale(ctx context.Context, q sqlitex.Querier, c captured) ([]streamRow, error) {
	streams, err := listStreams(ctx, q, c.table)
	if err != nil {
		return nil, err
	}
	now, nowText := nowUTC()
	for i, s := range streams {
		if !s.staleSince.IsZero() || s.staleAfter <= 0 {
			continue
		}
		at, pending, err := oldestUnconsumed(ctx, q, c.log, s)
		if err != nil {
			return nil, err
		}
		if !pending || now.Sub(at) <= s.staleAfter {
			continue
		}
		if _, err := q.ExecContext(ctx, `UPDATE sluice_streams SET stale_since = ? WHERE name = ? AND id = ?`, nowText, s.name, s.id); err != nil {
			return nil, fmt.Errorf("mark stream %s stale: %w", s.name, err)
		}
		streams[i].staleSince = now
		b.log.WarnContext(ctx, "table stream is stale: its oldest unconsumed change is older than its retention; the change log no longer keeps changes for it",
			"stream", s.name, "table", c.table, "stale_after", runner.FormatRetention(s.staleAfter), "oldest_change", at)
	}
	return streams, nil
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
func (b *Backend) purgeAll(ctx context.Context, q sqlitex.Querier) (int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT tbl FROM sluice_tracking ORDER BY tbl`)
	if err != nil {
		return 0, fmt.Errorf("list tracked tables: %w", err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return 0, fmt.Errorf("list tracked tables: %w", err)
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("list tracked tables: %w", err)
	}
	var total int64
	for _, t := range tables {
		c, ok, err := lookupTracking(ctx, q, t)
		if err != nil {
			return total, err
		}
		if !ok {
			continue
		}
		if _, exists, err := sqlitex.TableName(ctx, q, c.log); err != nil || !exists {
			continue
		}
		n, err := b.purge(ctx, q, c)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// TrimLogs implements runner.LogKeeper: in one write transaction it marks
// stale streams and purges every tracked table's log (purgeAll), then
// returns each log's rows and bytes (SQLite's dbstat: the pages of the log
// table).
func (b *Backend) TrimLogs(ctx context.Context) ([]runner.LogSize, error) {
	var n int64
	err := sqlitex.WithImmediate(ctx, b.db, func(tx *sqlitex.Tx) error {
		var err error
		n, err = b.purgeAll(ctx, tx)
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
	out := make([]runner.LogSize, 0, len(ts))
	for _, t := range ts {
		if _, exists, err := sqlitex.TableName(ctx, b.db, t.log); err != nil || !exists {
			continue
		}
		sz := runner.LogSize{Database: b.loc.Path, Table: t.table}
		if err := b.db.QueryRowContext(ctx, `SELECT count(*), (SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ?) FROM `+sqlitex.Quote(t.log), t.log).Scan(&sz.Rows, &sz.Bytes); err != nil {
			return nil, fmt.Errorf("change log size of %s: %w", t.table, err)
		}
		out = append(out, sz)
	}
	return out, nil
}
