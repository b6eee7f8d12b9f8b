package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/serve"
)

// lagFunc measures a job's stream lag by reading (not consuming) its
// pending changes: their count and the age of the oldest. It reads every
// pending change, so it costs a read of the backlog.
func lagFunc(r *runner.Runner) serve.LagFunc {
	return func(ctx context.Context, job *plan.Job) (serve.Lag, error) {
		b, err := r.JobBackend(ctx, job, job.Conn)
		if err != nil {
			return serve.Lag{}, err
		}
		src, ok := b.(runner.Source)
		if !ok {
			return serve.Lag{}, fmt.Errorf("%w: %s", runner.ErrNotSource, b.Scheme())
		}
		info, err := src.Stream(ctx, job.Source)
		if err != nil {
			return serve.Lag{}, err
		}
		rd, err := src.Changes(ctx, info, info.Offset, runner.ReadOptions{})
		if err != nil {
			return serve.Lag{}, err
		}
		defer rd.Close()
		var lag serve.Lag
		var oldest time.Time
		for {
			batch, err := rd.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return serve.Lag{}, err
			}
			for _, ch := range batch {
				lag.Changes++
				if oldest.IsZero() || ch.CommitTime.Before(oldest) {
					oldest = ch.CommitTime
				}
			}
		}
		if !oldest.IsZero() {
			lag.Age = time.Since(oldest)
		}
		return lag, nil
	}
}
