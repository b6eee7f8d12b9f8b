package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// Log rows from another epoch. A change log row's position is its
// writer's transaction id (__txid), which means something only in the
// cluster, and the stretch of its history, that assigned it. A log
// restored into another cluster (pg_dump / pg_restore) or a cluster
// restored to an earlier point keeps rows whose __txid the cluster has not
// assigned yet: no snapshot sees them as committed now, but once the
// cluster's counter passes them every later snapshot would, and a read
// would deliver them as new changes — stale values and deleted rows coming
// back. Such rows are recognizable: a committed row visible in a snapshot
// has __txid < the snapshot's xmax (the first unassigned id), so a visible
// row at or above it comes from elsewhere. Every read refuses a log that
// holds one (checkFutureRows), and enabling tracking, which locks the
// table so that no transaction that wrote it is still running, deletes
// them (dropFutureRows).

// checkFutureRows returns an error wrapping ErrRestoredLog when the log
// of t holds a row, visible in tx's snapshot, whose __txid is at or above
// xmax, the snapshot's xmax. One probe of the log's __txid index.
func checkFutureRows(ctx context.Context, tx pgx.Tx, t *Tracked, xmax uint64) error {
	var n int64
	if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM (SELECT 1 FROM %s WHERE __txid >= $1::text::xid8 LIMIT 1000) f`, t.LogRef()), fmt.Sprint(xmax)).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	more := ""
	if n == 1000 {
		more = " or more"
	}
	return fmt.Errorf("%w: the change log of %s (sluice.%s) holds %d%s row(s) written by transaction ids this cluster has not assigned yet (%d and above): the log was restored from another cluster or this cluster from an earlier backup. Nothing was read; those rows are never read as changes. To go on: ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'true') deletes them (the rows this cluster wrote stay); then, if the streams on the table were restored with the log, recreate them (CREATE OR REPLACE TABLE STREAM) and run sluice backfill on their jobs",
		ErrRestoredLog, sinkpg.Quote(t.Table.Name), sinkpg.Quote(t.Log), n, more, xmax, t.Table.Name)
}

// dropFutureRows deletes the log rows of t whose __txid this cluster has
// not assigned (see above) and returns how many. tx must hold a lock on
// the table that excludes writers (enabling tracking holds ACCESS
// EXCLUSIVE), so every transaction that logged a change has ended and the
// statement's snapshot xmax bounds all of them.
func dropFutureRows(ctx context.Context, tx pgx.Tx, t *Tracked) (int64, error) {
	tag, err := tx.Exec(ctx, fmt.Sprintf(`DELETE FROM %s WHERE __txid >= pg_snapshot_xmax(pg_current_snapshot())`, t.LogRef()))
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
