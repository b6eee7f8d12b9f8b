package serve

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// flakyHistory is a memHistory that refuses every Record while down.
type flakyHistory struct {
	*memHistory
	down    atomic.Bool
	refused atomic.Int64
}

func (h *flakyHistory) Record(ctx context.Context, r *Run) (int64, error) {
	if h.down.Load() {
		h.refused.Add(1)
		return 0, errors.New("history database unavailable: connection refused")
	}
	return h.memHistory.Record(ctx, r)
}

func (h *flakyHistory) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.runs)
}

// waitFor polls cond (a state the server's goroutines reach without the
// clock moving) until it holds or waitLimit passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHistoryKeepsRunsWhileDown: runs that end while the history refuses
// them are kept in memory (the metric counts them), retried with backoff,
// and stored in the order they ran once it is back.
func TestHistoryKeepsRunsWhileDown(t *testing.T) {
	hist := &flakyHistory{memHistory: newMemHistory()}
	hist.down.Store(true)
	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, call int) (*runner.Result, error) {
		return moved(job.Name, int64(call)), nil
	}}
	s, clock, rec := newTestServer(t, Config{Run: fr.run, History: hist}, testJob("j", "@every 1m"))
	const runs = 3
	for range runs {
		ev := rec.waitKind(t, "j", EventScheduled)
		clock.Set(ev.Next)
		rec.waitKind(t, "j", EventDone)
	}
	if n := hist.count(); n != 0 {
		t.Fatalf("%d runs stored while the history was down", n)
	}
	if v := gaugeValue(t, s.Metrics(), "sluice_history_unrecorded_runs", nil); v != runs {
		t.Errorf("sluice_history_unrecorded_runs = %v, want %d", v, runs)
	}
	hist.down.Store(false)
	// The next fire's timer and the history retry's timer.
	if err := clock.WaitTimers(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Second) // past the retry delay (at most 8s after three failed flushes), before the next fire
	waitFor(t, "the kept runs to be stored", func() bool { return hist.count() == runs })
	stored, _ := hist.List(t.Context(), "j", 0)
	for i, r := range stored { // newest first: reads runs, runs-1, … 1
		if want := int64(runs - i); Rows(r.Read) != want || r.ID != want {
			t.Errorf("stored run %d: id %d read %d, want id %d read %d (in run order)", i, r.ID, Rows(r.Read), want, want)
		}
	}
	waitFor(t, "the metric to drop to 0", func() bool {
		return gaugeValue(t, s.Metrics(), "sluice_history_unrecorded_runs", nil) == 0
	})
}

// TestHistoryUnrecordedAtShutdown: runs the history never took are logged
// at error level, one line per run, when the server stops.
func TestHistoryUnrecordedAtShutdown(t *testing.T) {
	hist := &flakyHistory{memHistory: newMemHistory()}
	hist.down.Store(true)
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil))
	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, call int) (*runner.Result, error) {
		return moved(job.Name, 7), nil
	}}
	s, clock, rec := newTestServer(t, Config{Run: fr.run, History: hist, Log: log}, testJob("j", "@every 1m"))
	for range 2 {
		ev := rec.waitKind(t, "j", EventScheduled)
		clock.Set(ev.Next)
		rec.waitKind(t, "j", EventDone)
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if n := strings.Count(out, "level=ERROR msg=\"run history: run not recorded"); n != 2 {
		t.Errorf("%d unrecorded runs logged at error level, want 2:\n%s", n, out)
	}
	if !strings.Contains(out, "job=j") || !strings.Contains(out, "read=7") {
		t.Errorf("the log lines do not describe the run:\n%s", out)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestHistoryAcrossKilledConnections: the PostgreSQL history's sessions are
// terminated (pg_terminate_backend) before every run; every run is still
// recorded, once, in order.
func TestHistoryAcrossKilledConnections(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := t.Context()
	store := openPG(t, url, "n1")
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	kill := func() int {
		var n int
		err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, call int) (*runner.Result, error) {
		return moved(job.Name, int64(call)), nil
	}}
	counted := &countingHistory{History: store}
	s, clock, rec := newTestServer(t, Config{Run: fr.run, History: counted}, testJob("j", "@every 1m"))
	const runs = 12
	killed := 0
	for range runs {
		ev := rec.waitKind(t, "j", EventScheduled)
		killed += kill()
		clock.Set(ev.Next)
		rec.waitKind(t, "j", EventDone)
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if killed == 0 || counted.failed.Load() == 0 {
		t.Fatalf("%d history sessions terminated, %d records failed: the test did not cut the history off", killed, counted.failed.Load())
	}
	stored, err := store.List(ctx, "j", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != runs {
		t.Fatalf("%d runs recorded, want %d (%d sessions killed)", len(stored), runs, killed)
	}
	for i, r := range stored {
		if want := int64(runs - i); Rows(r.Read) != want {
			t.Errorf("run %d: read %d, want %d (each run once, in order)", i, Rows(r.Read), want)
		}
	}
	t.Logf("%d runs, %d history sessions terminated, %d records failed and were retried, all recorded", runs, killed, counted.failed.Load())
}

// countingHistory counts the records its History refused.
type countingHistory struct {
	History
	failed atomic.Int64
}

func (h *countingHistory) Record(ctx context.Context, r *Run) (int64, error) {
	id, err := h.History.Record(ctx, r)
	if err != nil {
		h.failed.Add(1)
	}
	return id, err
}

// TestChangeLogMetrics: every lag poll calls TrimLogs with the loaded jobs
// and publishes each log's rows and bytes.
func TestChangeLogMetrics(t *testing.T) {
	var calls atomic.Int64
	trim := func(ctx context.Context, jobs []*plan.Job) ([]runner.LogSize, error) {
		n := calls.Add(1)
		if len(jobs) != 1 || jobs[0].Name != "j" {
			return nil, errors.New("wrong jobs")
		}
		return []runner.LogSize{{Database: "/data/src.db", Table: "orders", Rows: 10 * n, Bytes: 4096 * n}}, nil
	}
	s, clock, _ := newTestServer(t, Config{Run: (&fakeRun{}).run, TrimLogs: trim, LagInterval: time.Minute}, testJob("j", "@every 1h"))
	labels := map[string]string{"database": "/data/src.db", "table": "orders"}
	waitFor(t, "the first trim", func() bool { return gaugeValue(t, s.Metrics(), "sluice_change_log_rows", labels) == 10 })
	if v := gaugeValue(t, s.Metrics(), "sluice_change_log_bytes", labels); v != 4096 {
		t.Errorf("sluice_change_log_bytes = %v, want 4096", v)
	}
	if err := clock.WaitTimers(t.Context(), 2); err != nil { // the next fire and the next poll
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	waitFor(t, "the second trim", func() bool { return gaugeValue(t, s.Metrics(), "sluice_change_log_rows", labels) == 20 })
}
