// Command backfill measures `sluice backfill` throughput and peak memory
// against the database's own bulk copy, and prints the comparison:
//
//   - PostgreSQL → PostgreSQL (another database on the same server):
//     sluice backfill into an append target (the table the baseline
//     writes, with its primary key), a new merge target and a merge
//     target that already has a row, against the pipeline a user
//     writes: psql -c "\copy (SELECT …) TO STDOUT" | psql -c "\copy items
//     FROM STDIN" (two psql processes, buffered). Targets are checked equal
//     to the source in every column (count and md5 of every row's text in
//     key order). For the merge into a target with rows it prints the
//     time of the first and the last chunk (linear: the same).
//   - SQLite → PostgreSQL: sluice backfill (append) against each side
//     alone — the sqlite3 CLI writing the table as CSV to /dev/null, and
//     psql \copy loading that CSV — the ratio's base is the faster one.
//     The target is checked equal to the CSV loaded by psql.
//   - SQLite → SQLite, another file and the same file (sqlite.go): sluice
//     backfill (append) against INSERT INTO … SELECT in one transaction
//     (after ATTACH for another file) on the same engine and in the C
//     library (python3's sqlite3); every column hashed.
//   - PostgreSQL → SQLite (pgsqlite.go): sluice backfill (append) against
//     each side alone — psql \copy of the table to a CSV file, and the
//     sqlite3 CLI's .import of it — the ratio's base is the faster one.
//
// -only selects paths (pg, sqlitepg, sqlite, pgsqlite).
//
// Contenders alternate over -rounds rounds (order reversed every other
// round); each prints median (min–max) rows/s, peak RSS and the load
// average, and the run ends with one tab-separated line per goal for a
// collector: SUMMARY, path, ratio median, min, max, baseline, peak RSS
// (MB) of sluice.
//
// Usage:
//
//	go run ./bench/backfill -quick                                           # 300,000 rows each, ~2 minutes on 2 cores
//	go run ./bench/backfill -pg postgres://postgres@127.0.0.1:5432/postgres  # 1,000,000 rows each
//	go run ./bench/backfill -pg '' -sqlite-rows 1000000                      # SQLite only
//
// -pg names a server (a maintenance database URL; default $SLUICE_TEST_PG)
// on which the program creates and drops its own databases. Each contender
// runs in a child process (this program re-executed), so peak RSS
// (getrusage ru_maxrss of the child) is the contender's alone.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/sluicedata/sluice/bench/internal/machine"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
	_ "github.com/sluicedata/sluice/sources/postgres"
)

var (
	pgURL        = flag.String("pg", os.Getenv("SLUICE_TEST_PG"), "PostgreSQL server URL (maintenance database); '' skips PostgreSQL")
	rows         = flag.Int("rows", 1_000_000, "rows in the PostgreSQL source table; 0 skips PostgreSQL → PostgreSQL")
	sqliteRows   = flag.Int("sqlite-rows", 1_000_000, "rows in the SQLite source table; 0 skips SQLite")
	sqlitePGRows = flag.Int("sqlite-pg-rows", 1_000_000, "rows of SQLite → PostgreSQL; 0 skips it")
	chunk        = flag.Int("chunk", 0, "backfill chunk size (0: the engine's default)")
	rounds       = flag.Int("rounds", 3, "rounds of alternating contenders")
	quick        = flag.Bool("quick", false, "300,000 rows for every path (rows flags given explicitly win)")
	mode         = flag.String("mode", "", "internal: run one contender")
	src          = flag.String("src", "", "internal: source connection")
	dst          = flag.String("dst", "", "internal: target connection")
	cpuprofile   = flag.String("cpuprofile", "", "write each contender's CPU profile to this path + \".<contender>\"")
	table        = flag.String("table", "items", "internal: target table")
	only         = flag.String("only", "", "run only these paths (comma-separated: pg, sqlitepg, sqlite, pgsqlite); '' runs all")
)

type result struct {
	Seconds      float64 `json:"seconds"`
	Rows         int64   `json:"rows"`
	Chunks       int     `json:"chunks,omitempty"`
	FirstChunkMS float64 `json:"first_chunk_ms,omitempty"` // time of the first full chunk
	LastChunkMS  float64 `json:"last_chunk_ms,omitempty"`  // and of the last
}

// summaries collects the goal rows printed at the end.
var summaries []summary

func main() {
	flag.Parse()
	if *quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]*int{"rows": rows, "sqlite-rows": sqliteRows, "sqlite-pg-rows": sqlitePGRows} {
			if !set[name] {
				*v = 300_000
			}
		}
	}
	ctx := context.Background()
	var err error
	if *mode != "" {
		if *cpuprofile != "" {
			f, err := os.Create(*cpuprofile)
			if err == nil {
				err = pprof.StartCPUProfile(f)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			defer pprof.StopCPUProfile()
		}
		var r result
		if r, err = contender(ctx, *mode, *src, *dst); err == nil {
			err = json.NewEncoder(os.Stdout).Encode(r)
		}
	} else {
		err = parent(ctx)
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func parent(ctx context.Context) error {
	fmt.Printf("load average %s; %d CPUs\n", machine.LoadAvg(), runtime.NumCPU())
	if *pgURL != "" && *rows > 0 && runs("pg") {
		if err := benchPG(ctx); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
	}
	if *pgURL != "" && *sqlitePGRows > 0 && runs("sqlitepg") {
		if err := benchSQLitePG(ctx); err != nil {
			return fmt.Errorf("sqlite → postgres: %w", err)
		}
	}
	if *sqliteRows > 0 && runs("sqlite") {
		sums, err := benchSQLite(ctx)
		if err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
		summaries = append(summaries, sums...)
	}
	if *pgURL != "" && *rows > 0 && runs("pgsqlite") {
		sums, err := benchPGSQLite(ctx)
		if err != nil {
			return fmt.Errorf("postgres → sqlite: %w", err)
		}
		summaries = append(summaries, sums...)
	}
	fmt.Printf("\nload average at the end %s\n", machine.LoadAvg())
	for _, s := range summaries {
		s.print()
	}
	return nil
}

// child runs one contender in a child process.
func child(m, s, d string) (result, int64, error) {
	args := []string{"-mode", m, "-src", s, "-dst", d, "-chunk", fmt.Sprint(*chunk), "-rows", fmt.Sprint(*rows), "-sqlite-pg-rows", fmt.Sprint(*sqlitePGRows)}
	if *cpuprofile != "" {
		args = append(args, "-cpuprofile", *cpuprofile+"."+m)
	}
	// A child's ru_maxrss starts from this process's RSS (the pages it
	// shares until exec): keep it small.
	debug.FreeOSMemory()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		return result{}, 0, fmt.Errorf("%s: %w", m, err)
	}
	var r result
	if err := json.Unmarshal(outb, &r); err != nil {
		return result{}, 0, fmt.Errorf("%s: child output %q: %w", m, outb, err)
	}
	return r, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss, nil
}

func contender(ctx context.Context, m, s, d string) (result, error) {
	t0 := time.Now()
	var n int64
	var err error
	var clock chunkClock
	switch m {
	case "psql-pipe":
		n, err = psqlPipe(ctx, s, d)
	case "sqlite-dump":
		n, err = sqliteDump(ctx, s)
	case "pg-load":
		n, err = psqlLoad(ctx, s, d)
	case "pg-sluice", "sqlite-sluice", "sqlite-pg-sluice", "sqlite-sluice-same", "pgsq-sluice":
		n, err = sluiceBackfill(ctx, s, d, "append", &clock)
	case "pg-sluice-merge", "pg-sluice-merge-rows", "pg-sluice-merge-overlap":
		n, err = sluiceBackfill(ctx, s, d, "merge", &clock)
	case "sqlite-hand", "sqlite-hand-same":
		n, err = sqliteHandCopy(ctx, s, d, *table, m == "sqlite-hand-same")
	default:
		err = fmt.Errorf("unknown mode %q", m)
	}
	r := result{Seconds: time.Since(t0).Seconds(), Rows: n, Chunks: len(clock.times)}
	r.FirstChunkMS, r.LastChunkMS = clock.firstLast()
	return r, err
}

// sluiceBackfill backfills job "bench" (stream items_s → table items in d).
func sluiceBackfill(ctx context.Context, s, d, sinkMode string, clock *chunkClock) (int64, error) {
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: s}
	defer r.Close()
	keys := ""
	if sinkMode == "merge" {
		keys = "\n  keys: [id]"
	}
	job, err := dsl.ParseJob("bench.yaml", []byte("source: items_s\nsink:\n  table: "+*table+"\n  mode: "+sinkMode+keys+"\n  connection: '"+d+"'\n"))
	if err != nil {
		return 0, err
	}
	prep, err := r.Plan(ctx, job)
	if err != nil {
		return 0, err
	}
	res, err := r.Backfill(ctx, prep, runner.BackfillOptions{Chunk: *chunk, Progress: func(_ context.Context, p runner.BackfillProgress) {
		if p.Phase == "start" || p.Phase == "copy" {
			clock.tick() // after each full chunk
		}
	}})
	if err != nil {
		return 0, err
	}
	return res.Rows, nil
}

// exec runs statements of sluice's dialect on conn.
func execSluice(ctx context.Context, conn, text string) error {
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler)}
	defer r.Close()
	return r.ExecScript(ctx, conn, "setup.sql", text, nil)
}

const tracking = `ALTER TABLE items SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM items_s ON TABLE items WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');`

func randName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func withDB(u, db string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	p.Path = "/" + db
	return p.String(), nil
}

const pgDDL = `CREATE TABLE items (id bigint PRIMARY KEY, name text, amount numeric(12,2), at timestamptz, note text)`

// runs reports whether -only selects path.
func runs(path string) bool {
	if *only == "" {
		return true
	}
	for _, p := range strings.Split(*only, ",") {
		if strings.TrimSpace(p) == path {
			return true
		}
	}
	return false
}
