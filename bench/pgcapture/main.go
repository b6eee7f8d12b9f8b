// Command pgcapture measures what sluice's change capture costs the
// writers of a PostgreSQL table: pgbench's TPC-B-like workload on a
// tracked and an untracked pgbench_accounts under the same conditions,
// and a bulk UPDATE of many rows on each, and prints the ratios.
//
//	go run ./bench/pgcapture                           # scale 10, -c 4 -j 2 -T 30, two rounds; 100,000-row UPDATE ×3
//	go run ./bench/pgcapture -seconds 5 -rounds 1      # a quick run
//	go run ./bench/pgcapture -pg postgres://…          # on an existing server
//	go run ./bench/pgcapture -single 0                 # without the one-row UPDATE runs
//
// Without -pg it starts a throw-away cluster (initdb/pg_ctl, as the
// postgres OS user when run as root) on a free port with the settings in
// clusterSettings and removes it at the end.
//
// Two databases are initialized alike (pgbench -i -s <scale>); in one,
// change tracking is enabled on pgbench_accounts and a STANDARD stream is
// created (so the capture triggers write the change log, which nothing
// consumes during the measurement). The pgbench runs alternate between
// the two databases (untracked, tracked, untracked, tracked, …), each
// after a CHECKPOINT. The bulk UPDATE (abalance + 1 on the first -bulk
// accounts, one statement) alternates the same way after a VACUUM of the
// table; its median time is reported.
//
// The one-row UPDATEs measure the capture's cost per statement with less
// noise than the TPC-B-like mix: one client (-c 1, -M prepared) runs
// only "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid =
// :random", alternating between the databases like the pgbench runs; the
// median time per statement (1/TPS, µs) of each and their difference are
// reported.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"github.com/sluicedata/sluice/bench/internal/pgcluster"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
	_ "github.com/sluicedata/sluice/sources/postgres"
)

// clusterSettings are the server settings of the throw-away cluster: a
// stock wal_level, no fsync (the machine's disk is not what is measured;
// commits are cheap, so the capture's share of the work shows more), and
// shared buffers holding the working set.
var clusterSettings = []string{"fsync=off", "shared_buffers=1GB", "max_wal_size=16GB", "checkpoint_timeout=1h"}

var (
	pgURL   = flag.String("pg", "", "server URL; default: a throw-away cluster")
	scale   = flag.Int("scale", 10, "pgbench scale")
	clients = flag.Int("clients", 4, "pgbench clients (-c)")
	threads = flag.Int("threads", 2, "pgbench threads (-j)")
	seconds = flag.Int("seconds", 30, "duration of each pgbench run (-T)")
	rounds  = flag.Int("rounds", 2, "pgbench runs per database, alternating")
	bulk    = flag.Int("bulk", 100_000, "rows of the bulk UPDATE")
	repeat  = flag.Int("repeat", 3, "bulk UPDATEs per database, alternating (median reported)")
	single  = flag.Int("single", 8, "duration of each one-row UPDATE run, seconds (0: none); -rounds runs per database")
)

// singleScript is the pgbench script of the one-row UPDATE runs.
const singleScript = `\set aid random(1, 100000 * :scale)
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
`

func main() {
	flag.Parse()
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "pgcapture:", err)
		os.Exit(1)
	}
}

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

func run(ctx context.Context) (err error) {
	pgbench, err := pgcluster.PgbenchPath()
	if err != nil {
		return err
	}
	base, where := *pgURL, *pgURL
	if base == "" {
		var stop func()
		base, stop, err = pgcluster.Start(ctx, clusterSettings)
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
	var version string
	if err := admin.QueryRow(ctx, `SELECT current_setting('server_version')`).Scan(&version); err != nil {
		return err
	}
	fmt.Printf("server: PostgreSQL %s, %s\n", version, where)
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	prefix := "sluice_bench_" + hex.EncodeToString(rb[:]) + "_"
	names := []string{prefix + "plain", prefix + "tracked"}
	label := []string{"untracked", "tracked"}
	for _, n := range names {
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{n}.Sanitize()); err != nil {
			return err
		}
		defer func() {
			if _, e := admin.Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)"); e != nil && err == nil {
				err = e
			}
		}()
		if out, err := exec.CommandContext(ctx, pgbench, "-i", "-s", strconv.Itoa(*scale), "-q", pgcluster.WithDB(base, n)).CombinedOutput(); err != nil {
			return fmt.Errorf("pgbench -i: %v\n%s", err, out)
		}
	}
	if err := enableCapture(ctx, pgcluster.WithDB(base, names[1])); err != nil {
		return err
	}
	fmt.Printf("two databases initialized with pgbench -i -s %d; change tracking and a STANDARD stream on %s's pgbench_accounts\n\n", *scale, label[1])

	// pgbench TPS, alternating.
	tps := [2][]float64{}
	for r := range *rounds {
		for i, n := range names {
			v, err := pgbenchTPS(ctx, admin, pgbench, "-b", "tpcb-like", "-c", strconv.Itoa(*clients), "-j", strconv.Itoa(*threads), "-T", strconv.Itoa(*seconds), pgcluster.WithDB(base, n))
			if err != nil {
				return err
			}
			tps[i] = append(tps[i], v)
			fmt.Printf("round %d %-9s pgbench tps %9.1f\n", r+1, label[i], v)
		}
	}

	// One-row UPDATEs, one client, alternating.
	singleUS := [2][]float64{}
	if *single > 0 {
		f, err := os.CreateTemp("", "sluice-pgcapture-*.sql")
		if err != nil {
			return err
		}
		defer os.Remove(f.Name())
		if _, err := f.WriteString(singleScript); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := os.Chmod(f.Name(), 0o644); err != nil { // pgbench may run as another user
			return err
		}
		for r := range *rounds {
			for i, n := range names {
				v, err := pgbenchTPS(ctx, admin, pgbench, "-s", strconv.Itoa(*scale), "-c", "1", "-M", "prepared", "-f", f.Name(), "-T", strconv.Itoa(*single), pgcluster.WithDB(base, n))
				if err != nil {
					return err
				}
				singleUS[i] = append(singleUS[i], 1e6/v)
				fmt.Printf("round %d %-9s one-row UPDATE %7.1f µs\n", r+1, label[i], 1e6/v)
			}
		}
	}

	// Bulk UPDATE, alternating.
	conns := make([]*pgx.Conn, 2)
	for i, n := range names {
		if conns[i], err = pgx.Connect(ctx, pgcluster.WithDB(base, n)); err != nil {
			return err
		}
		defer conns[i].Close(ctx)
	}
	bulkT := [2][]float64{}
	for r := range *repeat {
		for i, c := range conns {
			if _, err := c.Exec(ctx, `VACUUM pgbench_accounts`); err != nil {
				return err
			}
			if _, err := admin.Exec(ctx, `CHECKPOINT`); err != nil {
				return err
			}
			t0 := time.Now()
			tag, err := c.Exec(ctx, `UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid <= $1`, *bulk)
			if err != nil {
				return err
			}
			d := time.Since(t0).Seconds()
			if tag.RowsAffected() != int64(*bulk) {
				return fmt.Errorf("bulk UPDATE touched %d rows, want %d", tag.RowsAffected(), *bulk)
			}
			bulkT[i] = append(bulkT[i], d)
			fmt.Printf("round %d %-9s UPDATE of %d rows: %.3fs\n", r+1, label[i], *bulk, d)
		}
	}
	// The capture wrote what it should: 2 images per updated row.
	var logged int64
	if err := conns[1].QueryRow(ctx, `SELECT count(*) FROM sluice.log_pgbench_accounts WHERE __op IN ('A', 'U')`).Scan(&logged); err != nil {
		return err
	}

	fmt.Println()
	fmt.Printf("%-44s %12s %12s %8s\n", "", label[0], label[1], "ratio")
	for r := range *rounds {
		fmt.Printf("%-44s %12.1f %12.1f %7.2fx\n", fmt.Sprintf("pgbench TPS, round %d", r+1), tps[0][r], tps[1][r], tps[1][r]/tps[0][r])
	}
	m0, m1 := mean(tps[0]), mean(tps[1])
	fmt.Printf("%-44s %12.1f %12.1f %7.2fx   (goal ≥ 0.90x)\n", "pgbench TPS, mean", m0, m1, m1/m0)
	if *single > 0 {
		s0, s1 := median(singleUS[0]), median(singleUS[1])
		fmt.Printf("%-44s %10.1fµs %10.1fµs %7.2fx   (capture: %+.1f µs per statement)\n", fmt.Sprintf("one-row UPDATE, 1 client, median of %d", *rounds), s0, s1, s1/s0, s1-s0)
	}
	b0, b1 := median(bulkT[0]), median(bulkT[1])
	fmt.Printf("%-44s %11.3fs %11.3fs %7.2fx   (time: tracked / untracked)\n", fmt.Sprintf("UPDATE of %d rows, median of %d", *bulk, *repeat), b0, b1, b1/b0)
	fmt.Printf("\npgbench: -b tpcb-like -c %d -j %d -T %d at scale %d; the change log holds %d update images\n", *clients, *threads, *seconds, *scale, logged)
	return nil
}

// pgbenchTPS runs a CHECKPOINT through admin, then pgbench -n with args,
// and returns the TPS it reports (without initial connection time).
func pgbenchTPS(ctx context.Context, admin *pgx.Conn, pgbench string, args ...string) (float64, error) {
	if _, err := admin.Exec(ctx, `CHECKPOINT`); err != nil {
		return 0, err
	}
	out, err := exec.CommandContext(ctx, pgbench, append([]string{"-n"}, args...)...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench: %v\n%s", err, out)
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no tps in pgbench output:\n%s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

func enableCapture(ctx context.Context, url string) error {
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: url}
	defer r.Close()
	b, err := r.Backend(ctx, "")
	if err != nil {
		return err
	}
	stmts, err := dsl.ParseStatements("setup.sql", `
ALTER TABLE pgbench_accounts SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM accounts_stream ON TABLE pgbench_accounts WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
`)
	if err != nil {
		return err
	}
	for _, st := range stmts {
		if _, err := b.(runner.Executor).Exec(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
