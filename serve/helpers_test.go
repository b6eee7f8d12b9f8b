package serve

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// t0 is the fake clock's start; the sub-second part checks that fires are
// rounded to whole seconds.
var t0 = time.Date(2026, 1, 5, 9, 0, 0, 300_000_000, time.UTC)

// waitLimit bounds every wait on the server's goroutines; it is a safety
// net against hangs, not a sleep: tests never wait for time to pass.
const waitLimit = 10 * time.Second

func testJob(name, sched string) *plan.Job {
	return &plan.Job{Name: name, File: name + ".yaml", Schedule: sched, Source: plan.Source{Stream: name + "_stream"}}
}

func testLog(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// recorder queues a server's events for tests to wait on, in order.
type recorder struct {
	mu     sync.Mutex
	events []Event
	notify chan struct{}
	hook   func(Event) // optional, called first
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1)} }

func (r *recorder) on(ev Event) {
	if r.hook != nil {
		r.hook(ev)
	}
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// wait removes and returns the oldest queued event that matches, waiting
// for one; events that do not match stay queued.
func (r *recorder) wait(t *testing.T, what string, match func(Event) bool) Event {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for i, ev := range r.events {
			if match(ev) {
				r.events = append(r.events[:i], r.events[i+1:]...)
				r.mu.Unlock()
				return ev
			}
		}
		r.mu.Unlock()
		select {
		case <-r.notify:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (r *recorder) waitKind(t *testing.T, job string, k EventKind) Event {
	t.Helper()
	return r.wait(t, string(k)+" of "+job, func(ev Event) bool { return ev.Job == job && ev.Kind == k })
}

// pending returns the queued events without consuming them.
func (r *recorder) pending() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// fakeRun is a scriptable RunFunc.
type fakeRun struct {
	mu    sync.Mutex
	calls map[string]int
	// fn decides each call's outcome; nil → an empty committed result.
	fn func(ctx context.Context, job *plan.Job, call int) (*runner.Result, error)
}

func (f *fakeRun) run(ctx context.Context, job *plan.Job) (*runner.Result, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[job.Name]++
	n := f.calls[job.Name]
	fn := f.fn
	f.mu.Unlock()
	if fn == nil {
		return &runner.Result{Job: job.Name}, nil
	}
	return fn(ctx, job, n)
}

func (f *fakeRun) count(job string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[job]
}

// newTestServer builds and starts a server on a fake clock.
func newTestServer(t *testing.T, cfg Config, jobs ...*plan.Job) (*Server, *FakeClock, *recorder) {
	t.Helper()
	clock, _ := cfg.Clock.(*FakeClock)
	if clock == nil {
		clock = NewFakeClock(t0)
		cfg.Clock = clock
	}
	rec := newRecorder()
	if cfg.OnEvent == nil {
		cfg.OnEvent = rec.on
	}
	if cfg.Log == nil {
		cfg.Log = testLog(t)
	}
	if cfg.Rand == nil {
		cfg.Rand = func() float64 { return 0 }
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var defs []Def
	for _, j := range jobs {
		defs = append(defs, Def{File: j.File, Job: j})
	}
	if err := s.Reload(defs); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // no grace: cancel whatever still runs
		_ = s.Shutdown(ctx)
	})
	return s, clock, rec
}

// memHistory is an in-memory History.
type memHistory struct {
	mu   sync.Mutex
	runs []Run
}

func newMemHistory() *memHistory { return &memHistory{} }

func (h *memHistory) Record(_ context.Context, r *Run) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := *r
	c.ID = int64(len(h.runs) + 1)
	h.runs = append(h.runs, c)
	return c.ID, nil
}

func (h *memHistory) List(_ context.Context, job string, limit int) ([]Run, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Run
	for i := len(h.runs) - 1; i >= 0 && len(out) < defaultLimit(limit); i-- {
		if job == "" || h.runs[i].Job == job {
			out = append(out, h.runs[i])
		}
	}
	return out, nil
}

// metricValue finds a metric of the registry by name and labels.
func metricValue(t *testing.T, m *Metrics, name string, labels map[string]string) (*dto.Metric, bool) {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, mt := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range mt.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			return mt, true
		}
	}
	return nil, false
}

func counterValue(t *testing.T, m *Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	mt, ok := metricValue(t, m, name, labels)
	if !ok {
		return 0
	}
	return mt.GetCounter().GetValue()
}

func gaugeValue(t *testing.T, m *Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	mt, ok := metricValue(t, m, name, labels)
	if !ok {
		return -1
	}
	return mt.GetGauge().GetValue()
}

// getHealth calls /healthz through the server's handler.
func getHealth(t *testing.T, s *Server) (int, string) {
	t.Helper()
	rr := httptest.NewRecorder()
	s.Handler().ServeHTTP(rr, httptest.NewRequest("GET", "/healthz", nil))
	return rr.Code, rr.Body.String()
}
