package serve

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// woken reports whether w receives a value within d.
func woken(w Waker, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.C():
		return true
	case <-t.C:
		return false
	}
}

// listenerSessions counts the sessions of the database that LISTEN on
// something other than the test's own connection (pg_stat_activity does
// not show LISTEN state, so count the backends of the database but ours).
func listenerSessions(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPGListenerOneSessionForManyJobs: 60 subscriptions on 30 channels
// share one database session; a NOTIFY wakes exactly the subscribers of
// its channel; a subscriber whose session is killed is woken by the
// reconnection and keeps receiving; closing the last subscription of a
// channel drops the channel.
func TestPGListenerOneSessionForManyJobs(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	registered := make(chan string, 100)
	register := func(ctx context.Context, c *pgx.Conn, channels []string) error {
		for _, ch := range channels {
			registered <- ch
		}
		return nil
	}
	l := NewPGListener(ctx, url, register, testLog(t))
	defer l.Close()
	const channels = 30
	subs := make([][2]Waker, channels)
	for i := range subs {
		ch := fmt.Sprintf("sluice_changes_t%02d", i)
		subs[i] = [2]Waker{l.Subscribe(ch), l.Subscribe(ch)}
	}
	// Every subscriber is woken once when the LISTENs are in place.
	for i, pair := range subs {
		for k, w := range pair {
			if !woken(w, waitLimit) {
				t.Fatalf("subscriber %d/%d not woken after the first LISTEN", i, k)
			}
		}
	}
	if got := l.Channels(); got != channels {
		t.Errorf("Channels() = %d, want %d", got, channels)
	}
	if got := listenerSessions(t, conn); got != 1 {
		t.Errorf("sessions held for %d subscriptions = %d, want 1", 2*channels, got)
	}
	if len(registered) < channels {
		t.Errorf("register ran for %d channels, want %d", len(registered), channels)
	}

	if _, err := conn.Exec(ctx, `NOTIFY sluice_changes_t07`); err != nil {
		t.Fatal(err)
	}
	for _, w := range subs[7] {
		if !woken(w, waitLimit) {
			t.Fatal("subscriber of sluice_changes_t07 not woken by its NOTIFY")
		}
	}
	for i, pair := range subs {
		if i != 7 && (woken(pair[0], 0) || woken(pair[1], 0)) {
			t.Errorf("subscriber of channel %d woken by a NOTIFY on channel 7", i)
		}
	}

	// Kill the listener's session: the reconnection wakes everyone, and
	// notifications arrive again.
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`); err != nil {
		t.Fatal(err)
	}
	for i, pair := range subs {
		if !woken(pair[0], waitLimit) {
			t.Fatalf("subscriber of channel %d not woken after the reconnection", i)
		}
		woken(pair[1], 0)
	}
	if _, err := conn.Exec(ctx, `NOTIFY sluice_changes_t12`); err != nil {
		t.Fatal(err)
	}
	if !woken(subs[12][1], waitLimit) {
		t.Fatal("no wake-up after NOTIFY on the new session")
	}

	subs[3][0].Close()
	if got := l.Channels(); got != channels {
		t.Errorf("Channels() after closing one of two subscribers = %d, want %d", got, channels)
	}
	subs[3][1].Close()
	if got := l.Channels(); got != channels-1 {
		t.Errorf("Channels() after closing both subscribers = %d, want %d", got, channels-1)
	}
}

// TestPGListenerPosition: a subscription's Position is unknown until its
// LISTEN is in place, stays the same across NOTIFYs of other channels,
// moves with each NOTIFY of its own, and after the session is lost is
// never the one it had before (a reconnection may have missed
// notifications: serve must not skip a run on it).
func TestPGListenerPosition(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	l := NewPGListener(ctx, url, nil, testLog(t))
	defer l.Close()
	w := l.Subscribe("sluice_changes_a")
	other := l.Subscribe("sluice_changes_b")
	p, ok := w.(Positioner)
	if !ok {
		t.Fatal("a PGListener subscription is not a Positioner")
	}
	if !woken(w, waitLimit) || !woken(other, waitLimit) {
		t.Fatal("not woken after the first LISTEN")
	}
	p0, ok := p.Position()
	if !ok {
		t.Fatal("Position unknown after the LISTEN")
	}
	if _, err := conn.Exec(ctx, `NOTIFY sluice_changes_b`); err != nil {
		t.Fatal(err)
	}
	if !woken(other, waitLimit) {
		t.Fatal("the other channel's subscriber not woken")
	}
	if got, ok := p.Position(); !ok || got != p0 {
		t.Errorf("Position after another channel's NOTIFY = %q, %v; want %q, true", got, ok, p0)
	}
	if _, err := conn.Exec(ctx, `NOTIFY sluice_changes_a`); err != nil {
		t.Fatal(err)
	}
	if !woken(w, waitLimit) {
		t.Fatal("not woken by its NOTIFY")
	}
	p1, ok := p.Position()
	if !ok || p1 == p0 {
		t.Fatalf("Position after its NOTIFY = %q, %v; want known and not %q", p1, ok, p0)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`); err != nil {
		t.Fatal(err)
	}
	if !woken(w, waitLimit) {
		t.Fatal("not woken after the reconnection")
	}
	if got, ok := p.Position(); ok && got == p1 {
		t.Errorf("Position after a lost session = %q, the one before: a run would be skipped on notifications that may have been missed", got)
	}
}
