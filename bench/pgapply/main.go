// Command pgapply measures how fast sluice applies pending changes of a
// PostgreSQL table stream to a replica, side by side with PostgreSQL's own
// logical replication catching up on the same changes and with one
// hand-written MERGE over sluice's change log, and prints changes per
// second, peak RSS and the ratios.
//
//	go run ./bench/pgapply                      # 100,000 then 1,000,000 changes (pgbench simple-update over scale 10)
//	go run ./bench/pgapply -quick               # 100,000 changes only (a few minutes)
//	go run ./bench/pgapply -changes 300000      # one size
//	go run ./bench/pgapply -rounds 5            # medians of 5 rounds (default 3)
//	go run ./bench/pgapply -pg postgres://…     # on an existing server (needs wal_level=logical); -keep keeps the prepared database
//	go run ./bench/pgapply -serverlog DIR       # keep the server log: every statement's duration, auto_explain of those over 200 ms
//
// It prints, per size, a table of medians (min–max) and, at the end, one
// line per goal for a collector program:
// SUMMARY<TAB>path<TAB>ratio median<TAB>min<TAB>max<TAB>baseline<TAB>peak RSS MB of sluice,
// the ratio being sluice's speed over the baseline's in the same round.
//
// Without -pg it starts a throw-away cluster (initdb/pg_ctl, as the
// postgres OS user when run as root) on a free port with wal_level=logical
// and the settings in clusterSettings, and removes it at the end; the
// machine's shared server is never touched or restarted.
//
// The workload: pgbench -i -s 10 (1,000,000 accounts); change tracking on
// pgbench_accounts and a STANDARD stream; replicas of pgbench_accounts as
// of the stream's creation (one in the source database, one in a sink
// database, one in a logical-replication subscriber database); then
// pgbench -b simple-update runs until -changes accounts updates are
// committed (one UPDATE per transaction, random accounts, so several
// changes hit the same key). The contenders:
//
//   - logical replication: a publication on pgbench_accounts and a
//     subscription (copy_data = false) whose slot was created before the
//     changes, enabled after them; timed from ALTER SUBSCRIPTION … ENABLE
//     until a marker row committed after the changes has arrived;
//   - hand-written MERGE: one MERGE INTO the replica USING the change log
//     deduplicated with DISTINCT ON (aid) ORDER BY aid, __seq DESC (it
//     neither moves an offset nor purges the log; a second row adds the
//     DELETE of the consumed log rows, which sluice also purges);
//   - hand-written MERGE of STANDARD net changes: the same with the
//     semantics sluice implements (first and last image per key, no-op
//     updates dropped), to separate their cost from sluice's own;
//   - sluice run, same database: the job is pushed down (one transaction);
//   - sluice run, other database: rows travel through sluice in batches,
//     once per batch size in -batches.
//
// Every sluice contender and the hand MERGE run on their own copy (CREATE
// DATABASE … TEMPLATE) of the same prepared database, each in a child
// process (this program re-executed) so peak RSS (getrusage ru_maxrss) is
// the contender's alone. Every replica is checked equal to
// pgbench_accounts afterwards (count and a checksum of all columns). The
// contenders run -rounds times, in turn, and the table shows each one's
// median with its fastest and slowest round: on a shared machine single
// runs of one contender varied by ±20%.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicedata/sluice/bench/internal/machine"
	"github.com/sluicedata/sluice/bench/internal/pgcluster"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
	_ "github.com/sluicedata/sluice/sources/postgres"
)

var (
	pgURL   = flag.String("pg", "", "server URL (wal_level=logical); default: a throw-away cluster")
	changes = flag.Int("changes", 0, "pending changes (pgbench account updates); default: 100,000, then 1,000,000 (-quick: 100,000)")
	quick   = flag.Bool("quick", false, "100,000 changes only (about 2 minutes)")
	keep    = flag.Bool("keep", false, "with -pg: keep the prepared source database (pending changes, stream, replica) for experiments; its name is printed")
	logDir  = flag.String("serverlog", "", "keep the throw-away cluster's server log, with every statement's duration (log_min_duration_statement = 0), in this directory")
	scale   = flag.Int("scale", 10, "pgbench scale (100,000 accounts each)")
	clients = flag.Int("clients", 4, "pgbench clients generating the changes")
	batches = flag.String("batches", "10000,100000", "batch sizes of the cross-database runs")
	rounds  = flag.Int("rounds", 3, "rounds of the contenders other than logical replication, run in turn; the table shows medians")
	mode    = flag.String("mode", "", "internal: run one contender (hand, push, cross)")
	srcURL  = flag.String("src", "", "internal: contender's source database")
	dstURL  = flag.String("dst", "", "internal: contender's sink database")
	batch   = flag.Int("batch", runner.DefaultBatchSize, "internal: batch size of a cross run")
	profile = flag.String("cpuprofile", "", "internal: write the contender's CPU profile to this file")
)

// clusterSettings are the server settings of the throw-away cluster: WAL
// for logical replication, no fsync (the machine's disk is not what is
// measured), shared buffers holding the working set, and no checkpoint
// forced by WAL volume in the middle of a contender.
var clusterSettings = []string{
	"wal_level=logical", "max_wal_senders=10", "max_replication_slots=10",
	"fsync=off", "shared_buffers=1GB", "max_wal_size=16GB", "checkpoint_timeout=1h",
}

type result struct {
	Seconds      float64 `json:"seconds"`
	PurgeSeconds float64 `json:"purge_seconds,omitempty"`
	Read         int64   `json:"read"`
}

func main() {
	flag.Parse()
	ctx := context.Background()
	if *mode != "" {
		if *profile != "" {
			f, err := os.Create(*profile)
			if err == nil {
				err = pprof.StartCPUProfile(f)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		r, err := contender(ctx)
		pprof.StopCPUProfile()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	if err := parent(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "pgapply:", err)
		os.Exit(1)
	}
}

// sumSQL checksums a pgbench_accounts-shaped table.
const sumSQL = `SELECT count(*)::text || ' ' || coalesce(md5(string_agg(format('%%s:%%s:%%s:%%s', aid, bid, abalance, filler), ',' ORDER BY aid)), '') FROM %s`

type bench struct {
	base   string // maintenance database URL
	admin  *pgx.Conn
	prefix string
	dbs    []string // created, dropped at the end
}

func (b *bench) url(db string) string { return pgcluster.WithDB(b.base, db) }

func (b *bench) createDB(ctx context.Context, name, template string) error {
	q := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		q += " TEMPLATE " + pgx.Identifier{template}.Sanitize() + " STRATEGY = FILE_COPY"
	}
	if _, err := b.admin.Exec(ctx, q); err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	b.dbs = append(b.dbs, name)
	return nil
}

func (b *bench) dropDB(ctx context.Context, name string) error {
	_, err := b.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

func execAll(ctx context.Context, url string, stmts ...string) error {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", strings.SplitN(strings.TrimSpace(s), "\n", 2)[0], err)
		}
	}
	return nil
}

func queryString(ctx context.Context, url, q string) (string, error) {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	var s string
	err = c.QueryRow(ctx, q).Scan(&s)
	return s, err
}

// sluiceSQL runs statements of sluice's dialect on url.
func sluiceSQL(ctx context.Context, url, text string) error {
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler)}
	defer r.Close()
	return r.ExecScript(ctx, url, "setup.sql", text, nil)
}

// copyTable streams a COPY out of one database into another.
func copyTable(ctx context.Context, fromURL, out, toURL, in string) error {
	fc, err := pgx.Connect(ctx, fromURL)
	if err != nil {
		return err
	}
	defer fc.Close(ctx)
	tc, err := pgx.Connect(ctx, toURL)
	if err != nil {
		return err
	}
	defer tc.Close(ctx)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := fc.PgConn().CopyTo(ctx, pw, out)
		pw.CloseWithError(err)
		done <- err
	}()
	_, err = tc.PgConn().CopyFrom(ctx, pr, in)
	pr.CloseWithError(errors.New("copy in ended"))
	return errors.Join(err, <-done)
}

func parent(ctx context.Context) (err error) {
	pgbench, err := pgcluster.PgbenchPath()
	if err != nil {
		return err
	}
	base := *pgURL
	where := base
	if base == "" {
		var stop func()
		settings := clusterSettings
		if *logDir != "" {
			d, err := filepath.Abs(*logDir)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(d, 0o777); err != nil {
				return err
			}
			_ = os.Chmod(d, 0o777) // the server may run as the postgres OS user
			settings = append(slices.Clone(settings), "logging_collector=on", "log_directory="+d, "log_filename=postgresql.log",
				"log_min_duration_statement=0", "log_line_prefix=%m_%d_%p_",
				"session_preload_libraries=auto_explain", "auto_explain.log_min_duration=200ms", "auto_explain.log_analyze=on", "auto_explain.log_buffers=on")
		}
		base, stop, err = pgcluster.Start(ctx, settings)
		if err != nil {
			return err
		}
		defer stop()
		where = "throw-away cluster (" + strings.Join(clusterSettings, " ") + ")"
	}
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	var walLevel, version string
	if err := admin.QueryRow(ctx, `SELECT current_setting('wal_level'), current_setting('server_version')`).Scan(&walLevel, &version); err != nil {
		return err
	}
	if walLevel != "logical" {
		return fmt.Errorf("wal_level is %s on %s; logical replication needs logical (run without -pg to use a throw-away cluster)", walLevel, *pgURL)
	}
	sizes := []int{100_000, 1_000_000}
	switch {
	case *changes > 0:
		sizes = []int{*changes}
	case *quick:
		sizes = []int{100_000}
	}
	fmt.Printf("server: PostgreSQL %s, %s\n", version, where)
	fmt.Printf("load average at start: %s\n", machine.LoadAvg())
	var sums []summary
	for _, n := range sizes {
		s, err := measure(ctx, base, admin, pgbench, n)
		if err != nil {
			return err
		}
		sums = append(sums, s...)
	}
	fmt.Printf("\nload average at end: %s\n", machine.LoadAvg())
	for _, s := range sums {
		fmt.Printf("SUMMARY\t%s\t%.3f\t%.3f\t%.3f\t%s\t%d\n", s.path, s.med, s.lo, s.hi, s.baseline, s.rssMB)
	}
	return nil
}

// summary is one goal row of the bench (the SUMMARY lines): sluice's
// speed over the baseline's, median and range over the rounds, and
// sluice's peak RSS in MB.
type summary struct {
	path, baseline string
	med, lo, hi    float64
	rssMB          int64
}

// loadAvg returns /proc/loadavg's three load averages ("?" if unknown).

// sizeName is n changes as a short name (100k, 1M).
func sizeName(n int) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1_000 == 0:
		return fmt.Sprintf("%dk", n/1_000)
	}
	return strconv.Itoa(n)
}

// measure prepares n pending changes in databases of their own and runs
// the contenders on them; it prints the table and returns the goal rows.
func measure(ctx context.Context, base string, admin *pgx.Conn, pgbench string, nChanges int) (sums []summary, err error) {
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	b := &bench{base: base, admin: admin, prefix: "sluice_bench_" + hex.EncodeToString(rb[:]) + "_"}
	defer func() {
		for _, db := range b.dbs {
			if *keep && *pgURL != "" && db == b.prefix+"src" {
				fmt.Printf("kept the prepared source database %s\n", db)
				continue
			}
			if e := b.dropDB(context.WithoutCancel(ctx), db); e != nil && err == nil {
				err = e
			}
		}
	}()
	fmt.Printf("\n=== %d changes ===\n", nChanges)
	src, sinkTpl, lr := b.prefix+"src", b.prefix+"sinktpl", b.prefix+"lr"
	for _, db := range []string{src, sinkTpl, lr} {
		if err := b.createDB(ctx, db, ""); err != nil {
			return nil, err
		}
	}

	// The table and its replicas as of the stream's creation.
	t0 := time.Now()
	if out, err := exec.CommandContext(ctx, pgbench, "-i", "-s", strconv.Itoa(*scale), "-q", b.url(src)).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgbench -i: %v\n%s", err, out)
	}
	const accountsDDL = `(aid integer PRIMARY KEY, bid integer, abalance integer, filler character(84))`
	if err := execAll(ctx, b.url(src),
		`DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_index WHERE indrelid = 'pgbench_accounts'::regclass AND indisprimary) THEN ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid); END IF; END $$`,
		`CREATE TABLE replica `+accountsDDL,
		`INSERT INTO replica SELECT aid, bid, abalance, filler FROM pgbench_accounts`,
		`CREATE TABLE bench_marker (id integer PRIMARY KEY)`,
	); err != nil {
		return nil, err
	}
	if err := execAll(ctx, b.url(sinkTpl), `CREATE TABLE replica `+accountsDDL); err != nil {
		return nil, err
	}
	if err := execAll(ctx, b.url(lr), `CREATE TABLE pgbench_accounts `+accountsDDL, `CREATE TABLE bench_marker (id integer PRIMARY KEY)`); err != nil {
		return nil, err
	}
	copyOut := `COPY pgbench_accounts (aid, bid, abalance, filler) TO STDOUT`
	if err := copyTable(ctx, b.url(src), copyOut, b.url(sinkTpl), `COPY replica FROM STDIN`); err != nil {
		return nil, err
	}
	if err := copyTable(ctx, b.url(src), copyOut, b.url(lr), `COPY pgbench_accounts FROM STDIN`); err != nil {
		return nil, err
	}
	if err := execAll(ctx, b.url(sinkTpl), `VACUUM ANALYZE replica`); err != nil {
		return nil, err
	}
	if err := execAll(ctx, b.url(lr), `VACUUM ANALYZE pgbench_accounts`); err != nil {
		return nil, err
	}
	if err := sluiceSQL(ctx, b.url(src), `
ALTER TABLE pgbench_accounts SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM accounts_stream ON TABLE pgbench_accounts WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
`); err != nil {
		return nil, err
	}
	// Logical replication from here: the slot is created before the
	// changes (in its own statement: a subscription to the same cluster
	// cannot create its slot), the subscription stays disabled until they
	// are all committed.
	slot := b.prefix + "slot"
	if err := execAll(ctx, b.url(src),
		`CREATE PUBLICATION bench_pub FOR TABLE pgbench_accounts, bench_marker`,
		fmt.Sprintf(`SELECT pg_create_logical_replication_slot('%s', 'pgoutput')`, slot),
	); err != nil {
		return nil, err
	}
	defer execAll(context.WithoutCancel(ctx), b.url(src), fmt.Sprintf(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '%s'`, slot))
	if err := execAll(ctx, b.url(lr), fmt.Sprintf(`CREATE SUBSCRIPTION bench_sub CONNECTION '%s' PUBLICATION bench_pub
		WITH (create_slot = false, slot_name = '%s', copy_data = false, enabled = false)`, b.url(src), slot)); err != nil {
		return nil, err
	}
	defer execAll(context.WithoutCancel(ctx), b.url(lr), `ALTER SUBSCRIPTION bench_sub DISABLE`, `ALTER SUBSCRIPTION bench_sub SET (slot_name = NONE)`, `DROP SUBSCRIPTION bench_sub`)
	fmt.Printf("prepared pgbench scale %d, replicas, stream, publication in %s\n", *scale, time.Since(t0).Round(time.Millisecond))

	// The changes.
	perClient := (nChanges + *clients - 1) / *clients
	t0 = time.Now()
	gen := exec.CommandContext(ctx, pgbench, "-n", "-M", "prepared", "-b", "simple-update", "-c", strconv.Itoa(*clients), "-j", "2", "-t", strconv.Itoa(perClient), b.url(src))
	if out, err := gen.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgbench: %v\n%s", err, out)
	}
	genTime := time.Since(t0)
	n, err := queryString(ctx, b.url(src), `SELECT count(*)::text FROM sluice.log_pgbench_accounts WHERE __op IN ('A', 'U')`)
	if err != nil {
		return nil, err
	}
	total, _ := strconv.ParseFloat(n, 64)
	keys, err := queryString(ctx, b.url(src), `SELECT count(DISTINCT aid)::text FROM sluice.log_pgbench_accounts`)
	if err != nil {
		return nil, err
	}
	if err := execAll(ctx, b.url(src), `INSERT INTO bench_marker VALUES (1)`); err != nil {
		return nil, err
	}
	fmt.Printf("generated %s pending changes (%s distinct keys; pgbench simple-update, %d clients, one UPDATE per transaction) in %s (%.0f tps with capture)\n",
		n, keys, *clients, genTime.Round(time.Millisecond), total/genTime.Seconds())
	want, err := queryString(ctx, b.url(src), fmt.Sprintf(sumSQL, "pgbench_accounts"))
	if err != nil {
		return nil, err
	}

	// Logical replication catch-up.
	lrc, err := pgx.Connect(ctx, b.url(lr))
	if err != nil {
		return nil, err
	}
	t0 = time.Now()
	if _, err := lrc.Exec(ctx, `ALTER SUBSCRIPTION bench_sub ENABLE`); err != nil {
		lrc.Close(ctx)
		return nil, err
	}
	for {
		var ok bool
		if err := lrc.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM bench_marker)`).Scan(&ok); err != nil {
			lrc.Close(ctx)
			return nil, err
		}
		if ok {
			break
		}
		if time.Since(t0) > time.Hour {
			lrc.Close(ctx)
			return nil, errors.New("logical replication did not catch up within an hour")
		}
		time.Sleep(5 * time.Millisecond)
	}
	lrTime := time.Since(t0)
	lrc.Close(ctx)
	if got, err := queryString(ctx, b.url(lr), fmt.Sprintf(sumSQL, "pgbench_accounts")); err != nil {
		return nil, err
	} else if got != want {
		return nil, fmt.Errorf("logical replication: the subscriber's pgbench_accounts differs from the publisher's")
	}
	fmt.Printf("logical replication caught up in %s\n", lrTime.Round(time.Millisecond))
	if err := execAll(ctx, b.url(lr), `ALTER SUBSCRIPTION bench_sub DISABLE`); err != nil {
		return nil, err
	}
	// Fresh statistics and a clean visibility map for every contender (what
	// autovacuum would do), then copies of the prepared state.
	if err := execAll(ctx, b.url(src), `VACUUM ANALYZE`); err != nil {
		return nil, err
	}

	type row struct {
		name    string
		seconds float64 // median over the rounds
		lo, hi  float64 // fastest and slowest round
		rss     int64
	}
	rows := []row{{name: "PostgreSQL logical replication catch-up (subscription, other database)", seconds: lrTime.Seconds(), lo: lrTime.Seconds(), hi: lrTime.Seconds()}}
	type run struct {
		mode  string
		batch int
	}
	runs := []run{{"hand", 0}, {"handnet", 0}, {"push", 0}}
	var bs []int
	for _, f := range strings.Split(*batches, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-batches: %q is not a batch size", f)
		}
		bs = append(bs, n)
		runs = append(runs, run{"cross", n})
	}
	// Each round runs every contender once, in turn, on fresh copies.
	key := func(r run) string { return fmt.Sprintf("%s/%d", r.mode, r.batch) }
	times, purged := map[string][]float64{}, []float64{}
	peak := map[string]int64{}
	for round := 0; round < max(*rounds, 1); round++ {
		for i, r := range runs {
			c, s := fmt.Sprintf("%sc%d", b.prefix, i), fmt.Sprintf("%ss%d", b.prefix, i)
			if err := b.createDB(ctx, c, src); err != nil {
				return nil, err
			}
			dst := ""
			if r.mode == "cross" {
				if err := b.createDB(ctx, s, sinkTpl); err != nil {
					return nil, err
				}
				dst = b.url(s)
			}
			if _, err := admin.Exec(ctx, `CHECKPOINT`); err != nil {
				return nil, err
			}
			res, rss, err := child(r.mode, b.url(c), dst, r.batch)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.mode, err)
			}
			where := b.url(c)
			if dst != "" {
				where = dst
			}
			if got, err := queryString(ctx, where, fmt.Sprintf(sumSQL, "replica")); err != nil {
				return nil, err
			} else if got != want {
				return nil, fmt.Errorf("%s: the replica differs from pgbench_accounts", r.mode)
			}
			times[key(r)] = append(times[key(r)], res.Seconds)
			if r.mode == "hand" {
				purged = append(purged, res.Seconds+res.PurgeSeconds)
			}
			peak[key(r)] = max(peak[key(r)], rss)
			for _, db := range []string{c, s} {
				if err := b.dropDB(ctx, db); err != nil {
					return nil, err
				}
			}
		}
	}
	stat := func(ts []float64) (med, lo, hi float64) {
		ts = slices.Clone(ts)
		slices.Sort(ts)
		n := len(ts)
		return (ts[(n-1)/2] + ts[n/2]) / 2, ts[0], ts[n-1]
	}
	add := func(name string, ts []float64, rss int64) float64 {
		m, lo, hi := stat(ts)
		rows = append(rows, row{name, m, lo, hi, rss})
		return m
	}
	hand := add("hand-written MERGE over the change log (same database)", times["hand/0"], 0)
	handPurge := add("hand-written MERGE + DELETE of the consumed log rows", purged, 0)
	handNet := add("hand-written MERGE of STANDARD net changes (first and last image)", times["handnet/0"], 0)
	push := add("sluice run, same database (pushed down)", times["push/0"], peak["push/0"])
	var cross []float64
	for _, n := range bs {
		k := key(run{"cross", n})
		cross = append(cross, add(fmt.Sprintf("sluice run, other database (batches of %d)", n), times[k], peak[k]))
	}

	fmt.Println()
	fmt.Printf("medians of %d rounds (logical replication: one catch-up); the range is the fastest and slowest round\n", max(*rounds, 1))
	fmt.Printf("%-72s %9s %13s %11s %9s %9s %9s\n", "contender", "seconds", "range", "changes/s", "peak RSS", "vs MERGE", "vs LR")
	rate := func(s float64) float64 { return total / s }
	for _, r := range rows {
		rss := "-"
		if r.rss > 0 {
			rss = fmt.Sprintf("%dMB", r.rss/1024)
		}
		fmt.Printf("%-72s %9.2f %13s %11.0f %9s %8.2fx %8.2fx\n", r.name, r.seconds, fmt.Sprintf("%.2f–%.2f", r.lo, r.hi), rate(r.seconds), rss, hand/r.seconds, lrTime.Seconds()/r.seconds)
	}
	fmt.Println()
	// Per round, sluice's speed over the baseline's: the contenders of a
	// round ran one after the other, so a round's ratio shares its load.
	ratios := func(base, sl []float64) (med, lo, hi float64) {
		var rs []float64
		for i := range min(len(base), len(sl)) {
			rs = append(rs, base[i]/sl[i])
		}
		return stat(rs)
	}
	pm, pl, ph := ratios(times["hand/0"], times["push/0"])
	fmt.Printf("goal: pushed down ≥ 0.8× the hand-written MERGE: %.2fx (rounds %.2f–%.2f; %.2fx against MERGE + log purge; %.2fx against the hand-written STANDARD net-change MERGE)\n", pm, pl, ph, handPurge/push, handNet/push)
	sums = append(sums, summary{path: "PostgreSQL pushdown, " + sizeName(nChanges) + " changes", baseline: "hand-written MERGE", med: pm, lo: pl, hi: ph, rssMB: peak["push/0"] / 1024})
	for i, s := range cross {
		k := key(run{"cross", bs[i]})
		lrs := make([]float64, len(times[k]))
		for j := range lrs {
			lrs[j] = lrTime.Seconds()
		}
		m, lo, hi := ratios(lrs, times[k])
		fmt.Printf("goal: other database ≥ 2.5× logical replication's catch-up: %.2fx (batches of %d; median %.2f s)\n", m, bs[i], s)
		sums = append(sums, summary{path: fmt.Sprintf("PostgreSQL → PostgreSQL other database, batches of %d, %s changes", bs[i], sizeName(nChanges)),
			baseline: "logical replication catch-up", med: m, lo: lo, hi: hi, rssMB: peak[k] / 1024})
	}
	fmt.Println("every replica equals pgbench_accounts (count and checksum of all columns)")
	return sums, nil
}

// child runs one contender in a child process and returns its result and
// peak RSS in KiB.
func child(m, src, dst string, batch int) (result, int64, error) {
	args := []string{"-mode", m, "-src", src}
	if dst != "" {
		args = append(args, "-dst", dst, "-batch", strconv.Itoa(batch))
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, 0, err
	}
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		return result{}, 0, fmt.Errorf("child output %q: %w", out, err)
	}
	return r, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss, nil
}

func contender(ctx context.Context) (result, error) {
	t0 := time.Now()
	switch *mode {
	case "hand":
		return handMerge(ctx, *srcURL)
	case "handnet":
		return handNetMerge(ctx, *srcURL)
	case "push", "cross":
		sink := ""
		if *mode == "cross" {
			sink = ", connection: '" + *dstURL + "'"
		}
		job, err := dsl.ParseJob("bench.yaml", []byte(`
name: bench
source: accounts_stream
select: [aid, bid, abalance, filler]
sink: {table: replica, mode: merge, keys: [aid]`+sink+`}
`))
		if err != nil {
			return result{}, err
		}
		r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: *srcURL, BatchSize: *batch}
		defer r.Close()
		p, err := r.Plan(ctx, job)
		if err != nil {
			return result{}, err
		}
		if p.Plan.Pushdown != (*mode == "push") {
			return result{}, fmt.Errorf("plan pushdown = %v in mode %s", p.Plan.Pushdown, *mode)
		}
		res, err := r.Run(ctx, p)
		if err != nil {
			return result{}, err
		}
		var n int64
		for _, v := range res.Stats.Read {
			n += v
		}
		return result{Seconds: time.Since(t0).Seconds(), Read: n}, nil
	}
	return result{}, fmt.Errorf("unknown mode %q", *mode)
}

// handMerge is what a careful engineer writes by hand against the change
// log (layout in sources/postgres's package doc): the last log row per key
// decides — an 'I'nsert or new ('U', 'A') image is upserted, a 'D'elete or
// 'B'efore image (of a key-changing update) deletes — in one statement (its
// own transaction). Then, timed separately, the consumed log rows are
// deleted.
func handMerge(ctx context.Context, url string) (result, error) {
	return mergeBy(ctx, url, `(SELECT DISTINCT ON (aid) __op, aid, bid, abalance, filler
       FROM sluice.log_pgbench_accounts ORDER BY aid, __seq DESC)`, true)
}

// handNetMerge is the hand-written MERGE of the changes with a STANDARD
// table stream's semantics (DESIGN.md), which sluice implements: per key
// the first and the last log row decide — an update whose last image
// equals its first is no change, a key inserted and deleted again is none,
// a DELETE carries the first image — computed with window functions in one
// sort of the log, at the server's default work_mem. It separates the cost
// of those semantics from sluice's own (offsets, checkpoint, counts,
// purge).
func handNetMerge(ctx context.Context, url string) (result, error) {
	return mergeBy(ctx, url, `(SELECT * FROM (
         SELECT __op, aid, bid, abalance, filler,
                lead(true, 1, false) OVER k AS more, first_value(__op) OVER k AS fop,
                first_value(bid) OVER k AS fbid, first_value(abalance) OVER k AS fab, first_value(filler) OVER k AS ffil
         FROM sluice.log_pgbench_accounts WINDOW k AS (PARTITION BY aid ORDER BY __seq)) x
       WHERE NOT more AND (fop IN ('B', 'D') OR __op IN ('I', 'A', 'U'))
         AND NOT (fop IN ('B', 'D') AND __op IN ('I', 'A', 'U') AND (fbid, fab, ffil) IS NOT DISTINCT FROM (bid, abalance, filler)))`, false)
}

// mergeBy times one MERGE INTO the replica USING changes (one row per key:
// __op and the row), then, with purge, the DELETE of the log rows.
func mergeBy(ctx context.Context, url, changes string, purge bool) (result, error) {
	t0 := time.Now()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return result{}, err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `
MERGE INTO replica AS t
USING `+changes+` AS n
ON t.aid = n.aid
WHEN MATCHED AND n.__op IN ('D', 'B') THEN DELETE
WHEN MATCHED THEN UPDATE SET bid = n.bid, abalance = n.abalance, filler = n.filler
WHEN NOT MATCHED AND n.__op IN ('I', 'A', 'U') THEN INSERT (aid, bid, abalance, filler) VALUES (n.aid, n.bid, n.abalance, n.filler)`); err != nil {
		return result{}, err
	}
	r := result{Seconds: time.Since(t0).Seconds()}
	if purge {
		t1 := time.Now()
		if _, err := c.Exec(ctx, `DELETE FROM sluice.log_pgbench_accounts`); err != nil {
			return result{}, err
		}
		r.PurgeSeconds = time.Since(t1).Seconds()
	}
	return r, nil
}
