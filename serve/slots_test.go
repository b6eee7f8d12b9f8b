package serve

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// TestMaxRunsBoundsConcurrentRuns: with MaxRuns 2 and 5 jobs fired at
// once, at most 2 runs are under way at any time; the others wait for a
// slot (counted by sluice_run_slot_waits_total) and all 5 run once the
// first ones end — a waiting fire is late, never lost.
func TestMaxRunsBoundsConcurrentRuns(t *testing.T) {
	var mu sync.Mutex
	under, most := 0, 0
	release := make(chan struct{})
	run := func(ctx context.Context, job *plan.Job) (*runner.Result, error) {
		mu.Lock()
		under++
		most = max(most, under)
		mu.Unlock()
		defer func() {
			mu.Lock()
			under--
			mu.Unlock()
		}()
		select {
		case <-release:
			return moved(job.Name, 1), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var jobs []*plan.Job
	for i := range 5 {
		jobs = append(jobs, testJob(fmt.Sprintf("j%d", i), "@every 1m"))
	}
	s, clock, rec := newTestServer(t, Config{Run: run, MaxRuns: 2}, jobs...)
	for _, j := range jobs {
		rec.waitKind(t, j.Name, EventScheduled)
	}
	clock.Advance(time.Minute)
	// Wait until two runs are under way and the other three wait.
	waitUntil(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		waits := 0.0
		for _, j := range jobs {
			waits += counterValue(t, s.Metrics(), "sluice_run_slot_waits_total", map[string]string{"job": j.Name})
		}
		return under == 2 && waits == 3
	})
	// Give the other three every chance to start if the bound did not hold.
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	if under != 2 {
		t.Errorf("runs under way with MaxRuns 2 = %d, want 2", under)
	}
	mu.Unlock()
	waits := 0.0
	for _, j := range jobs {
		waits += counterValue(t, s.Metrics(), "sluice_run_slot_waits_total", map[string]string{"job": j.Name})
	}
	if waits != 3 {
		t.Errorf("sluice_run_slot_waits_total summed over jobs = %v, want 3", waits)
	}
	close(release)
	for _, j := range jobs {
		rec.waitKind(t, j.Name, EventDone)
	}
	mu.Lock()
	defer mu.Unlock()
	if most != 2 {
		t.Errorf("most runs under way at once = %d, want 2", most)
	}
}
