package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// Bounding the change log. The capture triggers exist only while a stream
// is on the table (CreateStream, DropStream), so a table without a stream
// logs nothing; the log keeps only what some stream can still read:
//
//   - a stream's advance purges its table's log and the whole log of every
//     tracked table without a stream (purgeStreamless: capture an earlier
//     sluice left on such a table, until tracking is enabled again), as do
//     DROP TABLE STREAM (the last one empties the log with the triggers)
//     and TrimLogs, which sluice serve calls on every lag poll; enabling
//     tracking again purges too (EnableTracking);
//   - a stream whose oldest unconsumed change is older than its retention
//     (stale_after, 'STALE_AFTER', default runner.DefaultStaleAfter) is
//     marked stale (stale_since) at the purge after a commit and no longer
//     holds log rows back (streamPositions skips it); reading it fails with
//     runner.StaleError, which says how to recover.

// oldestUnconsumed returns the time of the oldest change in the log of t
// that the stream at position p has not consumed; ok is false when there
// is none. The change with the lowest transaction ID among them is taken
// as the oldest (the __txid index serves it).
func oldestUnconsumed(ctx context.Context, q sinkpg.Querier, t *Tracked, p Position) (at time.Time, ok bool, err error) {
	cond := fmt.Sprintf("__txid >= '%d'::xid8", p.Xmax())
	for _, x := range p.Xip() {
		cond += fmt.Sprintf(" OR __txid = '%d'::xid8", x)
	}
	err = q.QueryRow(ctx, `SELECT __ts FROM `+t.LogRef()+` WHERE `+cond+` ORDER BY __txid LIMIT 1`).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return at.UTC(), true, nil
}

// markStale marks stale every stream on table whose oldest unconsumed
// change is older than its retention, and logs each.
func (b *Backend) markStale(ctx context.Context, table string) error {
	return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		t, ok, err := b.trackedLog(ctx, tx, table)
		if errors.Is(err, ErrTableDropped) {
			return nil // reads report the drop
		}
		if err != nil || !ok {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+streamColumns+` FROM sluice.streams WHERE table_name = $1 AND stale_since IS NULL`, table)
		if err != nil {
			return err
		}
		streams, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*runner.StreamInfo, error) { return scanStream(r) })
		if err != nil {
			return err
		}
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return err
		}
		for _, s := range streams {
			p, ok, err := OffsetPosition(s.Offset)
			if err != nil || !ok || s.StaleAfter <= 0 {
				continue // a bad position is reported by reads
			}
			at, pending, err := oldestUnconsumed(ctx, tx, t, p)
			if err != nil {
				return err
			}
			if !pending || now.Sub(at) <= s.StaleAfter {
				continue
			}
			if _, err := tx.Exec(ctx, `UPDATE sluice.streams SET stale_since = now() WHERE name = $1 AND id = $2`, s.Name, s.ID); err != nil {
				return err
			}
			b.log.Warn("table stream is stale: its oldest unconsumed change is older than its retention; the change log no longer keeps changes for it",
				"stream", s.Name, "table", table, "stale_after", runner.FormatRetention(s.StaleAfter), "oldest_change", at)
		}
		return nil
	})
}

// streamlessEvery spaces the purges of tables without streams that runs
// trigger (a continuous job may run many times a second).
const streamlessEvery = 10 * time.Second

// purgeStreamless purges the whole log of every tracked table without a
// stream that is not stale (TRUNCATE when no session holds it, else
// DELETE), at most once per streamlessEvery. A failure is logged: the next
// purge does it.
func (b *Backend) purgeStreamless(ctx context.Context) {
	b.mu.Lock()
	due := time.Since(b.streamlessAt) >= streamlessEvery
	if due {
		b.streamlessAt = time.Now()
	}
	b.mu.Unlock()
	if due {
		b.purgeStreamlessNow(ctx)
	}
}

// purgeStreamlessNow is purgeStreamless without the throttle.
func (b *Backend) purgeStreamlessNow(ctx context.Context) {
	rows, err := b.pool.Query(ctx, `SELECT t.table_name FROM sluice.tracking t
		WHERE NOT EXISTS (SELECT 1 FROM sluice.streams s WHERE s.table_name = t.table_name AND s.stale_since IS NULL)`)
	if err == nil {
		var tables []string
		if tables, err = pgx.CollectRows(rows, pgx.RowTo[string]); err == nil {
			for _, t := range tables {
				b.purgeAfterCommit(ctx, t)
			}
			return
		}
	}
	if !isUndefinedTable(err) {
		b.log.Warn("change logs of tables without streams not purged; the next purge does it", "err", hide(err, b.secret))
	}
}

// TrimLogs implements runner.LogKeeper: for every tracked table whose
// log holds rows it marks stale streams and purges the log
// (purgeAfterCommit), then returns every log's rows and bytes
// (pg_total_relation_size: table, TOAST and indexes). The logs are
// measured first, trimLogsChunk at a time in one statement: a log without
// rows has nothing to purge and no change to make a stream stale, and
// purging each of 1,000 logs took some fifteen statements and a TRUNCATE
// (a commit) each, over 60 s per call (issue #19).
func (b *Backend) TrimLogs(ctx context.Context) ([]runner.LogSize, error) {
	rows, err := b.pool.Query(ctx, `SELECT table_name, log_table FROM sluice.tracking ORDER BY table_name`)
	if isUndefinedTable(err) || pgCode(err) == "3F000" {
		return nil, nil // nothing tracked yet
	}
	if err != nil {
		return nil, b.wrap(err, "list tracked tables")
	}
	type logTable struct{ table, log string }
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (logTable, error) {
		var t logTable
		err := r.Scan(&t.table, &t.log)
		return t, err
	})
	if err != nil {
		return nil, b.wrap(err, "list tracked tables")
	}
	out := make([]runner.LogSize, 0, len(tables))
	for lo := 0; lo < len(tables); lo += trimLogsChunk {
		chunk := tables[lo:min(len(tables), lo+trimLogsChunk)]
		var q strings.Builder
		for i, t := range chunk {
			if i > 0 {
				q.WriteString(" UNION ALL ")
			}
			ref := "sluice." + sinkpg.Quote(t.log)
			fmt.Fprintf(&q, "SELECT %d, (SELECT count(*) FROM %s), pg_total_relation_size(%s::regclass)", i, ref, sinkpg.Literal(ref))
		}
		sizes := make([]runner.LogSize, len(chunk))
		measured := make([]bool, len(chunk))
		rows, err := b.pool.Query(ctx, q.String())
		if err == nil {
			for rows.Next() {
				var i int
				var n, bytes int64
				if err = rows.Scan(&i, &n, &bytes); err != nil {
					break
				}
				sizes[i] = runner.LogSize{Database: b.identity, Table: chunk[i].table, Rows: n, Bytes: bytes}
				measured[i] = true
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
		if err != nil && !isUndefinedTable(err) {
			return nil, b.wrap(err, "change log sizes")
		}
		for i, t := range chunk {
			if measured[i] && sizes[i].Rows == 0 {
				out = append(out, sizes[i])
				continue
			}
			// Rows to purge, or a log the statement could not measure
			// (one was dropped meanwhile): the table on its own.
			sz, ok, err := b.trimLog(ctx, t.table)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, sz)
			}
		}
	}
	return out, nil
}

// trimLogsChunk is how many logs one statement of TrimLogs measures.
const trimLogsChunk = 200

// trimLog purges the log of table (purgeAfterCommit; the whole log of a
// table without a stream) and measures it; ok is false when the table's
// log is gone (dropped meanwhile, or tracking disabled).
func (b *Backend) trimLog(ctx context.Context, table string) (runner.LogSize, bool, error) {
	b.purgeAfterCommit(ctx, table)
	t, ok, err := b.trackedLog(ctx, b.pool, table)
	if errors.Is(err, ErrTableDropped) {
		return runner.LogSize{}, false, nil // disabling tracking removes its log
	}
	if err != nil {
		return runner.LogSize{}, false, err
	}
	if !ok {
		return runner.LogSize{}, false, nil
	}
	sz := runner.LogSize{Database: b.identity, Table: table}
	err = b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+t.LogRef()+`), pg_total_relation_size($1::regclass)`, t.LogRef()).Scan(&sz.Rows, &sz.Bytes)
	if isUndefinedTable(err) {
		return runner.LogSize{}, false, nil // the table's log is gone; reads report it
	}
	if err != nil {
		return runner.LogSize{}, false, b.wrap(err, "change log size of %s", table)
	}
	return sz, true, nil
}
