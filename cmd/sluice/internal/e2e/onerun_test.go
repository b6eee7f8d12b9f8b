package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/serve"
)

// TestOneJobOneRun runs `sluice run` (and `sluice backfill`) of one job in
// separate processes while the job is running, with the job lock in
// PostgreSQL (a job on PostgreSQL, --conn naming it) and in SQLite (a job
// whose source is a SQLite file, --conn naming it, sinking to
// PostgreSQL). The first run is held inside its run by the test's LOCK
// TABLE on the target. It asserts: the second run and a backfill fail at
// once (the first still running) with exit code 1 and "job j is running
// (pid N on HOST since …)" naming the first's pid; a run with --wait waits
// and runs after the first finishes; and a first run killed by SIGKILL
// leaves the job free at once (PostgreSQL: its session ends; SQLite: its
// pid is gone on this host), well before the SQLite lease (30 s) would.
func TestOneJobOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sluice processes against PostgreSQL (skipped with -short)")
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"postgres", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			pg := pgtest.NewDatabase(t)
			conn, sinkConn := pg, ""
			if backend == "sqlite" {
				conn = "sqlite:" + filepath.Join(dir, "src.db")
				sinkConn = ", connection: '" + pg + "'"
			}
			for _, q := range []struct{ conn, sql string }{
				{conn, `CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);
ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');
INSERT INTO t VALUES (1, 'a');`},
				{pg, `CREATE TABLE c (id BIGINT PRIMARY KEY, v TEXT)`},
			} {
				if out := run(ctx, "sql", "--conn", q.conn, q.sql); !strings.HasPrefix(out, "exit 0") {
					t.Fatal(out)
				}
			}
			job := filepath.Join(dir, "job.yaml")
			if err := os.WriteFile(job, []byte("name: j\nsource: s\nsink: {table: c, mode: append"+sinkConn+"}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			store, err := serve.OpenStore(ctx, conn, serve.StoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			admin, err := pgx.Connect(ctx, pg)
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close(ctx)
			block := func() pgx.Tx {
				t.Helper()
				tx, err := admin.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec(ctx, "LOCK TABLE c IN ACCESS EXCLUSIVE MODE"); err != nil {
					t.Fatal(err)
				}
				return tx
			}
			// holding waits until p holds the job's lock (its record names
			// p's pid).
			holding := func(p *proc) serve.Holder {
				t.Helper()
				deadline := time.Now().Add(60 * time.Second)
				for {
					h, ok, err := store.(serve.HolderLocker).Holder(ctx, "j")
					if err != nil {
						t.Fatal(err)
					}
					if ok && h.PID == p.cmd.Process.Pid {
						return h
					}
					if p.exited() || time.Now().After(deadline) {
						t.Fatalf("the first run did not take the job lock (exit %d):\n%s", p.code, p.output())
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			finish := func(p *proc, what string) {
				t.Helper()
				select {
				case <-p.done:
				case <-time.After(90 * time.Second):
					t.Fatalf("%s did not finish:\n%s", what, p.output())
				}
			}

			tx := block()
			first := sluiceProc(t, "run", "--conn", conn, job)
			h := holding(first)
			want := fmt.Sprintf("job j is running (pid %d on %s since %s)", first.cmd.Process.Pid, host, h.Since.UTC().Format(time.RFC3339))
			for _, verb := range []string{"run", "backfill"} {
				t0 := time.Now()
				second := sluiceProc(t, verb, "--conn", conn, job)
				finish(second, "the second "+verb)
				took := time.Since(t0)
				if second.code != 1 || !strings.Contains(second.stderr.String(), want) {
					t.Errorf("second %s: exit %d, want 1 with %q:\n%s", verb, second.code, want, second.output())
				}
				if first.exited() {
					t.Fatalf("the first run ended before the second %s's answer: it waited:\n%s", verb, first.output())
				}
				t.Logf("%s: the second %s refused in %v (process start included)", backend, verb, took.Round(time.Millisecond))
			}

			waiter := sluiceProc(t, "run", "--wait", "--conn", conn, job)
			deadline := time.Now().Add(60 * time.Second)
			for !strings.Contains(waiter.stderr.String(), want+"; waiting") {
				if waiter.exited() || time.Now().After(deadline) {
					t.Fatalf("run --wait did not say it waits (exit %v):\n%s", waiter.exited(), waiter.output())
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(500 * time.Millisecond)
			if waiter.exited() {
				t.Fatalf("run --wait ended while the first still ran:\n%s", waiter.output())
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			finish(first, "the first run")
			finish(waiter, "run --wait")
			if first.code != 0 || !strings.Contains(first.stdout.String(), "j: read 1 (INSERT 1); wrote 1 (INSERT 1)") {
				t.Errorf("first run: exit %d:\n%s", first.code, first.output())
			}
			if waiter.code != 0 || !strings.Contains(waiter.stdout.String(), "j: ") {
				t.Errorf("run --wait: exit %d:\n%s", waiter.code, waiter.output())
			}

			// A holder killed by SIGKILL does not block the next run.
			if out := run(ctx, "sql", "--conn", conn, "INSERT INTO t VALUES (2, 'b')"); !strings.HasPrefix(out, "exit 0") {
				t.Fatal(out)
			}
			tx = block()
			killed := sluiceProc(t, "run", "--conn", conn, job)
			holding(killed)
			if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-killed.done // reaped
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			next := sluiceProc(t, "run", "--conn", conn, job)
			finish(next, "the run after the SIGKILL")
			took := time.Since(t0)
			if next.code != 0 || !strings.Contains(next.stdout.String(), "j: read 1 (INSERT 1); wrote 1 (INSERT 1)") {
				t.Errorf("run after the holder's SIGKILL: exit %d:\n%s", next.code, next.output())
			}
			if took > 20*time.Second {
				t.Errorf("the run after the SIGKILL took %v: it waited for the lock", took)
			}
			t.Logf("%s: the run after the holder's SIGKILL finished in %v (process start included)", backend, took.Round(time.Millisecond))
		})
	}
}
