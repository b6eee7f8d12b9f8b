package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// blockingRun blocks each run until released or cancelled; a cancelled
// run returns like the runner does: From set, nothing committed.
type blockingRun struct {
	release   chan struct{}
	cancelled chan struct{}
}

func newBlockingRun() *blockingRun {
	return &blockingRun{release: make(chan struct{}), cancelled: make(chan struct{}, 10)}
}

func (b *blockingRun) run(ctx context.Context, job *plan.Job) (*runner.Result, error) {
	res := &runner.Result{Job: job.Name, From: cdc.SingleOffset("10")}
	select {
	case <-b.release:
		res.To = cdc.SingleOffset("20")
		res.Stats.Read = map[cdc.Op]int64{cdc.OpInsert: 10}
		return res, nil
	case <-ctx.Done():
		b.cancelled <- struct{}{}
		return res, fmt.Errorf("read changes: %w", ctx.Err())
	}
}

// TestShutdownCancelsAfterGrace: Shutdown stops new fires, waits for the
// running run during the grace period, then cancels it; the cancelled run
// is recorded as cancelled with no new offset.
func TestShutdownCancelsAfterGrace(t *testing.T) {
	hist := newMemHistory()
	br := newBlockingRun()
	s, clock, rec := newTestServer(t, Config{Run: br.run, History: hist}, testJob("j", "@every 1s"), testJob("idle", "@daily"))
	ev := rec.waitKind(t, "j", EventScheduled)
	clock.Set(ev.Next)
	rec.waitKind(t, "j", EventStarted)

	grace, expire := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- s.Shutdown(grace) }()
	rec.wait(t, "shutdown", func(ev Event) bool { return ev.Kind == EventShutdown })
	clock.Advance(10 * time.Second) // no new fires during the grace period
	select {
	case err := <-errc:
		t.Fatalf("Shutdown returned %v while a run was going", err)
	default:
	}
	expire() // the grace period ends
	if err := <-errc; !errors.Is(err, ErrForcedShutdown) {
		t.Fatalf("Shutdown = %v, want ErrForcedShutdown", err)
	}
	select {
	case <-br.cancelled:
	default:
		t.Fatal("the run's context was not cancelled")
	}
	runs, _ := hist.List(t.Context(), "", 0)
	if len(runs) != 1 {
		t.Fatalf("history %+v, want one run", runs)
	}
	if r := runs[0]; r.Status != StatusCancelled || !r.To.IsZero() || Rows(r.Read) != 0 || !strings.Contains(r.Error, "canceled") {
		t.Errorf("recorded %+v; want cancelled, no offset, no rows", r)
	}
	for _, e := range rec.pending() {
		if e.Kind == EventStarted && e.At.After(ev.Next) {
			t.Errorf("a run started during shutdown: %+v", e)
		}
	}
	if err := s.Reload(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Reload after Shutdown = %v", err)
	}
}

// TestShutdownLetsRunCommit: a run that ends within the grace period
// commits and Shutdown returns nil.
func TestShutdownLetsRunCommit(t *testing.T) {
	hist := newMemHistory()
	br := newBlockingRun()
	s, clock, rec := newTestServer(t, Config{Run: br.run, History: hist}, testJob("j", "@every 1s"))
	ev := rec.waitKind(t, "j", EventScheduled)
	clock.Set(ev.Next)
	rec.waitKind(t, "j", EventStarted)
	errc := make(chan error, 1)
	go func() { errc <- s.Shutdown(t.Context()) }()
	rec.wait(t, "shutdown", func(ev Event) bool { return ev.Kind == EventShutdown })
	if code, _ := getHealth(t, s); code != http.StatusServiceUnavailable {
		t.Errorf("healthz during shutdown: %d, want 503", code)
	}
	close(br.release)
	if err := <-errc; err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	runs, _ := hist.List(t.Context(), "j", 0)
	if len(runs) != 1 || runs[0].Status != StatusCommitted || runs[0].To.String() != "20" {
		t.Errorf("history %+v, want one committed run to offset 20", runs)
	}
}

// TestReloadKeepsOldOnBrokenFile: a broken file keeps its job, a changed
// file replaces its job, a removed file removes it, a new one is added,
// and a bad schedule counts as broken.
func TestReloadKeepsOldOnBrokenFile(t *testing.T) {
	fr := &fakeRun{}
	a, b, c := testJob("a", "@every 10s"), testJob("b", "@every 10s"), testJob("c", "@every 10s")
	s, _, _ := newTestServer(t, Config{Run: fr.run}, a, b, c)

	b2 := testJob("b", "@every 20s")
	d := testJob("d", "@hourly")
	e := testJob("e", "every five minutes")
	dup := testJob("a", "@daily")
	dup.File = "other/a.yaml"
	err := s.Reload([]Def{
		{File: "a.yaml", Err: errors.New(`a.yaml:3:9: unknown key "slect"`)},
		{File: "b.yaml", Job: b2},
		{File: "d.yaml", Job: d},
		{File: "e.yaml", Job: e},
		{File: "other/a.yaml", Job: dup},
	})
	if !errors.Is(err, ErrKeptOld) {
		t.Fatalf("Reload = %v, want ErrKeptOld", err)
	}
	for _, want := range []string{`a.yaml`, `unknown key "slect"`, "e.yaml", "every five minutes", "kept: [a]", "other/a.yaml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Reload error does not mention %q:\n%v", want, err)
		}
	}
	got := map[string]string{}
	for _, st := range s.Status(t.Context()) {
		got[st.Job] = st.Schedule
	}
	want := map[string]string{"a": "@every 10s", "b": "@every 20s", "d": "@hourly"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("jobs after reload %v, want %v", got, want)
	}
	// A later good a.yaml replaces the kept job.
	a2 := testJob("a", "@every 30s")
	if err := s.Reload([]Def{{File: "a.yaml", Job: a2}, {File: "b.yaml", Job: b2}}); err != nil {
		t.Fatal(err)
	}
	got = map[string]string{}
	for _, st := range s.Status(t.Context()) {
		got[st.Job] = st.Schedule
	}
	if want := map[string]string{"a": "@every 30s", "b": "@every 20s"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("jobs after second reload %v, want %v", got, want)
	}
}

// TestReloadUnchangedKeepsLoop: reloading an identical definition does not
// restart the job's schedule.
func TestReloadUnchangedKeepsLoop(t *testing.T) {
	fr := &fakeRun{}
	j := testJob("j", "@every 10s")
	s, clock, rec := newTestServer(t, Config{Run: fr.run}, j)
	first := rec.waitKind(t, "j", EventScheduled)
	clock.Advance(4 * time.Second)
	same := *j
	if err := s.Reload([]Def{{File: j.File, Job: &same}}); err != nil {
		t.Fatal(err)
	}
	clock.Set(first.Next)
	rec.waitKind(t, "j", EventDone)
	// The loop arms the next fire after the run's Done: wait for it (a
	// reload that restarted the loop would have armed another fire before
	// the run, consumed above, and the run would be off the grid).
	want := first.Next.Add(10 * time.Second)
	if next := rec.waitKind(t, "j", EventScheduled); !next.Next.Equal(want) {
		t.Errorf("armed the next fire for %v, want the original grid %v", next.Next, want)
	}
	if st := s.Status(t.Context())[0]; st.Next == nil || !st.Next.Equal(want) {
		t.Errorf("status next fire %v, want the original grid %v", st.Next, want)
	}
}

// TestMetricsScrape: /metrics served on the listen address is scraped and
// parsed with expfmt.
func TestMetricsScrape(t *testing.T) {
	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, _ int) (*runner.Result, error) {
		if job.Name == "bad" {
			return nil, errors.New("type mismatch: amount is DECIMAL(10,2), target is DATE")
		}
		r := moved(job.Name, 3)
		r.Stats.Read[cdc.OpDelete] = 1
		r.Stats.Written[cdc.OpDelete] = 1
		return r, nil
	}}
	lag := func(ctx context.Context, j *plan.Job) (Lag, error) {
		return Lag{Changes: 42, Age: 90 * time.Second}, nil
	}
	s, clock, rec := newTestServer(t, Config{Run: fr.run, Listen: "127.0.0.1:0", Lag: lag},
		testJob("orders", "@every 1m"), testJob("bad", "@every 1m"))
	rec.waitKind(t, "orders", EventScheduled)
	rec.waitKind(t, "bad", EventScheduled)
	clock.Advance(time.Minute)
	rec.waitKind(t, "orders", EventDone)
	rec.waitKind(t, "bad", EventStopped)
	// The lag loop measures in a goroutine of its own, which emits no
	// event: wait until it has measured orders.
	waitUntil(t, func() bool {
		for _, st := range s.Status(t.Context()) {
			if st.Job == "orders" && st.Lag != nil {
				return true
			}
		}
		return false
	})

	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		f, ok := fams[name]
		if !ok {
			t.Fatalf("metric %s missing", name)
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
		t.Fatalf("metric %s%v missing", name, labels)
		return 0
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sluice_runs_total", map[string]string{"job": "orders", "result": "committed"}, 1},
		{"sluice_runs_total", map[string]string{"job": "bad", "result": "failed"}, 1},
		{"sluice_run_failures_total", map[string]string{"job": "bad", "kind": "permanent"}, 1},
		{"sluice_rows_total", map[string]string{"job": "orders", "stage": "read", "change_type": "INSERT"}, 3},
		{"sluice_rows_total", map[string]string{"job": "orders", "stage": "written", "change_type": "DELETE"}, 1},
		{"sluice_run_duration_seconds", map[string]string{"job": "orders"}, 1},
		{"sluice_job_stopped", map[string]string{"job": "bad"}, 1},
		{"sluice_stream_lag_changes", map[string]string{"job": "orders"}, 42},
		{"sluice_stream_lag_seconds", map[string]string{"job": "orders"}, 90},
	}
	for _, c := range checks {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("Go runtime metrics missing")
	}

	resp2, err := http.Get("http://" + s.Addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/healthz with a stopped job: %d, want 503", resp2.StatusCode)
	}
}

// TestHealthzCodes: 200 with healthy (or never run) jobs, 503 once a job
// keeps failing transiently past UnhealthyAfter; both say "retrying" with
// the time of the next try.
func TestHealthzCodes(t *testing.T) {
	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, _ int) (*runner.Result, error) {
		return nil, fmt.Errorf("connect: %w", errors.Join(errors.New("dial tcp 10.0.0.1:5432"), context.DeadlineExceeded))
	}}
	s, clock, rec := newTestServer(t, Config{Run: fr.run, UnhealthyAfter: 2}, testJob("j", "@every 1m"), testJob("manual", ""))
	if code, body := getHealth(t, s); code != 200 || !strings.Contains(body, `"health": "never run"`) {
		t.Fatalf("healthz before any run: %d %s", code, body)
	}
	ev := rec.waitKind(t, "j", EventScheduled)
	clock.Set(ev.Next)
	r := rec.waitKind(t, "j", EventRetry)
	if code, _ := getHealth(t, s); code != 200 {
		t.Errorf("healthz after one transient failure: %d, want 200", code)
	}
	clock.Advance(r.Delay)
	r = rec.waitKind(t, "j", EventRetry)
	nextTry := `"next_try": "` + r.At.Add(r.Delay).Format(time.RFC3339Nano) + `"`
	code, body := getHealth(t, s)
	for _, want := range []string{`"health": "retrying"`, `"healthy": false`, `"consecutive_failures": 2`, nextTry} {
		if code != 503 || !strings.Contains(body, want) {
			t.Errorf("healthz after two transient failures: %d, want 503 and %s in %s", code, want, body)
		}
	}
}
