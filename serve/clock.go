package serve

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock is the time source of a Server, injected so that tests drive
// schedules without sleeping. SystemClock is the real one; FakeClock is
// for tests.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that delivers the time on its channel once,
	// d after now (immediately for d <= 0).
	NewTimer(d time.Duration) Timer
	// NewTimerAt returns a timer that delivers the time on its channel
	// once, when the clock reaches t (immediately when t is not after
	// now). A schedule's fire times are instants: a relative timer
	// computed from a Now read earlier fires late by however much time
	// passed in between.
	NewTimerAt(t time.Time) Timer
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	// C delivers the firing time once.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// SystemClock returns the Clock of package time.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                 { return time.Now() }
func (systemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }
func (systemClock) NewTimerAt(t time.Time) Timer   { return sysTimer{time.NewTimer(time.Until(t))} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time { return t.t.C }
func (t sysTimer) Stop() bool          { return t.t.Stop() }

// FakeClock is a manual Clock for tests: time moves only by Advance and
// Set, which fire the timers that come due, in order. It is safe for
// concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever timers change
}

// NewFakeClock returns a FakeClock reading now.
func NewFakeClock(now time.Time) *FakeClock {
	return &FakeClock{now: now, changed: make(chan struct{})}
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer firing when the fake time reaches now + d.
func (c *FakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timerAt(c.now.Add(d))
}

// NewTimerAt returns a timer firing when the fake time reaches at.
func (c *FakeClock) NewTimerAt(at time.Time) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timerAt(at)
}

// timerAt adds a timer due at at, or fires it now when at is not after
// the fake time; c.mu is held.
func (c *FakeClock) timerAt(at time.Time) Timer {
	t := &fakeTimer{c: c, at: at, ch: make(chan time.Time, 1)}
	if !at.After(c.now) {
		t.ch <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	c.notify()
	return t
}

// Advance moves the fake time forward by d, firing due timers.
func (c *FakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the fake time to t (never backwards), firing due timers in
// order of their deadlines.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Before(c.now) {
		return
	}
	sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
	keep := c.timers[:0]
	for _, tm := range c.timers {
		if !tm.at.After(t) {
			tm.ch <- tm.at
			continue
		}
		keep = append(keep, tm)
	}
	clear(c.timers[len(keep):])
	c.timers = keep
	c.now = t
	c.notify()
}

// Pending returns the deadlines of the timers not yet fired, earliest
// first.
func (c *FakeClock) Pending() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]time.Time, len(c.timers))
	for i, t := range c.timers {
		out[i] = t.at
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// WaitTimers blocks until at least n timers are pending or ctx is done,
// and returns ctx's error in the latter case.
func (c *FakeClock) WaitTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		ok, ch := len(c.timers) >= n, c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// notify wakes WaitTimers; c.mu is held.
func (c *FakeClock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type fakeTimer struct {
	c  *FakeClock
	at time.Time
	ch chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			t.c.notify()
			return true
		}
	}
	return false
}
