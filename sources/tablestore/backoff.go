package tablestore

import (
	"context"
	"time"
)

// IdleBackoff spaces out the reads of a continuous consumer while the
// stream has nothing new: each Next doubles the wait from Min up to Max;
// Reset (after a read that returned changes) starts again at Min. The zero
// value uses 100ms and 5s. It is not safe for concurrent use.
type IdleBackoff struct {
	Min, Max time.Duration
	cur      time.Duration
}

// Next returns the wait before the next read and doubles it for the time
// after.
func (b *IdleBackoff) Next() time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = 100 * time.Millisecond
	}
	if hi < lo {
		hi = max(lo, 5*time.Second)
	}
	if b.cur < lo {
		b.cur = lo
	}
	d := b.cur
	b.cur = min(b.cur*2, hi)
	return d
}

// Reset makes the next wait Min.
func (b *IdleBackoff) Reset() { b.cur = 0 }

// Wait sleeps for Next() or until ctx is done (returning ctx.Err()).
func (b *IdleBackoff) Wait(ctx context.Context) error { return sleep(ctx, b.Next()) }
