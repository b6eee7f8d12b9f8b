package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// served is `sluice serve` of one job, run in-process, with its /healthz.
type served struct {
	t    *testing.T
	addr string
	done chan string
}

func startServe(t *testing.T, ctx context.Context, args ...string) *served {
	t.Helper()
	s := &served{t: t, addr: freeAddr(t), done: make(chan string, 1)}
	sctx, cancel := context.WithCancel(ctx)
	go func() {
		s.done <- run(sctx, append([]string{"serve", "--listen", s.addr, "--grace", "1s"}, args...)...)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop")
		}
	})
	return s
}

// job returns the /healthz entry of the one job ("" health when serve does
// not answer yet).
func (s *served) job() (health, lastErr string) {
	resp, err := http.Get("http://" + s.addr + "/healthz")
	if err != nil {
		return "", ""
	}
	defer resp.Body.Close()
	var h struct {
		Jobs []struct {
			Health    string `json:"health"`
			LastError string `json:"last_error"`
		} `json:"jobs"`
	}
	if json.NewDecoder(resp.Body).Decode(&h) != nil || len(h.Jobs) != 1 {
		return "", ""
	}
	return h.Jobs[0].Health, h.Jobs[0].LastError
}

// until polls cond every 100 ms for at most limit and returns how long it
// took; it fails the test when serve exits or limit passes.
func (s *served) until(what string, limit time.Duration, cond func() bool) time.Duration {
	s.t.Helper()
	t0 := time.Now()
	for !cond() {
		select {
		case out := <-s.done:
			s.t.Fatalf("serve exited while waiting for %s:\n%.4000s", what, out)
		default:
		}
		if time.Since(t0) > limit {
			h, e := s.job()
			s.t.Fatalf("no %s in %v (job health %q, last error %q)", what, limit, h, e)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(t0)
}

// fault is one fault a test injects and removes.
type fault struct {
	name   string
	want   string // in the job's last error while the fault lasts
	inject func(t *testing.T)
	remove func(t *testing.T)
}

// exercise runs each fault against a serve whose job copies one new row
// per fault: it injects the fault, writes a row, waits until /healthz
// says retrying with the expected error, holds the fault for hold, removes
// it and measures the time until the row arrives (count reaches the next
// value); a fault without remove passes by itself and is measured from its
// injection. It logs detection and recovery times.
func exercise(t *testing.T, s *served, hold time.Duration, faults []fault, write func(i int), count func() int) {
	t.Helper()
	for i, f := range faults {
		t0 := time.Now()
		f.inject(t)
		write(i)
		det := s.until(f.name+": retrying in /healthz", 90*time.Second, func() bool {
			h, e := s.job()
			return h == "retrying" && strings.Contains(e, f.want)
		})
		_, lastErr := s.job()
		if f.remove == nil {
			// A fault that passes by itself (terminated sessions): the
			// recovery is measured from the injection.
			s.until(f.name+": recovery", 180*time.Second, func() bool { return count() == i+2 })
			t.Logf("fault %-30s retrying after %5.1fs; recovered %5.2fs after the fault; error: %.160s",
				f.name, det.Seconds(), time.Since(t0).Seconds(), lastErr)
		} else {
			time.Sleep(hold)
			f.remove(t)
			rec := s.until(f.name+": recovery", 180*time.Second, func() bool { return count() == i+2 })
			t.Logf("fault %-30s retrying after %5.1fs; held %v; recovered %5.2fs after removal; error: %.160s",
				f.name, det.Seconds(), hold, rec.Seconds(), lastErr)
		}
		s.until(f.name+": healthy", 30*time.Second, func() bool { h, _ := s.job(); return h == "ok" })
	}
}

// TestFaultsHeal injects the faults an operator fixes into a running
// `sluice serve` and measures how long the job takes to recover by itself
// once each is removed (issue 16's closing note). SQLite sink: a full disk
// (a small tmpfs, filled), SQLITE_BUSY (a write lock held past the busy
// timeout). PostgreSQL, through a TCP proxy: refused and reset connections
// (the proxy closed, then reopened), every session terminated as a server
// restart does (pg_terminate_backend: 57P01), and an authentication
// failure at start (a role without LOGIN, granted LOGIN later).
func TestFaultsHeal(t *testing.T) {
	if testing.Short() {
		t.Skip("holds faults for seconds each and waits for serve's backoff (skipped with -short)")
	}
	// SLUICE_FAULT_HOLD (a duration) holds each fault longer, to see the
	// backoff grow (1 s doubling to 1 min, up to half taken off at random).
	hold := 3 * time.Second
	if v := os.Getenv("SLUICE_FAULT_HOLD"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SLUICE_FAULT_HOLD: %v", err)
		}
		hold = d
	}
	t.Run("sqlite", func(t *testing.T) {
		ctx := t.Context()
		dir := t.TempDir()
		mnt := filepath.Join(dir, "mnt")
		if err := os.MkdirAll(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
			t.Skipf("a full disk needs a small file system: mount tmpfs failed (needs root): %v %s", err, out)
		}
		defer func() { _ = exec.Command("umount", "-l", mnt).Run() }()
		src := "sqlite:" + filepath.Join(dir, "src.db")
		sink := "sqlite:" + filepath.Join(mnt, "sink.db")
		if out := run(ctx, "sql", "--conn", src, `
CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);
ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');
INSERT INTO t VALUES (0, 'x');`); !strings.HasPrefix(out, "exit 0") {
			t.Fatal(out)
		}
		jobs := filepath.Join(dir, "jobs")
		if err := os.MkdirAll(jobs, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(jobs, "j.yaml"), []byte(fmt.Sprintf("name: j\nsource: s\nsink: {table: copy, mode: append, connection: '%s'}\nschedule: continuous\n", sink)), 0o644); err != nil {
			t.Fatal(err)
		}
		s := startServe(t, ctx, "--conn", src, "--state", "sqlite:"+filepath.Join(dir, "state.db"), jobs)
		// The test waits for the job's write to end before it takes the lock.
		sinkDB, err := sql.Open("sqlite", "file:"+filepath.Join(mnt, "sink.db")+"?_pragma=busy_timeout(30000)")
		if err != nil {
			t.Fatal(err)
		}
		defer sinkDB.Close()
		count := func() int {
			var n int
			if err := sinkDB.QueryRowContext(ctx, "SELECT count(*) FROM copy").Scan(&n); err != nil {
				return -1
			}
			return n
		}
		s.until("the first copy", 60*time.Second, func() bool { return count() == 1 })
		filler := filepath.Join(mnt, "filler")
		var busy *sql.Conn
		exercise(t, s, hold, []fault{
			{name: "disk full (SQLITE_FULL)", want: "full",
				inject: func(t *testing.T) {
					// Fill the file system to the last block.
					f, err := os.Create(filler)
					if err != nil {
						t.Fatal(err)
					}
					buf := make([]byte, 4096)
					for {
						if _, err := f.Write(buf); err != nil {
							if !errors.Is(err, syscall.ENOSPC) {
								t.Fatal(err)
							}
							break
						}
					}
					f.Close()
				},
				remove: func(t *testing.T) {
					if err := os.Remove(filler); err != nil {
						t.Fatal(err)
					}
				}},
			{name: "SQLITE_BUSY (write lock held)", want: "locked",
				inject: func(t *testing.T) {
					var err error
					if busy, err = sinkDB.Conn(ctx); err != nil {
						t.Fatal(err)
					}
					if _, err := busy.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
						t.Fatal(err)
					}
				},
				remove: func(t *testing.T) {
					if _, err := busy.ExecContext(ctx, "COMMIT"); err != nil {
						t.Fatal(err)
					}
					busy.Close()
				}},
		}, func(i int) {
			if out := run(ctx, "sql", "--conn", src, fmt.Sprintf("INSERT INTO t VALUES (%d, 'x')", i+1)); !strings.HasPrefix(out, "exit 0") {
				t.Fatal(out)
			}
		}, count)
	})

	t.Run("postgres", func(t *testing.T) {
		ctx := t.Context()
		pg := pgtest.NewDatabase(t)
		u, err := url.Parse(pg)
		if err != nil {
			t.Fatal(err)
		}
		admin, err := pgx.Connect(ctx, pg)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close(ctx)
		role := "sluice_faults_" + strings.TrimPrefix(strings.TrimPrefix(u.Path, "/"), "sluice_test_")
		if _, err := admin.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" SUPERUSER NOLOGIN PASSWORD 'pw'"); err != nil {
			t.Fatal(err)
		}
		defer admin.Exec(context.WithoutCancel(ctx), "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
		if out := run(ctx, "sql", "--conn", pg, `
CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);
CREATE TABLE copy (id BIGINT PRIMARY KEY, v TEXT);
ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');
INSERT INTO t VALUES (0, 'x');`); !strings.HasPrefix(out, "exit 0") {
			t.Fatal(out)
		}
		px := &proxy{addr: freeAddr(t), target: u.Host}
		px.enable(t)
		defer func() { px.close() }()
		ju := *u
		ju.Host = px.addr
		ju.User = url.UserPassword(role, "pw")
		dir := t.TempDir()
		jobs := filepath.Join(dir, "jobs")
		if err := os.MkdirAll(jobs, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(jobs, "j.yaml"), []byte(fmt.Sprintf("name: j\nconnection: '%s'\nsource: s\nsink: {table: copy, mode: append}\nschedule: continuous\n", ju.String())), 0o644); err != nil {
			t.Fatal(err)
		}
		count := func() int {
			var n int
			if err := admin.QueryRow(ctx, "SELECT count(*) FROM copy").Scan(&n); err != nil {
				return -1
			}
			return n
		}
		// Authentication failure at start: the role cannot log in yet.
		s := startServe(t, ctx, "--state", "sqlite:"+filepath.Join(dir, "state.db"), jobs)
		det := s.until("auth failure at start: retrying in /healthz", 90*time.Second, func() bool {
			h, e := s.job()
			return h == "retrying" && strings.Contains(e, "not permitted to log in")
		})
		time.Sleep(hold)
		if _, err := admin.Exec(ctx, "ALTER ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN"); err != nil {
			t.Fatal(err)
		}
		rec := s.until("auth failure at start: recovery", 180*time.Second, func() bool { return count() == 1 })
		t.Logf("fault %-30s retrying after %5.1fs; held %v; recovered %5.2fs after removal", "auth failure at start", det.Seconds(), hold, rec.Seconds())
		s.until("healthy", 30*time.Second, func() bool { h, _ := s.job(); return h == "ok" })

		exercise(t, s, hold, []fault{
			{name: "connection refused/reset", want: "connect",
				inject: func(t *testing.T) { px.close() },
				remove: func(t *testing.T) { px = &proxy{addr: px.addr, target: px.target}; px.enable(t) }},
			{name: "sessions terminated (restart)", want: "57P01",
				inject: func(t *testing.T) {
					// Every session of the job's role ends, as at a server
					// restart; the next statement on each fails (57P01).
					if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role); err != nil {
						t.Fatal(err)
					}
				}},
		}, func(i int) {
			if _, err := admin.Exec(ctx, fmt.Sprintf("INSERT INTO t VALUES (%d, 'x')", i+1)); err != nil {
				t.Fatal(err)
			}
		}, count)
	})
}
