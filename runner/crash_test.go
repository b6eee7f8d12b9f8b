package runner_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
)

// lostAdvance wraps the sqlite backend as a source whose Advance fails as
// if the process died right after the sink commit: the sink checkpoint is
// ahead of the stream's offset.
type lostAdvance struct {
	runner.Source
	fail *atomic.Bool
}

func (l lostAdvance) Advance(ctx context.Context, s *runner.StreamInfo, from, to cdc.Offset) error {
	if l.fail.Load() {
		return errors.New("simulated crash before the offset advance")
	}
	return l.Source.Advance(ctx, s, from, to)
}

var failAdvance atomic.Bool

func init() {
	runner.Register(func(ctx context.Context, url string, log *slog.Logger) (runner.Backend, error) {
		b, err := runner.Open(ctx, "sqlite:"+strings.TrimPrefix(url, "lostadvance:"), log)
		if err != nil {
			return nil, err
		}
		return lostAdvance{Source: b.(runner.Source), fail: &failAdvance}, nil
	}, "lostadvance")
}

func TestCrashBetweenSinkCommitAndOffsetAdvance(t *testing.T) {
	e := newEnv(t)
	srcPath := strings.TrimPrefix(e.r.Conn, "sqlite:")
	e.sql("", seedSetup)
	sink := e.conn("sink.db")
	j := e.job("x.yaml", `
connection: lostadvance:`+srcPath+`
source: orders_stream
sink: {table: copy, mode: append, connection: `+sink+`}
`)
	failAdvance.Store(true)
	t.Cleanup(func() { failAdvance.Store(false) })
	e.sql("", "INSERT INTO orders VALUES (5, 'Eve', 10.50, 'new')")
	if _, err := e.run(j); err != nil {
		t.Fatal(err) // the run itself succeeded: rows and checkpoint committed
	}
	if p := e.pending("orders_stream"); len(p) != 1 {
		t.Fatalf("stream offset should not have moved, pending = %v", p)
	}
	// The next run starts from the sink's checkpoint: Eve is not copied twice.
	failAdvance.Store(false)
	e.sql("", "INSERT INTO orders VALUES (6, 'Frank', 1.00, 'new')")
	if _, err := e.run(j); err != nil {
		t.Fatal(err)
	}
	got := e.sql(sink, "SELECT id, name FROM copy ORDER BY id")
	want := [][]string{{"5", "Eve"}, {"6", "Frank"}}
	if !equalRows(got, want) {
		t.Fatalf("sink = %v, want %v (each change exactly once)", got, want)
	}
	if p := e.pending("orders_stream"); len(p) != 0 {
		t.Fatalf("pending after recovery = %v, want none", p)
	}
}
