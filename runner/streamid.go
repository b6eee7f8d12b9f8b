package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicedata/sluice/cdc"
)

// The checkpoint rule: which offset a run starts from, given the job's
// checkpoint in the sink and the stream's incarnation (StreamInfo.ID, a
// random id the backend generates when the stream is created, new for
// every CREATE and CREATE OR REPLACE).

// StreamReplacedError is a run whose sink checkpoint was written for
// another incarnation of its stream (the stream was dropped and created
// again, replaced with CREATE OR REPLACE TABLE STREAM, or restored from
// elsewhere): the changes between the checkpoint and the new stream's
// offset are unknown, so starting at either would skip or replay changes
// silently. It wraps ErrStreamReplaced; its text says what happened and
// the two ways forward.
type StreamReplacedError struct {
	Job        string     // job name
	Stream     string     // stream name now
	StreamID   string     // the stream's id now
	Checkpoint Checkpoint // the job's checkpoint in the sink
}

func (e *StreamReplacedError) Error() string {
	return fmt.Sprintf("%v: the checkpoint of job %s in its sink (written %s at %s) belongs to stream %s with id %s, but stream %s now has id %s — "+
		"it was dropped and created again, replaced (CREATE OR REPLACE TABLE STREAM) or restored from another database since; "+
		"the changes between the two cannot be known, so nothing was read or written. Either copy the table again: `sluice backfill JOBFILE` (the job file of %s) "+
		"(a merge target keeps rows deleted meanwhile: drop it first for an exact copy), or accept the new stream's offset and lose the changes "+
		"made in between: `sluice run --accept-new-stream JOBFILE` (recorded in the run history)",
		ErrStreamReplaced, e.Job, e.Checkpoint.Updated.UTC().Format(time.RFC3339), e.Checkpoint.Offset, e.Checkpoint.Stream, e.Checkpoint.StreamID,
		e.Stream, e.StreamID, e.Job)
}

func (e *StreamReplacedError) Unwrap() error { return ErrStreamReplaced }

type acceptKey struct{}

// WithAcceptNewStream returns ctx under which a run whose checkpoint names
// another incarnation of its stream starts from the stream's own offset
// instead of failing with StreamReplacedError (`sluice run
// --accept-new-stream`). The run's Result.Note says so.
func WithAcceptNewStream(ctx context.Context) context.Context {
	return context.WithValue(ctx, acceptKey{}, true)
}

// AcceptsNewStream reports whether ctx carries WithAcceptNewStream.
func AcceptsNewStream(ctx context.Context) bool {
	v, _ := ctx.Value(acceptKey{}).(bool)
	return v
}

// Start decides where a run of job reads from, given the job's checkpoint
// cp (ok false: none) and the stream info as read in the run's
// transaction. It returns the offset and a note for the run history ("" if
// none):
//
//   - no checkpoint: the stream's offset;
//   - a checkpoint of this incarnation (same id), or one written before
//     checkpoints named the stream's id (StreamID ""; the run adopts the
//     current id when it commits): the checkpoint's offset, unless a
//     backfill is in progress (BackfillInProgress's error);
//   - a checkpoint of another incarnation: StreamReplacedError, or under
//     WithAcceptNewStream the stream's offset and a note naming both ids.
func Start(ctx context.Context, job string, cp Checkpoint, ok bool, info *StreamInfo) (from cdc.Offset, note string, err error) {
	if !ok {
		return info.Offset, "", nil
	}
	if cp.StreamID == "" || cp.StreamID == info.ID {
		if err := BackfillInProgress(cp); err != nil {
			return cdc.Offset{}, "", err
		}
		return cp.Offset, "", nil
	}
	if _, backfill := cp.Offset.Get(BackfillPartition); backfill {
		return cdc.Offset{}, "", fmt.Errorf("%w: a backfill of job %s was started on an earlier incarnation of stream %s; start over with `sluice backfill --restart JOBFILE` (the job file of %s)",
			ErrBackfillResume, job, info.Name, job)
	}
	if !AcceptsNewStream(ctx) {
		return cdc.Offset{}, "", &StreamReplacedError{Job: job, Stream: info.Name, StreamID: info.ID, Checkpoint: cp}
	}
	return info.Offset, fmt.Sprintf("accepted a new stream (--accept-new-stream): the checkpoint at %s belonged to stream %s with id %s; read from stream %s id %s at its own offset, changes made in between are not in the target",
		cp.Offset, cp.Stream, cp.StreamID, info.Name, info.ID), nil
}
