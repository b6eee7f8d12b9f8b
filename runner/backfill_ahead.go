package runner

import (
	"context"

	"github.com/sluicedata/sluice/cdc"
)

// readAhead reads the chunks of the sluice path one ahead: the next
// chunk is read from the snapshot while the sink writes and commits the
// current one, so source and sink work at the same time (a SQLite
// source's decoding overlaps PostgreSQL's COPY and commit). At most one
// read runs at a time, and never while the caller uses the snapshot
// otherwise: it holds two chunks of memory at most.
type readAhead struct {
	snap    SnapshotReader
	n       int
	pending chan chunkRead // nil when no read is running
}

type chunkRead struct {
	rows []cdc.Change
	err  error
}

// next returns the chunk after `after`: the one read ahead if there is
// one (it was started with the same key), else read now.
func (ra *readAhead) next(ctx context.Context, after []any) ([]cdc.Change, error) {
	if ra.pending != nil {
		r := <-ra.pending
		ra.pending = nil
		return r.rows, r.err
	}
	return ra.snap.Chunk(ctx, after, ra.n)
}

// start begins reading the chunk after `after` in the background.
func (ra *readAhead) start(ctx context.Context, after []any) {
	ch := make(chan chunkRead, 1)
	ra.pending = ch
	go func() {
		rows, err := ra.snap.Chunk(ctx, after, ra.n)
		ch <- chunkRead{rows, err}
	}()
}

// wait ends a read still running (before the snapshot is used otherwise
// or closed).
func (ra *readAhead) wait() {
	if ra.pending != nil {
		<-ra.pending
		ra.pending = nil
	}
}
