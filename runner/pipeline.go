package runner

import (
	"context"
	"errors"
	"io"

	"github.com/sluicedata/sluice/cdc"
)

// pipeline moves the changes of rd into tx, the read overlapping the
// write: a goroutine reads each batch and filters and projects it
// (prep.transform) while the calling goroutine writes the one before. A
// channel of capacity one between them bounds memory to about three
// batches: one being read, one queued, one being written.
//
// The goroutine closes rd as soon as the read ends, well or not, so a
// source's read transaction is gone before the caller commits the sink
// transaction and advances the stream; it has exited when pipeline
// returns. The first error of either side is returned and stops the
// other. Otherwise pipeline returns the read point and the changes read
// by type, including those the source omitted (OmittingReader).
func (prep *Prepared) pipeline(ctx context.Context, rd ChangeReader, tx SinkTx) (cdc.Offset, map[cdc.Op]int64, error) {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	batches := make(chan []cdc.Change, 1)
	var to cdc.Offset
	read := map[cdc.Op]int64{} // the goroutine's until it closes batches
	go func() {
		defer close(batches) // after rd.Close: the caller sees rd closed
		defer rd.Close()
		var err error
		to, err = prep.readAll(ctx, rd, read, batches)
		if err != nil {
			stop(err)
		}
	}()
	for out := range batches {
		if ctx.Err() != nil {
			continue // a side failed: discard batches until the reader stops
		}
		if err := tx.Write(ctx, out); err != nil {
			stop(err)
		}
	}
	if ctx.Err() != nil {
		return cdc.Offset{}, nil, context.Cause(ctx)
	}
	return to, read, nil
}

// readAll sends the filtered and projected batches of rd to out until
// io.EOF, counting the changes read into read, and returns the read point.
func (prep *Prepared) readAll(ctx context.Context, rd ChangeReader, read map[cdc.Op]int64, out chan<- []cdc.Change) (cdc.Offset, error) {
	for {
		batch, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return cdc.Offset{}, err
		}
		rows, err := prep.transform(batch, read)
		if err != nil {
			return cdc.Offset{}, err
		}
		if len(rows) == 0 {
			continue
		}
		select {
		case out <- rows:
		case <-ctx.Done():
			return cdc.Offset{}, context.Cause(ctx)
		}
	}
	if o, ok := rd.(OmittingReader); ok {
		for op, n := range o.Omitted() {
			read[op] += n
		}
	}
	return rd.ReadPoint(), nil
}
