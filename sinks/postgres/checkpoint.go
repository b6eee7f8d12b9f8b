package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
)

// CheckpointTable stores one row per job: the stream (and its incarnation
// ID) the job consumes and the offset (cdc.Offset.Encode JSON) its last
// committed run reached.
const CheckpointTable = "sluice.checkpoints"

const createCheckpointsSQL = `CREATE SCHEMA IF NOT EXISTS sluice;
CREATE TABLE IF NOT EXISTS sluice.checkpoints (
	job        text PRIMARY KEY,
	stream     text NOT NULL,
	stream_id  text NOT NULL,
	"offset"   text NOT NULL,
	updated_at timestamptz NOT NULL
)`

const selectCheckpointSQL = `SELECT stream, stream_id, "offset", updated_at FROM sluice.checkpoints WHERE job = $1`

const upsertCheckpointSQL = `INSERT INTO sluice.checkpoints (job, stream, stream_id, "offset", updated_at) VALUES ($1, $2, $3, $4, now())
ON CONFLICT (job) DO UPDATE SET stream = EXCLUDED.stream, stream_id = EXCLUDED.stream_id, "offset" = EXCLUDED."offset", updated_at = EXCLUDED.updated_at`

// EnsureCheckpoints creates schema sluice and sluice.checkpoints if
// missing. Run it outside long transactions, under the caller's advisory
// lock when processes may race (see Sink.ensure).
func EnsureCheckpoints(ctx context.Context, q Querier) error {
	if _, err := q.Exec(ctx, createCheckpointsSQL); err != nil {
		return fmt.Errorf("create %s: %w", CheckpointTable, err)
	}
	return nil
}

// ReadCheckpoint returns the checkpoint of job, ok false when there is
// none (or no checkpoint table yet).
func ReadCheckpoint(ctx context.Context, q Querier, job string) (runner.Checkpoint, bool, error) {
	cp := runner.Checkpoint{Job: job}
	var off string
	err := q.QueryRow(ctx, selectCheckpointSQL, job).Scan(&cp.Stream, &cp.StreamID, &off, &cp.Updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return runner.Checkpoint{}, false, nil
	}
	if err != nil {
		return runner.Checkpoint{}, false, fmt.Errorf("postgres sink: read checkpoint of job %q: %w", job, err)
	}
	if cp.Offset, err = cdc.DecodeOffset(off); err != nil {
		return runner.Checkpoint{}, false, fmt.Errorf("postgres sink: checkpoint of job %q: %w", job, err)
	}
	cp.Updated = cp.Updated.UTC()
	return cp, true, nil
}

// StoreCheckpoint upserts cp as job's checkpoint.
func StoreCheckpoint(ctx context.Context, q Querier, job string, cp runner.Checkpoint) error {
	if _, err := q.Exec(ctx, upsertCheckpointSQL, job, cp.Stream, cp.StreamID, cp.Offset.Encode()); err != nil {
		return fmt.Errorf("postgres sink: store checkpoint of job %q: %w", job, err)
	}
	return nil
}
