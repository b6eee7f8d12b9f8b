package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
)

// CheckpointTable stores one row per job: the stream (and its incarnation
// ID) the job consumes and the offset its last committed run reached.
const CheckpointTable = "sluice_checkpoints"

const createCheckpointsSQL = `CREATE TABLE IF NOT EXISTS sluice_checkpoints (job TEXT PRIMARY KEY, stream TEXT NOT NULL, stream_id TEXT NOT NULL, "offset" TEXT NOT NULL, updated_at TEXT NOT NULL)`

// SelectCheckpointSQL reads a job's checkpoint row (parameter: the job name).
const SelectCheckpointSQL = `SELECT stream, stream_id, "offset", updated_at FROM sluice_checkpoints WHERE job = ?`

const upsertCheckpointSQL = `INSERT INTO sluice_checkpoints (job, stream, stream_id, "offset", updated_at) VALUES (?, ?, ?, ?, ?) ` +
	`ON CONFLICT (job) DO UPDATE SET stream = excluded.stream, stream_id = excluded.stream_id, "offset" = excluded."offset", updated_at = excluded.updated_at`

// ReadCheckpoint returns the checkpoint of job stored in q's database, ok
// false when there is none (or no checkpoint table yet).
func ReadCheckpoint(ctx context.Context, q Querier, job string) (runner.Checkpoint, bool, error) {
	rows, err := q.QueryContext(ctx, SelectCheckpointSQL, job)
	if err != nil {
		if ok, _ := tableExists(ctx, q, CheckpointTable); !ok {
			return runner.Checkpoint{}, false, nil
		}
		return runner.Checkpoint{}, false, fmt.Errorf("sqlite sink: read checkpoint of job %q: %w", job, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return runner.Checkpoint{}, false, rows.Err()
	}
	var stream, id, off, upd string
	if err := rows.Scan(&stream, &id, &off, &upd); err != nil {
		return runner.Checkpoint{}, false, fmt.Errorf("sqlite sink: read checkpoint of job %q: %w", job, err)
	}
	o, err := cdc.DecodeOffset(off)
	if err != nil {
		return runner.Checkpoint{}, false, fmt.Errorf("sqlite sink: checkpoint of job %q: %w", job, err)
	}
	t, _ := cdc.ParseTimestamp(upd)
	return runner.Checkpoint{Job: job, Stream: stream, StreamID: id, Offset: o, Updated: t.UTC()}, true, rows.Close()
}

// StoreCheckpoint upserts cp (for job) into q's checkpoint table, creating
// the table if needed. Call it inside the transaction that writes the rows
// cp covers. A zero cp.Updated stores the current time; times are UTC.
func StoreCheckpoint(ctx context.Context, q Querier, job string, cp runner.Checkpoint) error {
	if _, err := q.ExecContext(ctx, createCheckpointsSQL); err != nil {
		return fmt.Errorf("sqlite sink: create %s: %w", CheckpointTable, err)
	}
	upd := cp.Updated
	if upd.IsZero() {
		upd = time.Now()
	}
	if _, err := q.ExecContext(ctx, upsertCheckpointSQL, job, cp.Stream, cp.StreamID, cp.Offset.Encode(), cdc.FormatTimestamp(upd.UTC())); err != nil {
		return fmt.Errorf("sqlite sink: store checkpoint of job %q: %w", job, err)
	}
	return nil
}

func tableExists(ctx context.Context, q Querier, table string) (bool, error) {
	rows, err := q.QueryContext(ctx, `SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE`, table)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	return rows.Next(), rows.Err()
}
