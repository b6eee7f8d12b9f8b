package serve

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

func openSQLite(t *testing.T, path, node string, clock Clock) *SQLiteStore {
	t.Helper()
	s, err := OpenSQLiteStore(t.Context(), "sqlite:"+path, StoreOptions{Node: node, Clock: clock, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openPG(t *testing.T, url, node string) *PGStore {
	t.Helper()
	s, err := OpenPGStore(t.Context(), url, StoreOptions{Node: node, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestHistoryRoundTripSQLite(t *testing.T) {
	st := openSQLite(t, filepath.Join(t.TempDir(), "h.db"), "n1", nil)
	testHistoryRoundTrip(t, st)
}

func TestHistoryRoundTripPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	testHistoryRoundTrip(t, openPG(t, url, "n1"))
}

func testHistoryRoundTrip(t *testing.T, h History) {
	ctx := t.Context()
	start := time.Date(2026, 2, 3, 4, 5, 6, 789_000_000, time.UTC)
	in := []Run{
		{Job: "a", Node: "n1", Start: start, End: start.Add(time.Second), Status: StatusCommitted,
			Read:    map[cdc.Op]int64{cdc.OpInsert: 5, cdc.OpUpdateBefore: 2, cdc.OpUpdateAfter: 2, cdc.OpDelete: 1},
			Written: map[cdc.Op]int64{cdc.OpInsert: 5, cdc.OpUpdateAfter: 2, cdc.OpDelete: 1},
			From:    cdc.SingleOffset("7"), To: cdc.SingleOffset("19")},
		{Job: "b", Node: "n2", Start: start.Add(time.Minute), End: start.Add(2 * time.Minute), Status: StatusFailed,
			From: cdc.Offset{Positions: map[string]string{"shard-1": "x", "shard-2": "y"}}, Error: `no such table: "t"`},
		{Job: "a", Node: "n1", Start: start.Add(time.Hour), End: start.Add(time.Hour), Status: StatusSkipped, Skipped: "target exists and mode is ignore"},
		{Job: "c", Node: "n1", Start: start, End: start, Status: StatusTransient, Error: "connection refused", RetryAt: start.Add(4 * time.Second)},
	}
	for i := range in {
		id, err := h.Record(ctx, &in[i])
		if err != nil {
			t.Fatal(err)
		}
		if id <= 0 {
			t.Fatalf("id %d", id)
		}
		in[i].ID = id
	}
	all, err := h.List(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 || all[0].ID != in[3].ID || all[3].ID != in[0].ID {
		t.Fatalf("List all: %+v", all)
	}
	if c := all[0]; !c.RetryAt.Equal(in[3].RetryAt) || c.Status != StatusTransient {
		t.Errorf("transient run round trip: retry at %v, want %v", c.RetryAt, in[3].RetryAt)
	}
	for _, r := range all[1:] {
		if !r.RetryAt.IsZero() {
			t.Errorf("run %d (%s) has retry_at %v", r.ID, r.Status, r.RetryAt)
		}
	}
	as, err := h.List(ctx, "a", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Status != StatusSkipped || as[0].Skipped == "" {
		t.Fatalf("List a 1: %+v", as)
	}
	got := all[3]
	want := in[0]
	if !got.Start.Equal(want.Start) || !got.End.Equal(want.End) || got.Node != "n1" ||
		!got.From.Equal(want.From) || !got.To.Equal(want.To) ||
		got.Read[cdc.OpUpdateBefore] != 2 || Rows(got.Read) != 10 || Rows(got.Written) != 8 {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if b := all[2]; b.Error != in[1].Error || !b.From.Equal(in[1].From) || !b.To.IsZero() {
		t.Errorf("failed run round trip: %+v", b)
	}
}

// TestSQLiteLockLease: a held lock excludes another process until it is
// released or its lease expires without a heartbeat.
func TestSQLiteLockLease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	clockA, clockB := NewFakeClock(t0), NewFakeClock(t0)
	a := openSQLite(t, path, "A", clockA)
	b := openSQLite(t, path, "B", clockB)
	ctx := t.Context()

	unlockA, ok, err := a.TryLock(ctx, "j")
	if err != nil || !ok {
		t.Fatalf("A TryLock = %v, %v", ok, err)
	}
	if _, ok, err := b.TryLock(ctx, "j"); err != nil || ok {
		t.Fatalf("B got a held lock: %v, %v", ok, err)
	}
	if u, ok, err := b.TryLock(ctx, "other"); err != nil || !ok {
		t.Fatalf("B TryLock(other) = %v, %v", ok, err)
	} else {
		u()
	}
	unlockA()
	unlockA() // idempotent
	unlockB, ok, err := b.TryLock(ctx, "j")
	if err != nil || !ok {
		t.Fatalf("B after release = %v, %v", ok, err)
	}
	// B's process "freezes": its heartbeat never runs (B's clock stands
	// still) while A's clock passes the lease.
	clockA.Advance(DefaultLease - time.Second)
	if _, ok, _ := a.TryLock(ctx, "j"); ok {
		t.Fatal("A took the lock before the lease expired")
	}
	clockA.Advance(2 * time.Second)
	unlockA2, ok, err := a.TryLock(ctx, "j")
	if err != nil || !ok {
		t.Fatalf("A after lease expiry = %v, %v", ok, err)
	}
	unlockB() // B's late release must not free A's lock
	if _, ok, _ := b.TryLock(ctx, "j"); ok {
		t.Fatal("B's stale unlock released A's lock")
	}
	unlockA2()
}

// TestSQLiteLockHeartbeat: the heartbeat keeps a long run's lease alive.
func TestSQLiteLockHeartbeat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	clockA := NewFakeClock(t0)
	a := openSQLite(t, path, "A", clockA)
	b := openSQLite(t, path, "B", clockA)
	unlock, ok, err := a.TryLock(t.Context(), "j")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer unlock()
	for range 6 { // 6 × Lease/3 = two leases
		if err := clockA.WaitTimers(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		renewed := clockA.Now().Add(DefaultLease / 3)
		clockA.Advance(DefaultLease / 3)
		waitUntil(t, func() bool { return leaseExpiry(t, a, "j").After(renewed) })
	}
	if _, ok, _ := b.TryLock(t.Context(), "j"); ok {
		t.Fatal("B took a lock whose holder heartbeats")
	}
}

func leaseExpiry(t *testing.T, s *SQLiteStore, job string) time.Time {
	var ms int64
	if err := s.db.QueryRowContext(t.Context(), "SELECT expires_ms FROM "+LocksTable+" WHERE job = ?", job).Scan(&ms); err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(ms)
}

// waitUntil polls cond on the real clock (bounded): for effects of
// goroutines that emit no event.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTwoServersSQLite: two servers (separate connections, like two
// processes) on one SQLite database never run the same job at once.
func TestTwoServersSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a := openSQLite(t, path, "A", nil)
	b := openSQLite(t, path, "B", nil)
	testTwoServers(t, a, b)
}

// TestTwoServersPostgres: the same through PostgreSQL advisory locks.
func TestTwoServersPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	testTwoServers(t, openPG(t, url, "A"), openPG(t, url, "B"))
}

// testTwoServers fires one job on two servers at the same instants. Each
// run waits until the other server has decided about the same fire
// (skipped, or started when locking is broken), so that a broken lock
// would show as two runs at once. The history must hold one run per fire
// with no overlapping [start, end] intervals.
func testTwoServers(t *testing.T, storeA, storeB Store) {
	const fires = 15
	clock := NewFakeClock(t0)
	var inflight, maxInflight atomic.Int32
	decided := map[string]chan time.Time{"A": make(chan time.Time, 4*fires), "B": make(chan time.Time, 4*fires)}
	run := func(self, other string) RunFunc {
		return func(ctx context.Context, job *plan.Job) (*runner.Result, error) {
			start := time.Now()
			n := inflight.Add(1)
			defer inflight.Add(-1)
			for m := maxInflight.Load(); n > m && !maxInflight.CompareAndSwap(m, n); m = maxInflight.Load() {
			}
			tick := clock.Now()
			wait := time.NewTimer(waitLimit)
			defer wait.Stop()
		loop:
			for {
				select {
				case at := <-decided[other]:
					if !at.Before(tick) {
						break loop
					}
				case <-wait.C:
					t.Errorf("server %s never decided about the fire at %v", other, tick)
					break loop
				}
			}
			// a run that consumed a change (an empty one is not history)
			return &runner.Result{Job: job.Name, Start: start.UTC(), End: time.Now().UTC(),
				From: cdc.SingleOffset("1"), To: cdc.SingleOffset("2"), Stats: runner.Stats{Read: map[cdc.Op]int64{cdc.OpInsert: 1}}}, nil
		}
	}
	type outcome struct {
		server string
		ev     Event
	}
	outcomes := make(chan outcome, 4*fires)
	recs := map[string]*recorder{}
	for _, x := range []struct {
		self, other string
		store       Store
	}{{"A", "B", storeA}, {"B", "A", storeB}} {
		rec := newRecorder()
		self := x.self
		rec.hook = func(ev Event) {
			switch ev.Kind {
			case EventSkipped, EventStarted:
				decided[self] <- ev.At
			}
			switch ev.Kind {
			case EventSkipped, EventDone:
				outcomes <- outcome{self, ev}
			}
		}
		newTestServer(t, Config{Run: run(x.self, x.other), Clock: clock, Node: x.self,
			Locker: x.store, History: x.store, OnEvent: rec.on}, testJob("j", "@every 10s"))
		recs[x.self] = rec
	}
	locked := 0
	for i := range fires {
		want := t0.Truncate(time.Second).Add(time.Duration(i+1) * 10 * time.Second)
		for _, name := range []string{"A", "B"} {
			recs[name].wait(t, "schedule of "+name, func(ev Event) bool { return ev.Kind == EventScheduled && ev.Next.Equal(want) })
		}
		clock.Set(want)
		// One server runs (done), the other skips because of the lock.
		timer := time.NewTimer(waitLimit)
		for got := 0; got < 2; {
			select {
			case o := <-outcomes:
				if o.ev.At.Before(want) {
					continue
				}
				got++
				if o.ev.Kind == EventSkipped {
					if o.ev.Reason != "locked" {
						t.Errorf("server %s skipped the fire at %v: %s", o.server, want, o.ev.Reason)
					}
					locked++
				} else if o.ev.Err != nil {
					t.Errorf("server %s: %v", o.server, o.ev.Err)
				}
			case <-timer.C:
				t.Fatalf("fire %d: timed out", i)
			}
		}
		timer.Stop()
	}
	if m := maxInflight.Load(); m != 1 {
		t.Errorf("%d runs of the job at once", m)
	}
	if locked != fires {
		t.Errorf("%d fires skipped because locked, want %d", locked, fires)
	}
	runs, err := storeA.List(t.Context(), "j", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != fires {
		t.Fatalf("history has %d runs, want %d", len(runs), fires)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Start.Before(runs[j].Start) })
	nodes := map[string]int{}
	for i, r := range runs {
		nodes[r.Node]++
		if r.Status != StatusCommitted {
			t.Errorf("run %d: %s %s", i, r.Status, r.Error)
		}
		if i > 0 && r.Start.Before(runs[i-1].End) {
			t.Errorf("runs overlap: %v–%v (%s) and %v–%v (%s)", runs[i-1].Start, runs[i-1].End, runs[i-1].Node, r.Start, r.End, r.Node)
		}
	}
	t.Logf("runs per server: %v", nodes)
}

// TestPGLock: advisory locks exclude other sessions, are released by
// unlock and by a dying session; all the locks of one store share one
// session.
func TestPGLock(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a, b := openPG(t, url, "A"), openPG(t, url, "B")
	ctx := t.Context()
	for range 3 { // the second and third rounds reuse A's kept connection
		unlock, ok, err := a.TryLock(ctx, "j")
		if err != nil || !ok {
			t.Fatalf("A TryLock = %v, %v", ok, err)
		}
		if _, ok, err := b.TryLock(ctx, "j"); err != nil || ok {
			t.Fatalf("B got a held lock: %v, %v", ok, err)
		}
		if u, ok, err := b.TryLock(ctx, "k"); err != nil || !ok {
			t.Fatalf("B TryLock(k) = %v, %v", ok, err)
		} else {
			u()
		}
		unlock()
		unlock()
	}
	// 50 jobs locked at once hold one session between them (issue #19),
	// and a job held here is not taken a second time on that session
	// (advisory locks are re-entrant within a session).
	var unlocks []func()
	for i := range 50 {
		u, ok, err := a.TryLock(ctx, fmt.Sprintf("many%d", i))
		if err != nil || !ok {
			t.Fatalf("A TryLock(many%d) = %v, %v", i, ok, err)
		}
		unlocks = append(unlocks, u)
	}
	var sessions, locks int
	if err := b.pool.QueryRow(ctx, `SELECT count(DISTINCT pid), count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND classid = $1::int8::oid AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, pgLockClass).Scan(&sessions, &locks); err != nil {
		t.Fatal(err)
	}
	if sessions != 1 || locks != 50 {
		t.Errorf("50 locks of one store: %d locks on %d sessions, want 50 on 1", locks, sessions)
	}
	if _, ok, err := a.TryLock(ctx, "many7"); err != nil || ok {
		t.Errorf("A took many7 a second time: %v, %v", ok, err)
	}
	if _, ok, err := b.TryLock(ctx, "many7"); err != nil || ok {
		t.Errorf("B took A's many7: %v, %v", ok, err)
	}
	for _, u := range unlocks {
		u()
	}
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND classid = $1::int8::oid AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, pgLockClass).Scan(&locks); err != nil {
		t.Fatal(err)
	}
	if locks != 0 {
		t.Errorf("advisory locks held after every unlock: %d, want 0", locks)
	}
	// A's process dies while holding the lock: the session ends, the lock
	// is free.
	_, ok, err := a.TryLock(ctx, "j")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	c := openPG(t, url, "C")
	if _, ok, _ := c.TryLock(ctx, "j"); ok {
		t.Fatal("C got A's lock")
	}
	// Only this test's database: other packages' tests hold advisory locks
	// on the same server at the same time.
	if _, err := c.pool.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid() AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool {
		u, ok, _ := c.TryLock(ctx, "j")
		if ok {
			u()
		}
		return ok
	})
}

// TestHistoryGainsRetryAt: a run history created before retry_at existed
// gains the column when a store opens it, and keeps its rows.
func TestHistoryGainsRetryAt(t *testing.T) {
	ctx := t.Context()
	at := time.Date(2026, 3, 1, 2, 3, 4, 0, time.UTC)
	check := func(t *testing.T, h History) {
		if _, err := h.Record(ctx, &Run{Job: "j", Start: at, End: at, Status: StatusTransient, RetryAt: at.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		runs, err := h.List(ctx, "j", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 || !runs[0].RetryAt.Equal(at.Add(time.Minute)) || !runs[1].RetryAt.IsZero() {
			t.Fatalf("runs after the upgrade: %+v", runs)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "h.db")
		old := openSQLite(t, path, "n1", nil)
		if _, err := old.Record(ctx, &Run{Job: "j", Start: at, End: at, Status: StatusCommitted}); err != nil {
			t.Fatal(err)
		}
		if _, err := old.db.ExecContext(ctx, "ALTER TABLE "+RunsTable+" DROP COLUMN retry_at"); err != nil {
			t.Fatal(err)
		}
		old.Close()
		check(t, openSQLite(t, path, "n1", nil))
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.NewDatabase(t)
		old := openPG(t, url, "n1")
		if _, err := old.Record(ctx, &Run{Job: "j", Start: at, End: at, Status: StatusCommitted}); err != nil {
			t.Fatal(err)
		}
		if _, err := old.pool.Exec(ctx, "ALTER TABLE "+pgRuns+" DROP COLUMN retry_at"); err != nil {
			t.Fatal(err)
		}
		old.Close()
		check(t, openPG(t, url, "n1"))
	})
}

// TestPGLockAfterKilledSession: the connection a released lock keeps for
// the job's next run is terminated while idle (pg_terminate_backend); the
// next TryLock still takes the lock, on a new session.
func TestPGLockAfterKilledSession(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := t.Context()
	st := openPG(t, url, "n1")
	unlock, ok, err := st.TryLock(ctx, "j")
	if err != nil || !ok {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	unlock()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed == 0 {
		t.Fatal("no session to terminate: the released lock's connection was not kept")
	}
	unlock, ok, err = st.TryLock(ctx, "j")
	if err != nil || !ok {
		t.Fatalf("TryLock after the kept session was terminated = %v, %v", ok, err)
	}
	unlock()
}

// TestSQLiteLockBusy: while an application holds the file's write lock
// (BEGIN IMMEDIATE on its own connection, as Python's sqlite3 does), a
// job lock waits the busy timeout and fails saying what holds it and that
// nothing was changed, not with the driver's "database is locked (5)".
func TestSQLiteLockBusy(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "locks.db")
	s := openSQLite(t, path, "A", NewFakeClock(t0))
	app, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	app.SetMaxOpenConns(1)
	if _, err := app.Exec("BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer app.Exec("ROLLBACK")
	_, ok, err := s.TryLock(t.Context(), "j")
	if ok || err == nil || !strings.Contains(err.Error(), "write lock is held by another connection") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("TryLock under an application's write transaction = %v, %v; want the write lock named and nothing changed", ok, err)
	}
}
