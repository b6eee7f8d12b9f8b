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
// the position stays; a moved position runs the job again; and a run that
// read something is remembered too: the fire after it is skipped while
// nothing was logged since it began (it would read nothing).
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
		{"1.2", false, 3}, // nothing logged since that run began: skipped
		{"1.3", true, 4},  // a notification: runs
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

// TestContinuousAfterRunThatRead: a continuous job whose run read changes
// does not run again at once when its position did not move since that
// run began (the run consumed everything logged before it began: the next
// one would read nothing), and does when the position moved while the
// run went on (a change logged after its read point may be pending). A
// wake-up with a moved position runs it again.
func TestContinuousAfterRunThatRead(t *testing.T) {
	for _, moveDuring := range []bool{false, true} {
		name := "position unchanged"
		if moveDuring {
			name = "position moved during the run"
		}
		t.Run(name, func(t *testing.T) {
			w := &fixedPosition{pos: "1.0", ch: make(chan struct{}, 1)}
			fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, call int) (*runner.Result, error) {
				r := &runner.Result{Job: job.Name, From: cdc.SingleOffset("a"), To: cdc.SingleOffset("a")}
				if call == 1 {
					r.To = cdc.SingleOffset("b")
					r.Stats.Read = map[cdc.Op]int64{cdc.OpInsert: 1}
					if moveDuring {
						w.set("1.1") // a change logged while the run read
					}
				}
				return r, nil
			}}
			waker := func(ctx context.Context, job *plan.Job) (Waker, error) { return w, nil }
			_, _, rec := newTestServer(t, Config{Run: fr.run, Waker: waker}, testJob("j", "continuous"))
			rec.waitKind(t, "j", EventDone) // the run that read
			ev := rec.wait(t, "what follows the run that read", func(ev Event) bool {
				return ev.Job == "j" && (ev.Kind == EventDone || ev.Kind == EventSkipped)
			})
			if moveDuring {
				if ev.Kind != EventDone || fr.count("j") != 2 {
					t.Fatalf("after a run during which the position moved: %s %q, %d runs; want a second run at once", ev.Kind, ev.Reason, fr.count("j"))
				}
				return
			}
			if ev.Kind != EventSkipped || ev.Reason != "unchanged" {
				t.Fatalf("after a run that read, position unchanged: %s %q, want skipped as unchanged", ev.Kind, ev.Reason)
			}
			rec.waitKind(t, "j", EventIdle)
			if n := fr.count("j"); n != 1 {
				t.Fatalf("%d runs, want 1", n)
			}
			w.set("1.1")
			w.ch <- struct{}{}
			rec.waitKind(t, "j", EventDone)
			if n := fr.count("j"); n != 2 {
				t.Errorf("after a wake-up with a moved position: %d runs, want 2", n)
			}
		})
	}
}
