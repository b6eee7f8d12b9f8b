package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
)

// TestSinkCommitIsDurable: a sink transaction on a connection whose
// synchronous_commit is off (here set by the connection URL, as a role or
// database setting would) commits with synchronous_commit on, so the
// commit the runner waits for before moving the source's offset is
// flushed; a connection's own durable setting is kept. BeginDeferred's
// transaction commits with synchronous_commit off, whatever the session's.
func TestSinkCommitIsDurable(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		set, want string
		deferred  bool // BeginDeferred (a backfill's chunk before the last)
	}{
		{"off", "on", false},
		{"local", "local", false},
		{"on", "on", false},
		{"on", "off", true},
		{"local", "off", true},
	} {
		name := tc.set
		if tc.deferred {
			name += " deferred"
		}
		t.Run(name, func(t *testing.T) {
			cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
			cfg.ConnConfig.RuntimeParams["synchronous_commit"] = tc.set
			p, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			sp, err := New(p, 150000, nil).PrepareSink(ctx, stage("tgt", plan.ModeAppend, nil, ordersSchema))
			if err != nil {
				t.Fatal(err)
			}
			begin := sp.Begin
			if tc.deferred {
				begin = sp.(*Plan).BeginDeferred
			}
			rtx, err := begin(ctx, "job1")
			if err != nil {
				t.Fatal(err)
			}
			tx := rtx.(*Tx)
			var got string
			if err := tx.tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got); err != nil || got != tc.want {
				t.Fatalf("synchronous_commit in the sink transaction = %q, %v; want %q", got, err, tc.want)
			}
			if err := tx.Write(ctx, []cdc.Change{ch(cdc.OpInsert, 1, int64(1), "a", dec("1"))}); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Commit(ctx, cpAt("p1")); err != nil {
				t.Fatal(err)
			}
			// SET LOCAL ends with the transaction: the session keeps its own.
			if err := p.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got); err != nil || got != tc.set {
				t.Fatalf("after the commit the session's synchronous_commit = %q, %v; want %q", got, err, tc.set)
			}
		})
	}
}
