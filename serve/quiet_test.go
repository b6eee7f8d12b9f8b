package serve

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// fixedPosition is a Waker and Positioner whose position the test sets.
type fixedPosition struct {
	mu  sync.Mutex
	pos string
	ch  chan struct{}
}

func (f *fixedPosition) C() <-chan struct{} { return f.ch }
func (f *fixedPosition) Close() error       { return nil }
func (f *fixedPosition) Position() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pos, true
}
func (f *fixedPosition) set(p string) {
	f.mu.Lock()
	f.pos = p
	f.mu.Unlock()
}

// TestQuietAfterOffsetOnlyRun: a run that read nothing but moved its
// offset (a PostgreSQL offset carries the snapshot, which any commit in
// the database moves) lets the next fires be skipped as "unchanged" while
// the position stays; a moved position runs the job again, and a run that
// read something is never remembered as quiet.
func TestQuietAfterOffsetOnlyRun(t *testing.T) {
	w := &fixedPosition{pos: "1.0", ch: make(chan struct{}, 1)}
	var mu sync.Mutex
	read := map[int]bool{3: true} // the third run reads a row
	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, call int) (*runner.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		r := &runner.Result{Job: job.Name, From: cdc.SingleOffset("snap-a"), To: cdc.SingleOffset("snap-b")}
		if read[call] {
			r.Stats.Read = map[cdc.Op]int64{cdc.OpInsert: 1}
		}
		return r, nil
	}}
	waker := func(ctx context.Context, job *plan.Job) (Waker, error) { return w, nil }
	_, clock, rec := newTestServer(t, Config{Run: fr.run, Waker: waker}, testJob("j", "@every 5s"))
	fire := func() Event {
		t.Helper()
		ev := rec.waitKind(t, "j", EventScheduled)
		clock.Set(ev.Next)
		return rec.wait(t, "the fire's outcome", func(ev Event) bool {
			return ev.Job == "j" && (ev.Kind == EventDone || ev.Kind == EventSkipped)
		})
	}
	steps := []struct {
		pos      string
		wantRun  bool
		wantRuns int
	}{
		{"1.0", true, 1},  // first run: reads nothing, offset moves
		{"1.0", false, 1}, // same position: skipped
		{"1.1", true, 2},  // a notification: runs (reads nothing)
		{"1.2", true, 3},  // runs and reads a row
		{"1.2", true, 4},  // after a run that read: runs again
		{"1.2", false, 4}, // that one read nothing: skipped
	}
	for i, s := range steps {
		w.set(s.pos)
		ev := fire()
		if ran := ev.Kind == EventDone; ran != s.wantRun {
			t.Fatalf("fire %d (position %s): ran %v (event %s %q), want %v", i+1, s.pos, ran, ev.Kind, ev.Reason, s.wantRun)
		}
		if ev.Kind == EventSkipped && ev.Reason != "unchanged" {
			t.Errorf("fire %d skipped as %q, want unchanged", i+1, ev.Reason)
		}
		if n := fr.count("j"); n != s.wantRuns {
			t.Errorf("after fire %d: %d runs, want %d", i+1, n, s.wantRuns)
		}
	}
}

// TestTrimWhileQuiet: while every job is quiet, the lag poll does not
// trim the change logs again (until QuietMax); once a job's position
// moves, it does.
func TestTrimWhileQuiet(t *testing.T) {
	w := &fixedPosition{pos: "1.0", ch: make(chan struct{}, 1)}
	var mu sync.Mutex
	calls := 0
	trim := func(ctx context.Context, jobs []*plan.Job) ([]runner.LogSize, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		return nil, nil
	}
	trims := func() int {
		mu.Lock()
		defer mu.Unlock()
		return calls
	}
	// After the position moves, runs read a row: the job is not quiet.
	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, call int) (*runner.Result, error) {
		r := &runner.Result{Job: job.Name}
		if p, _ := w.Position(); p != "1.0" {
			r.Stats.Read = map[cdc.Op]int64{cdc.OpInsert: 1}
		}
		return r, nil
	}}
	waker := func(ctx context.Context, job *plan.Job) (Waker, error) { return w, nil }
	_, clock, rec := newTestServer(t, Config{Run: fr.run, Waker: waker, TrimLogs: trim, LagInterval: time.Minute, QuietMax: 24 * time.Hour}, testJob("j", "@every 5s"))
	ev := rec.waitKind(t, "j", EventScheduled)
	clock.Set(ev.Next)
	rec.waitKind(t, "j", EventDone) // reads nothing: j is quiet
	waitFor(t, "the first trim", func() bool { return trims() >= 1 })
	first := trims()
	for range 3 {
		clock.Advance(time.Minute)
		time.Sleep(20 * time.Millisecond)
	}
	if got := trims(); got != first {
		t.Errorf("%d trims while every job was quiet, want none after the first %d", got-first, first)
	}
	w.set("1.1")
	for i := 0; i < 50 && trims() == first; i++ { // (the loop may not wait on its timer yet)
		clock.Advance(time.Minute)
		time.Sleep(20 * time.Millisecond)
	}
	if trims() == first {
		t.Error("no trim after the position moved")
	}
}
