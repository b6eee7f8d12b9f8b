package runner

import "context"

// DefaultMaxConns is the most connections the pool of one PostgreSQL
// database holds when Runner.MaxConns is 0 and the connection URL sets no
// pool_max_conns (issue #19: a bounded number of connections per database,
// whatever the number of jobs). It must stay above twice the runs that can
// be under way at once: a run holds at most two connections of one pool
// (its read and its sink transaction in the same database), and runs that
// each hold one and wait for another must find one free.
const DefaultMaxConns = 10

type maxConnsKey struct{}

// MaxConns returns the pool bound a backend opened with ctx should use
// when its URL sets none: Runner.MaxConns, else DefaultMaxConns.
func MaxConns(ctx context.Context) int {
	if n, ok := ctx.Value(maxConnsKey{}).(int); ok && n > 0 {
		return n
	}
	return DefaultMaxConns
}

func withMaxConns(ctx context.Context, n int) context.Context {
	if n <= 0 {
		return ctx
	}
	return context.WithValue(ctx, maxConnsKey{}, n)
}
