package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/dsl"
)

// syncBuffer is a bytes.Buffer safe for the logger's and the test's
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTrackingLockBounded: the statements that switch capture on or off
// while an application transaction holds the table (it updated a row):
// creating the first stream (SHARE ROW EXCLUSIVE), enabling tracking again
// on a table with a stream, dropping the last stream and disabling
// tracking (ACCESS EXCLUSIVE). The operation waits in bounded attempts,
// logging who holds the table (its statement's literals masked); other
// writers' statements get through meanwhile; the application's
// transaction goes on writing and commits without a deadlock; the
// operation then succeeds. With a short bound it fails instead, naming
// the holder and the lock, and changes nothing. Enabling tracking on a
// table without streams installs no trigger and does not wait for the
// application at all.
func TestTrackingLockBounded(t *testing.T) {
	type action struct {
		name     string
		tracked  bool // tracking enabled before the application's transaction
		stream   bool // and a stream created
		run      func(ctx context.Context, b *Backend) error
		mode     string // the lock it waits for; "" when it does not wait
		triggers int    // capture triggers on the table after success
	}
	enable := func(ctx context.Context, b *Backend) error { return b.EnableTracking(ctx, "lk") }
	disable := func(ctx context.Context, b *Backend) error { return b.DisableTracking(ctx, "lk") }
	create := func(ctx context.Context, b *Backend) error {
		return b.CreateStream(ctx, &dsl.CreateStream{Stream: "lk_s", Table: "lk"})
	}
	drop := func(ctx context.Context, b *Backend) error { return b.DropStream(ctx, "lk_s", false) }
	actions := []action{
		{"enable", false, false, enable, "", 0},
		{"create the first stream", true, false, create, shareRowExcl, 4},
		{"enable again with a stream", true, true, enable, accessExclusive, 4},
		{"drop the last stream", true, true, drop, accessExclusive, 0},
		{"disable", true, false, disable, accessExclusive, 0},
	}
	countTriggers := func(t *testing.T, b *Backend) int {
		var n int
		if err := b.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'lk'::regclass AND tgname LIKE 'sluice_capture_%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, a := range actions {
		for _, bounded := range []bool{false, true} {
			name := a.name + " waits"
			if bounded {
				name = a.name + " gives up"
			}
			if a.mode == "" {
				if bounded {
					continue
				}
				name = a.name + " does not wait"
			}
			t.Run(name, func(t *testing.T) {
				ctx := t.Context()
				b, u := openDB(t)
				logs := &syncBuffer{}
				b.log = slog.New(slog.NewTextHandler(logs, nil))
				sqlExec(t, b, `CREATE TABLE lk (id int PRIMARY KEY, v text)`, `INSERT INTO lk VALUES (1, 'a')`)
				if a.tracked {
					track(t, b, "lk")
				}
				if a.stream {
					mkStream(t, b, "lk_s", "lk", "", false)
				}
				triggersBefore := countTriggers(t, b)
				app := connect(ctx, t, u)
				var appPid int
				if err := app.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&appPid); err != nil {
					t.Fatal(err)
				}
				for _, q := range []string{`BEGIN`, `UPDATE lk SET v = 'secret-1' WHERE id = 1`} {
					if _, err := app.Exec(ctx, q); err != nil {
						t.Fatalf("application: %s: %v", q, err)
					}
				}
				b.LockWait = 30 * time.Second
				if bounded {
					b.LockWait = 1500 * time.Millisecond
				}
				done := make(chan error, 1)
				started := time.Now()
				go func() { done <- a.run(ctx, b) }()

				// Another writer's statements get through while the
				// operation waits: each waits at most one attempt.
				w := connect(ctx, t, u)
				time.Sleep(200 * time.Millisecond)
				for i := range 3 {
					t0 := time.Now()
					if _, err := w.Exec(ctx, fmt.Sprintf(`INSERT INTO lk VALUES (%d, 'w')`, 10+i)); err != nil {
						t.Fatalf("other writer: %v", err)
					}
					if d := time.Since(t0); d > 10*time.Second { // one attempt (500ms), plus a loaded machine's delays
						t.Errorf("other writer's INSERT waited %s while %s waited for the table", d, a.name)
					}
				}
				if bounded {
					err := <-done
					var le *LockTimeoutError
					if !errors.As(err, &le) || !errors.Is(err, ErrLockTimeout) {
						t.Fatalf("%s with the table held past the bound: %v, want a LockTimeoutError", a.name, err)
					}
					if d := time.Since(started); d > 15*time.Second {
						t.Errorf("gave up after %s, bound 1.5s", d)
					}
					msg := err.Error()
					for _, want := range []string{fmt.Sprintf("pid %d", appPid), "idle in transaction", "UPDATE lk SET v = ? WHERE id = ?", "Nothing was changed", "for " + a.mode + " on the table"} {
						if !strings.Contains(msg, want) {
							t.Errorf("error lacks %q: %s", want, msg)
						}
					}
					if strings.Contains(msg, "secret-1") {
						t.Errorf("error shows the statement's literal: %s", msg)
					}
				} else if a.mode == "" {
					select {
					case err := <-done:
						if err != nil {
							t.Fatalf("%s while the application held the table: %v", a.name, err)
						}
					case <-time.After(20 * time.Second): // a loaded machine's delays, not a lock's
						t.Fatalf("%s waited for the application's transaction", a.name)
					}
				} else {
					time.Sleep(700 * time.Millisecond)
					select {
					case err := <-done:
						t.Fatalf("%s finished while the application held the table: %v", a.name, err)
					default:
					}
				}
				// The application's transaction goes on and commits: no
				// deadlock, whatever the operation did meanwhile.
				for _, q := range []string{`UPDATE lk SET v = 'b' WHERE id = 1`, `INSERT INTO lk VALUES (2, 'c')`, `COMMIT`} {
					if _, err := app.Exec(ctx, q); err != nil {
						t.Fatalf("application after the wait: %s: %v", q, err)
					}
				}
				if bounded {
					if got := countTriggers(t, b); got != triggersBefore {
						t.Errorf("after giving up: %d capture triggers, want %d as before", got, triggersBefore)
					}
					return
				}
				if a.mode == "" {
					if got := countTriggers(t, b); got != a.triggers {
						t.Errorf("after %s: %d capture triggers, want %d", a.name, got, a.triggers)
					}
					return
				}
				if err := <-done; err != nil {
					t.Fatalf("%s after the application committed: %v", a.name, err)
				}
				if got := countTriggers(t, b); got != a.triggers {
					t.Errorf("after %s: %d capture triggers, want %d", a.name, got, a.triggers)
				}
				logged := logs.String()
				for _, want := range []string{"waiting for a lock on the table", fmt.Sprintf("pid %d", appPid), "UPDATE lk SET v = ? WHERE id = ?"} {
					if !strings.Contains(logged, want) {
						t.Errorf("log lacks %q:\n%s", want, logged)
					}
				}
				if strings.Contains(logged, "secret-1") {
					t.Errorf("log shows the statement's literal:\n%s", logged)
				}
				if a.triggers > 0 {
					// Capture works for the application's next write.
					if _, err := app.Exec(ctx, `INSERT INTO lk VALUES (20, 'after')`); err != nil {
						t.Fatal(err)
					}
					if got := tableRows(t, b, `SELECT __op::text || ' ' || id FROM sluice.log_lk WHERE id = 20`); len(got) != 1 || got[0] != "I 20" {
						t.Errorf("log of the insert after enabling: %q, want [I 20]", got)
					}
					if !a.stream {
						// The stream sees the changes after its creation
						// only: not the application's transaction it
						// waited for, nor the other writer's inserts.
						_, got := read(t, b, "lk_s", false)
						check(t, "stream after "+a.name, got, []string{"INSERT 20 after"})
					}
				}
			})
		}
	}
}

// TestLockHoldersNotVisible: run as a role that may not see another
// role's session details (no superuser, no pg_read_all_stats), the
// description of a lock's holder says so instead of "transaction open 0s"
// (a fresh user's report under the README's non-superuser owner setup);
// the pid, role and lock mode, which pg_locks shows anyone, stay.
func TestLockHoldersNotVisible(t *testing.T) {
	ctx := t.Context()
	b, u := openDB(t)
	roles := newRoles(t, b, u, "lkown", "lkapp")
	own, appRole := roles[0], roles[1]
	sqlExec(t, b, `CREATE TABLE lkv (id int PRIMARY KEY, v text)`, `INSERT INTO lkv VALUES (1, 'a')`,
		`GRANT ALL ON lkv TO `+pgx.Identifier{appRole}.Sanitize())
	app := connect(ctx, t, asUser(t, u, appRole))
	var appPid int
	if err := app.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&appPid); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`BEGIN`, `UPDATE lkv SET v = 'secret-2' WHERE id = 1`} {
		if _, err := app.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	defer app.Exec(context.Background(), `ROLLBACK`)
	ob, err := Open(ctx, asUser(t, u, own), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	var relid uint32
	if err := ob.pool.QueryRow(ctx, `SELECT 'lkv'::regclass::oid`).Scan(&relid); err != nil {
		t.Fatal(err)
	}
	got := ob.lockHolders(ctx, relid, "lkv")
	if len(got) != 1 {
		t.Fatalf("holders %q, want the application's session", got)
	}
	for _, want := range []string{fmt.Sprintf("pid %d", appPid), "role " + appRole, "RowExclusiveLock", "not visible to this role", "pg_read_all_stats"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("holder %q lacks %q", got[0], want)
		}
	}
	if strings.Contains(got[0], "open 0s") || strings.Contains(got[0], "secret-2") {
		t.Errorf("holder %q claims a transaction age it cannot see, or shows a literal", got[0])
	}
}
