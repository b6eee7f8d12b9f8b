package pgit

import (
	"bytes"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// pgbenchPath finds the pgbench client or skips t.
func pgbenchPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench"); len(m) > 0 {
		return m[len(m)-1]
	}
	t.Skip("pgbench (the PostgreSQL client benchmark) is not installed (PATH, /usr/lib/postgresql/*/bin)")
	return ""
}

// accountsSum is a checksum of a pgbench_accounts-shaped table: every
// column of every row, in key order, and the row count.
const accountsSum = `SELECT count(*)::text, coalesce(md5(string_agg(format('%%s:%%s:%%s:%%s:%%s', aid, bid, abalance, filler IS NULL, filler), ',' ORDER BY aid)), '')
FROM %s`

// TestPgbenchConcurrentMerge runs pgbench's TPC-B-like workload (the
// PostgreSQL client, not our code) against a tracked pgbench_accounts
// while two merge jobs consume it over and over: one into a replica in
// another database (rows through sluice) and one into a replica in the
// same database (pushed down). Both streams show the initial rows, so the
// replicas start empty and the first runs (before pgbench starts) copy
// them. After pgbench ends and a final run of each job,
// both replicas equal pgbench_accounts exactly (count and a checksum of
// every column of every row).
func TestPgbenchConcurrentMerge(t *testing.T) {
	pgbench := pgbenchPath(t)
	src := pgtest.NewDatabase(t)
	dst := pgtest.NewDatabase(t)
	ctx := t.Context()
	seconds := "10"
	if testing.Short() {
		seconds = "4"
	}

	if out, err := exec.CommandContext(ctx, pgbench, "-i", "-s", "1", "-q", src).CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	sc := connect(t, src)
	var hasPK bool
	if err := sc.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_index WHERE indrelid = 'pgbench_accounts'::regclass AND indisprimary)`).Scan(&hasPK); err != nil {
		t.Fatal(err)
	}
	if !hasPK {
		mustExec(t, sc, `ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid)`)
	}
	sluiceSQL(t, src, `
ALTER TABLE pgbench_accounts SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM acc_cross ON TABLE pgbench_accounts WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE');
CREATE TABLE STREAM acc_push ON TABLE pgbench_accounts WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE');
`)
	parse := func(text string) *plan.Job {
		j, err := dsl.ParseJob("job.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	jobs := []*plan.Job{
		parse(`name: pgbench_cross
source: acc_cross
select: [aid, bid, abalance, filler]
sink: {table: accounts_replica, mode: merge, keys: [aid], connection: '` + dst + `'}
`),
		parse(`name: pgbench_push
source: acc_push
select: [aid, bid, abalance, filler]
sink: {table: accounts_push, mode: merge, keys: [aid]}
`),
	}
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: src, BatchSize: 5000}
	defer r.Close()
	// The cross-database job must move rows through sluice, the other must
	// be pushed down; check the plans say so.
	for i, j := range jobs {
		p, err := r.Plan(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p.Plan.Pushdown, i == 1; got != want {
			t.Fatalf("%s: pushdown = %v, want %v", j.Name, got, want)
		}
	}

	// The first runs copy the initial rows; then consume while pgbench runs.
	for _, j := range jobs {
		if _, err := r.RunJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg      sync.WaitGroup
		stop    atomic.Bool
		runs    [2]int
		read    [2]int64
		runErr  error
		runOnce sync.Once
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			k := i % 2
			res, err := r.RunJob(ctx, jobs[k])
			if err != nil {
				runOnce.Do(func() { runErr = err })
				return
			}
			runs[k]++
			for _, n := range res.Stats.Read {
				read[k] += n
			}
		}
	}()
	cmd := exec.CommandContext(ctx, pgbench, "-n", "-b", "tpcb-like", "-c", "4", "-j", "2", "-T", seconds, src)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out.String())
	}
	if runErr != nil {
		t.Fatalf("a run during pgbench failed: %v", runErr)
	}
	var tx int64
	if err := sc.QueryRow(ctx, `SELECT count(*) FROM pgbench_history`).Scan(&tx); err != nil {
		t.Fatal(err)
	}
	if tx == 0 {
		t.Fatalf("pgbench committed no transaction:\n%s", out.String())
	}
	t.Logf("pgbench committed %d transactions in %ss; during it: %d cross-database runs (%d changes read), %d pushed-down runs (%d changes read)",
		tx, seconds, runs[0], read[0], runs[1], read[1])

	// A final run of each job consumes the rest.
	for _, j := range jobs {
		if _, err := r.RunJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	want := sum(t, sc, "pgbench_accounts")
	if want[0] != "100000" {
		t.Fatalf("pgbench_accounts has %s rows, want 100000", want[0])
	}
	if got := sum(t, connect(t, dst), "accounts_replica"); got != want {
		t.Errorf("accounts_replica (other database) = %v, pgbench_accounts = %v", got, want)
	}
	if got := sum(t, sc, "accounts_push"); got != want {
		t.Errorf("accounts_push (same database, pushed down) = %v, pgbench_accounts = %v", got, want)
	}
	// And nothing is left pending.
	for _, s := range []string{"acc_cross", "acc_push"} {
		b, err := r.Backend(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		rs, err := b.(runner.Executor).Exec(ctx, &dsl.DescribeStream{Stream: s})
		if err != nil {
			t.Fatal(err)
		}
		if n := rs.Rows[0][describePending(rs)]; n != int64(0) {
			t.Errorf("stream %s: %v changes pending after the final run", s, n)
		}
	}
}

func sum(t *testing.T, c *pgx.Conn, table string) [2]string {
	t.Helper()
	var out [2]string
	q := fmt.Sprintf(accountsSum, pgx.Identifier{table}.Sanitize())
	if err := c.QueryRow(t.Context(), q).Scan(&out[0], &out[1]); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// describePending is the index of DESCRIBE TABLE STREAM's pending_changes.
func describePending(rs *runner.ResultSet) int {
	for i, c := range rs.Columns {
		if c.Name == "pending_changes" {
			return i
		}
	}
	return -1
}
