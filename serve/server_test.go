package serve

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// TestEveryNoDrift: @every fires stay on first + k·interval even though
// every run takes longer than a second of fake time and the loop wakes
// late.
func TestEveryNoDrift(t *testing.T) {
	var clock *FakeClock
	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, _ int) (*runner.Result, error) {
		clock.Advance(1700 * time.Millisecond) // the run takes 1.7s
		return &runner.Result{Job: job.Name}, nil
	}}
	clock = NewFakeClock(t0)
	_, _, rec := newTestServer(t, Config{Run: fr.run, Clock: clock}, testJob("j", "@every 10s"))
	first := t0.Truncate(time.Second).Add(10 * time.Second) // whole seconds
	for i := range 5 {
		ev := rec.waitKind(t, "j", EventScheduled)
		if want := first.Add(time.Duration(i) * 10 * time.Second); !ev.Next.Equal(want) {
			t.Fatalf("fire %d scheduled at %v, want %v", i, ev.Next, want)
		}
		clock.Set(ev.Next.Add(300 * time.Millisecond)) // wake late
		rec.waitKind(t, "j", EventDone)
	}
}

// TestTimedDST: a server's fires across the fall-back change in New York
// (the repeated 01:30 fires twice, as robfig/cron does) and the
// spring-forward one (the missing 02:30 is skipped).
func TestTimedDST(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no tzdata")
	}
	for _, c := range []struct {
		name  string
		spec  string
		start time.Time
		want  []string
	}{
		{"fall-back", "30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny),
			[]string{"11-01 01:30 EDT", "11-01 01:30 EST", "11-02 01:30 EST"}},
		{"spring-forward", "30 2 * * *", time.Date(2026, 3, 7, 12, 0, 0, 0, ny),
			[]string{"03-09 02:30 EDT", "03-10 02:30 EDT"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := NewFakeClock(c.start)
			j := testJob("j", c.spec)
			j.ScheduleTZ = "America/New_York"
			fr := &fakeRun{}
			_, _, rec := newTestServer(t, Config{Run: fr.run, Clock: clock}, j)
			var got []string
			for range c.want {
				ev := rec.waitKind(t, "j", EventScheduled)
				got = append(got, ev.Next.In(ny).Format("01-02 15:04 MST"))
				clock.Set(ev.Next)
				rec.waitKind(t, "j", EventDone)
			}
			if strings.Join(got, ", ") != strings.Join(c.want, ", ") {
				t.Errorf("fires %v, want %v", got, c.want)
			}
			if n := fr.count("j"); n != len(c.want) {
				t.Errorf("%d runs, want %d", n, len(c.want))
			}
		})
	}
}

// TestOverlapSkipped: a fire that finds the previous run still going is
// skipped (and counted), and the schedule goes on.
func TestOverlapSkipped(t *testing.T) {
	release := make(chan struct{})
	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, call int) (*runner.Result, error) {
		if call == 1 {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &runner.Result{Job: job.Name}, nil
	}}
	s, clock, rec := newTestServer(t, Config{Run: fr.run}, testJob("j", "@every 5s"))
	ev := rec.waitKind(t, "j", EventScheduled)
	clock.Set(ev.Next)
	rec.waitKind(t, "j", EventStarted)
	for range 2 { // two fires while the first run blocks
		ev = rec.waitKind(t, "j", EventScheduled)
		clock.Set(ev.Next)
		if sk := rec.waitKind(t, "j", EventSkipped); sk.Reason != "running" {
			t.Fatalf("skip reason %q", sk.Reason)
		}
	}
	close(release)
	rec.waitKind(t, "j", EventDone)
	ev = rec.waitKind(t, "j", EventScheduled)
	clock.Set(ev.Next)
	rec.waitKind(t, "j", EventDone)
	if n := fr.count("j"); n != 2 {
		t.Errorf("%d runs, want 2", n)
	}
	if got := counterValue(t, s.Metrics(), "sluice_fires_skipped_total", map[string]string{"job": "j", "reason": "running"}); got != 2 {
		t.Errorf("skipped counter %v, want 2", got)
	}
}

// moved returns a committed result that read n inserts.
func moved(job string, n int64) *runner.Result {
	return &runner.Result{Job: job, Stats: runner.Stats{Read: map[cdc.Op]int64{cdc.OpInsert: n}, Written: map[cdc.Op]int64{cdc.OpInsert: n}},
		From: cdc.SingleOffset("1"), To: cdc.SingleOffset("2")}
}

// TestContinuousBackoff: an idle continuous job polls 100ms, 200ms, …
// capped at 5s; a run that moves rows is followed at once by another, and
// resets the backoff.
func TestContinuousBackoff(t *testing.T) {
	var rows atomic.Int64
	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, _ int) (*runner.Result, error) {
		if n := rows.Swap(0); n > 0 {
			return moved(job.Name, n), nil
		}
		return &runner.Result{Job: job.Name, From: cdc.SingleOffset("2"), To: cdc.SingleOffset("2")}, nil
	}}
	_, clock, rec := newTestServer(t, Config{Run: fr.run}, testJob("c", "continuous"))
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000}
	for i, w := range want {
		ev := rec.waitKind(t, "c", EventIdle)
		if ev.Delay != w*time.Millisecond {
			t.Fatalf("idle wait %d = %v, want %v", i, ev.Delay, w*time.Millisecond)
		}
		if i < len(want)-1 {
			clock.Advance(ev.Delay)
		}
	}
	// The loop is parked in its 5s wait: the run count is stable.
	before := fr.count("c")
	rows.Store(7)
	clock.Advance(5 * time.Second)
	// The run that moved 7 rows is followed by an immediate run (no idle
	// wait in between), which finds nothing and waits 100ms again.
	ev := rec.waitKind(t, "c", EventIdle)
	if ev.Delay != 100*time.Millisecond {
		t.Errorf("after rows moved the wait is %v, want 100ms", ev.Delay)
	}
	if got := fr.count("c") - before; got != 2 {
		t.Errorf("%d runs after the wait, want 2 (busy, then an immediate re-run)", got)
	}
}

type chanWaker struct{ ch chan struct{} }

func (w *chanWaker) C() <-chan struct{} { return w.ch }
func (w *chanWaker) Close() error       { return nil }

// TestContinuousWaker: a wake-up ends the idle wait without the clock
// moving.
func TestContinuousWaker(t *testing.T) {
	w := &chanWaker{ch: make(chan struct{}, 1)}
	fr := &fakeRun{}
	_, clock, rec := newTestServer(t, Config{Run: fr.run,
		Waker: func(context.Context, *plan.Job) (Waker, error) { return w, nil }}, testJob("c", "continuous"))
	for range 3 {
		ev := rec.waitKind(t, "c", EventIdle)
		clock.Advance(ev.Delay)
	}
	if ev := rec.waitKind(t, "c", EventIdle); ev.Delay != 800*time.Millisecond {
		t.Fatalf("fourth idle wait %v", ev.Delay)
	}
	n := fr.count("c")
	w.ch <- struct{}{}
	ev := rec.waitKind(t, "c", EventIdle)
	if fr.count("c") != n+1 {
		t.Errorf("wake-up did not run the job")
	}
	if ev.Delay != 100*time.Millisecond {
		t.Errorf("after a wake-up the wait is %v, want a reset to 100ms", ev.Delay)
	}
}

// TestTransientRetry: transient failures retry with exponential backoff
// until the run succeeds; the job stays scheduled.
func TestTransientRetry(t *testing.T) {
	hist := newMemHistory()
	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, call int) (*runner.Result, error) {
		switch call {
		case 1:
			return nil, &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
		case 2:
			return nil, &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}
		}
		return moved(job.Name, 2), nil
	}}
	s, clock, rec := newTestServer(t, Config{Run: fr.run, History: hist}, testJob("j", "@every 1m"))
	ev := rec.waitKind(t, "j", EventScheduled)
	clock.Set(ev.Next)
	for _, want := range []time.Duration{time.Second, 2 * time.Second} {
		r := rec.waitKind(t, "j", EventRetry)
		if r.Delay != want {
			t.Fatalf("retry delay %v, want %v", r.Delay, want)
		}
		if st := s.Status(t.Context())[0]; st.Health != HealthRetrying || !st.Healthy {
			t.Errorf("while retrying: health %q healthy %v", st.Health, st.Healthy)
		}
		clock.Advance(r.Delay)
	}
	rec.wait(t, "committed run", func(ev Event) bool { return ev.Kind == EventDone && ev.Run.Status == StatusCommitted })
	runs, _ := hist.List(t.Context(), "j", 0)
	var got []Status
	for _, r := range runs {
		got = append(got, r.Status)
	}
	if want := []Status{StatusCommitted, StatusTransient, StatusTransient}; !equalStatuses(got, want) {
		t.Errorf("history %v, want %v (newest first)", got, want)
	}
	if st := s.Status(t.Context())[0]; st.Health != HealthOK || st.ConsecutiveFailures != 0 || st.Stopped {
		t.Errorf("after success: %+v", st)
	}
	if v := counterValue(t, s.Metrics(), "sluice_run_failures_total", map[string]string{"job": "j", "kind": "transient"}); v != 2 {
		t.Errorf("transient failures metric %v, want 2", v)
	}
	rec.waitKind(t, "j", EventScheduled) // still scheduled
}

func equalStatuses(a, b []Status) bool {
	return strings.Join(statusStrings(a), ",") == strings.Join(statusStrings(b), ",")
}

func statusStrings(s []Status) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = string(x)
	}
	return out
}

// TestPermanentFailureStopsJob: a permanent failure stops only that job;
// health and metrics show it; a reload restarts it.
func TestPermanentFailureStopsJob(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, _ int) (*runner.Result, error) {
		if job.Name == "bad" && broken.Load() {
			return nil, &runner.RunError{Job: "bad", Err: errors.New(`no such table: "orders"`)}
		}
		return &runner.Result{Job: job.Name}, nil
	}}
	bad, good := testJob("bad", "@every 10s"), testJob("good", "@every 10s")
	s, clock, rec := newTestServer(t, Config{Run: fr.run}, bad, good)
	rec.waitKind(t, "bad", EventScheduled)
	rec.waitKind(t, "good", EventScheduled)
	clock.Advance(10 * time.Second)
	stop := rec.waitKind(t, "bad", EventStopped)
	if !strings.Contains(stop.Err.Error(), "no such table") {
		t.Errorf("stop error %v", stop.Err)
	}
	for range 3 {
		rec.waitKind(t, "good", EventScheduled)
		clock.Advance(10 * time.Second)
		rec.waitKind(t, "good", EventDone)
	}
	if n := fr.count("bad"); n != 1 {
		t.Errorf("stopped job ran %d times, want 1", n)
	}
	code, body := getHealth(t, s)
	if code != 503 || !strings.Contains(body, `"health": "stopped"`) {
		t.Errorf("healthz %d %s", code, body)
	}
	if v := gaugeValue(t, s.Metrics(), "sluice_job_stopped", map[string]string{"job": "bad"}); v != 1 {
		t.Errorf("sluice_job_stopped{bad} = %v", v)
	}
	if v := counterValue(t, s.Metrics(), "sluice_run_failures_total", map[string]string{"job": "bad", "kind": "permanent"}); v != 1 {
		t.Errorf("permanent failures %v", v)
	}

	// The operator fixes the table and reloads: the job runs again.
	broken.Store(false)
	if err := s.Reload([]Def{{File: bad.File, Job: bad}, {File: good.File, Job: good}}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "bad rescheduled", func(ev Event) bool {
		return ev.Job == "bad" && ev.Kind == EventScheduled && ev.Next.After(clock.Now())
	})
	clock.Advance(10 * time.Second)
	rec.wait(t, "a good run of bad", func(ev Event) bool { return ev.Job == "bad" && ev.Kind == EventDone && ev.Err == nil })
	if code, body := getHealth(t, s); code != 200 {
		t.Errorf("healthz after the fix: %d %s", code, body)
	}
}

// TestContinuousEmptyPollsNotRecorded: polls of an idle continuous job that
// read nothing are not written to the history; a run that moved rows is.
func TestContinuousEmptyPollsNotRecorded(t *testing.T) {
	var rows atomic.Int64
	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, _ int) (*runner.Result, error) {
		if n := rows.Swap(0); n > 0 {
			return moved(job.Name, n), nil
		}
		return &runner.Result{Job: job.Name, From: cdc.SingleOffset("2"), To: cdc.SingleOffset("2")}, nil
	}}
	hist := newMemHistory()
	_, clock, rec := newTestServer(t, Config{Run: fr.run, History: hist}, testJob("c", "continuous"))
	for range 3 {
		clock.Advance(rec.waitKind(t, "c", EventIdle).Delay)
	}
	rows.Store(5)
	ev := rec.waitKind(t, "c", EventIdle)
	clock.Advance(ev.Delay)
	rec.waitKind(t, "c", EventIdle)
	runs, err := hist.List(t.Context(), "c", 100)
	if err != nil {
		t.Fatal(err)
	}
	if fr.count("c") < 5 {
		t.Fatalf("only %d runs happened", fr.count("c"))
	}
	if len(runs) != 1 || Rows(runs[0].Read) == 0 {
		t.Fatalf("history has %d runs (%+v), want exactly the one that moved rows", len(runs), runs)
	}
}
