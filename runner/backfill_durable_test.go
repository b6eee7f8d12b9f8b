package runner_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// syncWatch wraps the sqlite backend as a sink that records, for each
// transaction a backfill commits, whether it began durable (Begin) or
// deferred (BeginDeferred) and what checkpoint it committed. The rows go
// to the real SQLite file; the wrapper is no sqlite.Backend, so the
// backfill copies its chunks through sluice (no engine copy).
type syncWatch struct {
	runner.Sink
}

var syncLog struct {
	sync.Mutex
	commits []string // "durable" or "deferred", then " handoff" or " state"
}

func (s syncWatch) PrepareSink(ctx context.Context, st *plan.SinkStage) (runner.SinkPlan, error) {
	sp, err := s.Sink.PrepareSink(ctx, st)
	if err != nil {
		return nil, err
	}
	return watchPlan{sp.(runner.DeferredSyncPlan)}, nil
}

type watchPlan struct{ runner.DeferredSyncPlan }

func (p watchPlan) Begin(ctx context.Context, job string) (runner.SinkTx, error) {
	tx, err := p.DeferredSyncPlan.Begin(ctx, job)
	return watchTx{tx, "durable"}, err
}

func (p watchPlan) BeginDeferred(ctx context.Context, job string) (runner.SinkTx, error) {
	tx, err := p.DeferredSyncPlan.BeginDeferred(ctx, job)
	return watchTx{tx, "deferred"}, err
}

type watchTx struct {
	runner.SinkTx
	kind string
}

func (t watchTx) Commit(ctx context.Context, cp runner.Checkpoint) (runner.Stats, error) {
	st, err := t.SinkTx.Commit(ctx, cp)
	if err == nil {
		what := " handoff"
		if _, ok := cp.Offset.Get(runner.BackfillPartition); ok {
			what = " state"
		}
		syncLog.Lock()
		syncLog.commits = append(syncLog.commits, t.kind+what)
		syncLog.Unlock()
	}
	return st, err
}

func init() {
	runner.Register(func(ctx context.Context, url string, log *slog.Logger) (runner.Backend, error) {
		b, err := runner.Open(ctx, "sqlite:"+strings.TrimPrefix(url, "syncwatch:"), log)
		if err != nil {
			return nil, err
		}
		return syncWatch{b.(runner.Sink)}, nil
	}, "syncwatch")
}

// TestBackfillDefersSyncUntilHandOff: every chunk before the last commits
// deferred (no fsync), the last one — which stores the hand-off
// checkpoint before the stream's offset moves — durably; the target holds
// every source row, in every column, whether the row count is a multiple
// of the chunk (the last chunk is empty) or not.
func TestBackfillDefersSyncUntilHandOff(t *testing.T) {
	for _, tc := range []struct {
		rows int
		want string
	}{
		{25, "[deferred state deferred state durable handoff]"},
		{20, "[deferred state deferred state durable handoff]"},
		{5, "[durable handoff]"},
	} {
		t.Run(fmt.Sprintf("%d rows", tc.rows), func(t *testing.T) {
			e := newEnv(t)
			e.items(tc.rows)
			sinkPath := strings.TrimPrefix(e.conn("sink.db"), "sqlite:")
			j := e.job("copy.yaml", "source: items_s\nsink: {table: items, mode: append, connection: 'syncwatch:"+sinkPath+"'}\n")
			syncLog.Lock()
			syncLog.commits = nil
			syncLog.Unlock()
			res, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 10})
			if err != nil {
				t.Fatal(err)
			}
			if res.Rows != int64(tc.rows) {
				t.Fatalf("copied %d rows, want %d", res.Rows, tc.rows)
			}
			syncLog.Lock()
			got := "[" + strings.Join(syncLog.commits, " ") + "]"
			syncLog.Unlock()
			if got != tc.want {
				t.Errorf("commits = %s, want %s", got, tc.want)
			}
			if src, dst := e.rows("", itemsQuery), e.rows(e.conn("sink.db"), itemsQuery); src != dst {
				t.Errorf("target %s, source %s", dst, src)
			}
			if p := e.pending("items_s"); len(p) != 0 {
				t.Errorf("stream not handed off: pending %v", p)
			}
		})
	}
}
