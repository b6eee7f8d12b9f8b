package postgres

import (
	"context"

	"github.com/sluicedata/sluice/runner"
)

// The dead letters of the backend's sink (runner.DeadLetterSink): the
// sink package does the work.

// Rejection classifies a sink error (sinks/postgres Sink.Rejection).
func (b *Backend) Rejection(err error) runner.Rejection { return b.sink.Rejection(err) }

// DeadLetters returns job's rows of the dead-letter table in id order.
func (b *Backend) DeadLetters(ctx context.Context, table, job string) ([]runner.DeadLetter, error) {
	return b.sink.DeadLetters(ctx, table, job)
}

// PurgeDeadLetters deletes job's rows of the dead-letter table.
func (b *Backend) PurgeDeadLetters(ctx context.Context, table, job string) (int64, error) {
	return b.sink.PurgeDeadLetters(ctx, table, job)
}

var _ runner.DeadLetterSink = (*Backend)(nil)
