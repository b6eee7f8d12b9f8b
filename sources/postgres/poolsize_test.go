package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sources/postgres"
)

// TestPoolSize: a database's pool holds runner.DefaultMaxConns connections
// at most whatever the machine's CPUs (pgxpool's own default grows with
// them), Runner.MaxConns when set, and a URL's own pool_max_conns over
// both.
func TestPoolSize(t *testing.T) {
	url := pgtest.NewDatabase(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	for _, tc := range []struct {
		name     string
		url      string
		maxConns int
		want     int32
	}{
		{"default", url, 0, runner.DefaultMaxConns},
		{"Runner.MaxConns", url, 14, 14},
		{"the URL's pool_max_conns", url + sep + "pool_max_conns=3", 14, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner.Runner{MaxConns: tc.maxConns}
			defer r.Close()
			b, err := r.Backend(context.Background(), tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.(*postgres.Backend).Pool().Config().MaxConns; got != tc.want {
				t.Errorf("pool holds at most %d connections, want %d", got, tc.want)
			}
		})
	}
}
