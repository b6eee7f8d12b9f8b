package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// Purging the change log. After a run has committed (rows, checkpoint and
// offset), the log rows every stream on the table has consumed are removed
// in a transaction of their own: it only deletes what no reader needs, so
// it may fail or run late without harm, and it keeps its locks out of the
// run's transaction.
//
// When the log is idle, the purge TRUNCATEs it, as PgQ rotates and
// truncates its event tables: no per-row DELETE, no dead tuples for vacuum.
// TRUNCATE is not MVCC-safe (a transaction whose snapshot predates it sees
// an empty table), so it runs only when it is safe:
//
//   - it takes ACCESS EXCLUSIVE on the log with NOWAIT, so it fails at once
//     while any writer (a capture trigger, which holds ROW EXCLUSIVE until
//     its transaction ends) or any read holds the log;
//   - every read that commits something on the strength of what it read (a
//     run, pushed down or not, and a backfill snapshot) locks the log in
//     ACCESS SHARE before its transaction takes its snapshot (lockLog), so
//     it either blocks the purge or takes its snapshot after the purge
//     committed;
//   - under the lock, in READ COMMITTED, it sees every committed log row and
//     the streams' current offsets, and truncates only when no row remains
//     that some stream has not consumed.
//
// Otherwise it DELETEs the consumed rows (purge).

// lockStreams takes, shared, the transaction-level advisory lock that
// CREATE and DROP TABLE STREAM and change tracking hold exclusively, so
// that a purge never reads the streams on a table while a stream is being
// created on it: the new stream's offset snapshot may predate changes
// committed since, which the purge, not seeing the stream, would remove.
// Shared, because purges need no exclusion from each other (two
// truncations of one log are serialized by its ACCESS EXCLUSIVE lock, and
// DELETE is MVCC-safe): taken exclusively, it made every run's purge and
// every table's trim wait for each other, which at 1,000 jobs was most of
// a run's time (issue #19).
func lockStreams(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared(hashtext('sluice.tracking'))`)
	return err
}

// logLockSavepoint brackets lockLog's LOCK so a missing log does not abort
// the caller's transaction.
const logLockSavepoint = "sluice_log_lock"

// lockLog takes ACCESS SHARE on the change log of table in tx, which must
// not have taken its snapshot yet (SAVEPOINT and LOCK take none). A table
// that has no log is left to the read to report (ErrNotTracked).
func lockLog(ctx context.Context, tx pgx.Tx, table string) error {
	if _, err := tx.Exec(ctx, "SAVEPOINT "+logLockSavepoint); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, lockLogSQL(table)); err != nil {
		if !isUndefinedTable(err) && pgCode(err) != "3F000" { // no log, or no sluice schema yet
			return err
		}
		_, err = tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+logLockSavepoint)
		return err
	}
	_, err := tx.Exec(ctx, "RELEASE SAVEPOINT "+logLockSavepoint)
	return err
}

// lockLogSQL is the LOCK of lockLog.
func lockLogSQL(table string) string {
	return "LOCK TABLE sluice." + sinkpg.Quote(objectName("log_", table)) + " IN ACCESS SHARE MODE"
}

// purgeAfterCommit purges the log of table after a committed run: it marks
// stale the streams past their retention (markStale), then TRUNCATEs when
// that is safe (see above), else DELETEs the consumed rows. A
// failure is logged, not returned: the run has committed, and the next
// purge removes what this one left.
func (b *Backend) purgeAfterCommit(ctx context.Context, table string) {
	err := b.markStale(ctx, table)
	if err != nil {
		b.log.Warn("stream retention not checked; the next purge checks it", "table", table, "err", hide(err, b.secret))
	}
	done, err := b.truncateConsumed(ctx, table)
	if err == nil && !done {
		err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			if err := lockStreams(ctx, tx); err != nil {
				return err
			}
			return b.purge(ctx, tx, table)
		})
	}
	if err != nil {
		b.log.Warn("change log not purged; the next run purges it", "table", table, "err", hide(err, b.secret))
	}
}

// truncateConsumed truncates the log of table when no other session holds
// it and every row in it is consumed by every stream on the table. It
// reports whether the purge is done (truncated, or nothing to do).
func (b *Backend) truncateConsumed(ctx context.Context, table string) (bool, error) {
	tx, err := b.pool.Begin(ctx) // READ COMMITTED: each statement sees the latest commits
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := lockStreams(ctx, tx); err != nil {
		return false, err
	}
	t, ok, err := b.trackedLog(ctx, tx, table)
	if errors.Is(err, ErrTableDropped) {
		return true, nil // disabling tracking removes the log
	}
	if err != nil || !ok {
		return !ok, err
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+t.LogRef()+" IN ACCESS EXCLUSIVE MODE NOWAIT"); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return false, nil // held by a writer or a read (55P03), or not ours to lock: DELETE instead
		}
		return false, err
	}
	pending, known, err := unconsumedSQL(ctx, tx, table)
	if err != nil || !known {
		return !known, err
	}
	if pending != "" {
		var left bool
		if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s WHERE %s)`, t.LogRef(), pending)).Scan(&left); err != nil {
			return false, err
		}
		if left {
			return false, nil
		}
	}
	if _, err := tx.Exec(ctx, "TRUNCATE "+t.LogRef()); err != nil {
		return false, nil
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	b.log.Debug("change log truncated", "table", table)
	return true, nil
}

// unconsumedSQL returns the condition on __txid (index-friendly) that
// selects the log rows of table some stream has not consumed: a row is
// consumed by a stream when its transaction is visible in the stream's
// offset snapshot, i.e. below its xmax and not in its xip list; so the
// unconsumed rows are __txid >= the lowest xmax OR __txid in any xip list.
// With no stream on the table it returns "" (nothing is needed). known is
// false when a stored position cannot be parsed (the log is then left
// alone; reads report the bad position).
func unconsumedSQL(ctx context.Context, q sinkpg.Querier, table string) (cond string, known bool, err error) {
	positions, known, err := streamPositions(ctx, q, table)
	if err != nil || !known || len(positions) == 0 {
		return "", known, err
	}
	var low uint64
	xips := map[uint64]bool{}
	for i, p := range positions {
		if i == 0 || p.Xmax() < low {
			low = p.Xmax()
		}
		for _, x := range p.Xip() {
			xips[x] = true
		}
	}
	cond = fmt.Sprintf("__txid >= '%d'::xid8", low)
	if len(xips) > 0 {
		ids := make([]string, 0, len(xips))
		for x := range xips {
			ids = append(ids, fmt.Sprint(x))
		}
		cond += fmt.Sprintf(" OR __txid = ANY('{%s}'::xid8[])", strings.Join(ids, ","))
	}
	return cond, true, nil
}

// streamPositions returns the offsets of the streams on table that are not
// stale (the log keeps nothing for a stale stream), which both purges
// read. known is false when one cannot be parsed: the log is then
// left alone, and reads report the bad position.
func streamPositions(ctx context.Context, q sinkpg.Querier, table string) (positions []Position, known bool, err error) {
	rows, err := q.Query(ctx, `SELECT position FROM sluice.streams WHERE table_name = $1 AND stale_since IS NULL`, table)
	if err != nil {
		return nil, false, err
	}
	texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, false, err
	}
	for _, ps := range texts {
		p, err := ParsePosition(ps)
		if err != nil {
			return nil, false, nil
		}
		positions = append(positions, p)
	}
	return positions, true, nil
}
