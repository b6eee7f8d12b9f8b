// Command sqlitemerge measures sluice consuming a STANDARD table stream
// into a merge sink on embedded SQLite, side by side with hand-written
// SQLite statements that do the same merge, and prints changes per second,
// peak RSS and the ratios.
//
//	go run ./bench/sqlitemerge                 # 1,000,000 changes over 200,000 keys, 3 rounds
//	go run ./bench/sqlitemerge -quick          # 300,000 changes over 60,000 keys (about a minute)
//	go run ./bench/sqlitemerge -changes 100000 -keys 20000 -rounds 5
//	go run ./bench/sqlitemerge -quick -only push,cross -cpuprofile /tmp/p   # CPU profiles /tmp/p.push, /tmp/p.cross
//
// The contenders, run in turn (A B C … A B C …) for -rounds rounds:
//
//   - hand last: the last change per key after the offset (one GROUP BY
//     max(seq) over the change log), delete / upsert, move the offset,
//     purge the log — one transaction; what a careful engineer writes for
//     a replica;
//   - hand STANDARD: the same with the net-change semantics sluice
//     implements (first and last change per key: an insert then a delete
//     is nothing, an update that changed nothing is nothing), as
//     bench/pgapply's hand-written STANDARD MERGE;
//   - sluice same file: the job pushed down, at the default commit step
//     (runner.DefaultCommitStep) or -step;
//   - sluice same file, one transaction: the same with --commit-step -1
//     (what the steps cost);
//   - sluice other file: the target in another file, rows through sluice
//     in batches of -batch;
//   - application writer: the pushed-down run again while an application
//     (python3's sqlite3 module, default 5 s busy timeout; python3 is
//     required) inserts a row into a table of the same file every 20 ms;
//     it reports the longest time one of its writes took;
//   - application writer alone: the same application for 3 s with nothing
//     else on the file: the longest write the machine's load alone causes.
//
// Each contender runs in its own child process (this program re-executed)
// on its own copy of the same prepared database, so peak RSS (getrusage
// ru_maxrss of the child) is its alone. After every run the target is
// checked equal to the source table in every column (a SHA-256 over
// quote() of every column of every row in key order). The table shows the
// median and the fastest and slowest round of each contender, its ratio to
// each hand-written statement (median of the per-round ratios, with min and
// max), and the load average before and after; SUMMARY lines at the end
// (tab-separated: path, ratio median, min, max, baseline, peak RSS MB) are
// for a collector.
package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluicedata/sluice/bench/internal/machine"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
	_ "github.com/sluicedata/sluice/sources/sqlite"
)

var (
	changes = flag.Int("changes", 1_000_000, "pending changes to consume")
	keys    = flag.Int("keys", 200_000, "distinct primary keys")
	rounds  = flag.Int("rounds", 3, "rounds of the contenders, run in turn")
	quick   = flag.Bool("quick", false, "300,000 changes over 60,000 keys (unless -changes/-keys are given)")
	batch   = flag.Int("batch", runner.DefaultBatchSize, "batch size of the through-sluice run")
	step    = flag.Duration("step", 0, "commit step of the pushed-down runs (sluice run --commit-step); 0: the default")
	only    = flag.String("only", "", "comma-separated contenders to run (default all): hand,std,push,push1,cross,app,app0")
	mode    = flag.String("mode", "", "internal: run one contender on -db")
	db      = flag.String("db", "", "internal: database file")
	keep    = flag.String("keep", "", "also copy the prepared database to this file (for profiling)")
	profile = flag.String("cpuprofile", "", "write each contender's CPU profile to this path + \".<contender>\" (the last round's)")
)

type result struct {
	Seconds float64 `json:"seconds"`
	Rows    int64   `json:"rows"`
	// MaxWaitMS is the application writer's longest write (contender app).
	MaxWaitMS float64 `json:"max_wait_ms,omitempty"`
	Writes    int     `json:"writes,omitempty"`
	Failed    int     `json:"failed,omitempty"`
}

type contenderInfo struct{ key, name string }

var contenders = []contenderInfo{
	{"hand", "hand-written, last change per key"},
	{"std", "hand-written STANDARD (first and last change)"},
	{"push", "sluice run, same file (pushdown)"},
	{"push1", "same file, one transaction (commit step -1)"},
	{"cross", "sluice run, other file"},
	{"app", "sluice same file + application writer"},
	{"app0", "application writer alone for 3 s (noise floor)"},
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
		r, err := contender(ctx, *mode, *db)
		pprof.StopCPUProfile()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	if *quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["changes"] {
			*changes = 300_000
		}
		if !set["keys"] {
			*keys = 60_000
		}
	}
	if err := parent(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type run struct {
	res result
	rss int64 // KiB
}

func parent(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	base := filepath.Join(dir, "base.db")
	t0 := time.Now()
	if err := prepare(ctx, base); err != nil {
		return err
	}
	if *keep != "" {
		if err := copyFile(base, *keep); err != nil {
			return err
		}
	}
	want, err := tableHash(ctx, base, "src")
	if err != nil {
		return err
	}
	fmt.Printf("prepared %d pending changes over %d keys in %s\n", *changes, *keys, time.Since(t0).Round(time.Millisecond))
	load0 := machine.LoadAvg()
	var cs []contenderInfo
	for _, c := range contenders {
		if *only == "" || slices.Contains(strings.Split(*only, ","), c.key) {
			cs = append(cs, c)
		}
	}
	runs := map[string][]run{}
	for r := 0; r < max(*rounds, 1); r++ {
		for _, c := range cs {
			path := filepath.Join(dir, c.key+".db")
			if err := copyFile(base, path); err != nil {
				return err
			}
			res, rss, err := child(c.key, path)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, c.name, err)
			}
			target := path
			if c.key == "cross" {
				target = path + ".sink"
			}
			got, err := tableHash(ctx, target, "replica")
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, c.name, err)
			}
			if c.key != "app0" && got != want {
				return fmt.Errorf("round %d, %s: the target differs from the source table (hash %s, source %s)", r+1, c.name, got, want)
			}
			runs[c.key] = append(runs[c.key], run{res, rss})
			for _, f := range []string{path, path + "-wal", path + "-shm", path + ".sink", path + ".sink-wal", path + ".sink-shm"} {
				os.Remove(f)
			}
		}
		fmt.Fprintf(os.Stderr, "round %d done, load %s\n", r+1, machine.LoadAvg())
	}
	load1 := machine.LoadAvg()
	fmt.Printf("\n%s, %d changes over %d keys, %d rounds, load average before %s, after %s\n",
		time.Now().UTC().Format("2006-01-02 15:04Z"), *changes, *keys, max(*rounds, 1), load0, load1)
	fmt.Printf("%-48s %22s %10s %9s %20s %20s\n", "contender", "seconds median (min–max)", "changes/s", "peak RSS", "× hand last", "× hand STANDARD")
	for _, c := range cs {
		rs := runs[c.key]
		secs := seconds(rs)
		med := median(secs)
		line := fmt.Sprintf("%-48s %8.2f (%5.2f–%5.2f) %10.0f %7dMB %20s %20s", c.name, med, slices.Min(secs), slices.Max(secs),
			float64(*changes)/med, maxRSS(rs)/1024, ratioText(runs["hand"], rs), ratioText(runs["std"], rs))
		if c.key == "app" || c.key == "app0" {
			w := waits(rs)
			var each []string
			for _, r := range rs {
				each = append(each, fmt.Sprintf("%.0f ms of %d writes", r.res.MaxWaitMS, r.res.Writes))
			}
			line += fmt.Sprintf("   longest application write %.0f ms median (rounds: %s), %d failed", median(w), strings.Join(each, ", "), failed(rs))
		}
		if c.key == "app0" {
			line = fmt.Sprintf("%-48s %22s %10s %7dMB %20s %20s", c.name, "-", "-", maxRSS(rs)/1024, "-", "-") + line[strings.Index(line, "   longest"):]
		}
		fmt.Println(line)
	}
	fmt.Println("targets identical: yes (every round, every sluice and hand-written contender: SHA-256 of all columns equals the source table's)")
	summary := func(path, ck, bk, bname string) {
		if len(runs[ck]) == 0 || len(runs[bk]) == 0 {
			return
		}
		r := ratios(runs[bk], runs[ck])
		fmt.Printf("SUMMARY\t%s\t%.2f\t%.2f\t%.2f\t%s\t%d\n", path, median(r), slices.Min(r), slices.Max(r), bname, maxRSS(runs[ck])/1024)
	}
	summary("SQLite merge pushdown (same file)", "push", "hand", "hand-written last-change merge")
	summary("SQLite merge pushdown (same file)", "push", "std", "hand-written STANDARD merge")
	summary("SQLite merge pushdown (same file, one transaction)", "push1", "hand", "hand-written last-change merge")
	summary("SQLite merge pushdown (same file, one transaction)", "push1", "std", "hand-written STANDARD merge")
	summary("SQLite merge into another file", "cross", "hand", "hand-written last-change merge")
	summary("SQLite merge into another file", "cross", "std", "hand-written STANDARD merge")
	if rs := runs["app"]; len(rs) > 0 {
		w := waits(rs)
		fmt.Printf("SUMMARY\t%s\t%.0f\t%.0f\t%.0f\t%s\t%d\n", "SQLite merge with an application writing the same file", median(w), slices.Min(w), slices.Max(w), "max app write wait ms", maxRSS(rs)/1024)
	}
	return nil
}

func seconds(rs []run) []float64 {
	var out []float64
	for _, r := range rs {
		out = append(out, r.res.Seconds)
	}
	return out
}

func waits(rs []run) []float64 {
	var out []float64
	for _, r := range rs {
		out = append(out, r.res.MaxWaitMS)
	}
	return out
}

func failed(rs []run) int {
	n := 0
	for _, r := range rs {
		n += r.res.Failed
	}
	return n
}

func maxRSS(rs []run) int64 {
	var m int64
	for _, r := range rs {
		m = max(m, r.rss)
	}
	return m
}

// ratios are the per-round speed ratios of c to base (base seconds / c seconds).
func ratios(base, c []run) []float64 {
	var out []float64
	for i := range min(len(base), len(c)) {
		out = append(out, base[i].res.Seconds/c[i].res.Seconds)
	}
	return out
}

func ratioText(base, c []run) string {
	r := ratios(base, c)
	if len(r) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", median(r), slices.Min(r), slices.Max(r))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// child runs one contender in a child process and returns its result and
// peak RSS in KiB.
func child(m, path string) (result, int64, error) {
	args := []string{"-mode", m, "-db", path, "-batch", fmt.Sprint(*batch), "-step", step.String()}
	if *profile != "" {
		args = append(args, "-cpuprofile", *profile+"."+m)
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
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return r, ru.Maxrss, nil
}

// tableHash is the row count and a SHA-256 over quote() of every column of
// every row of table, in key order.
func tableHash(ctx context.Context, path, table string) (string, error) {
	d, err := open(path)
	if err != nil {
		return "", err
	}
	defer d.Close()
	rows, err := d.QueryContext(ctx, `SELECT quote(id) || ',' || quote(name) || ',' || quote(amount) || ',' || quote(status) FROM `+table+` ORDER BY id`)
	if err != nil {
		return "", fmt.Errorf("%s of %s: %w", table, path, err)
	}
	defer rows.Close()
	h := sha256.New()
	n := 0
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return "", err
		}
		h.Write([]byte(s))
		h.Write([]byte{'\n'})
		n++
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%s", n, hex.EncodeToString(h.Sum(nil))[:16]), nil
}

func open(path string) (*sql.DB, error) {
	return sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
}

func exec1(ctx context.Context, conn string, text string) error {
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler)}
	defer r.Close()
	return r.ExecScript(ctx, conn, "setup.sql", text, nil)
}

// prepare makes the source table with change tracking, a STANDARD stream,
// the replica target, and the pending changes: one INSERT per key, then
// random UPDATEs, DELETEs and re-INSERTs until *changes changes are logged.
func prepare(ctx context.Context, path string) error {
	if err := exec1(ctx, "sqlite:"+path, `
CREATE TABLE src (id BIGINT, name STRING, amount DECIMAL(12,2), status STRING, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM src_stream ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
CREATE TABLE replica (id BIGINT, name STRING, amount DECIMAL(12,2), status STRING, PRIMARY KEY (id));
`); err != nil {
		return err
	}
	d, err := open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	if _, err := d.ExecContext(ctx, `CREATE TABLE app_events (id INTEGER PRIMARY KEY, at TEXT)`); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	present := make([]bool, *keys)
	n := 0
	for n < *changes {
		tx, err := d.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		ins, _ := tx.PrepareContext(ctx, `INSERT INTO src VALUES (?, ?, ?, ?)`)
		upd, _ := tx.PrepareContext(ctx, `UPDATE src SET amount = ?, status = ? WHERE id = ?`)
		del, _ := tx.PrepareContext(ctx, `DELETE FROM src WHERE id = ?`)
		for i := 0; i < 10000 && n < *changes; i++ {
			var k int
			if n < *keys {
				k = n
			} else {
				k = rng.IntN(*keys)
			}
			amount := fmt.Sprintf("%d.%02d", rng.IntN(100000), rng.IntN(100))
			switch {
			case !present[k]:
				_, err = ins.ExecContext(ctx, k, fmt.Sprintf("name-%d", k), amount, "new")
				present[k] = true
			case rng.IntN(10) < 7:
				_, err = upd.ExecContext(ctx, amount, fmt.Sprintf("s%d", rng.IntN(5)), k)
			default:
				_, err = del.ExecContext(ctx, k)
				present[k] = false
			}
			if err != nil {
				tx.Rollback()
				return err
			}
			n++
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	_, err = d.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

func contender(ctx context.Context, m, path string) (result, error) {
	t0 := time.Now()
	var rows int64
	var app *appWriter
	switch m {
	case "hand", "std":
		d, err := open(path)
		if err != nil {
			return result{}, err
		}
		defer d.Close()
		q := handLast
		if m == "std" {
			q = handStandard
		}
		if rows, err = handMerge(ctx, d, q); err != nil {
			return result{}, err
		}
	case "push", "push1", "cross", "app":
		if m == "app" {
			var err error
			if app, err = startApp(path); err != nil {
				return result{}, err
			}
			t0 = time.Now()
		}
		sink := ""
		if m == "cross" {
			sink = ", connection: 'sqlite:" + path + ".sink'"
		}
		job, err := dsl.ParseJob("bench.yaml", []byte(`
name: bench
source: src_stream
sink: {table: replica, mode: merge, keys: [id]`+sink+`}
`))
		if err != nil {
			return result{}, err
		}
		log := slog.New(slog.DiscardHandler)
		if os.Getenv("SLUICE_LOG") == "debug" {
			log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
		r := &runner.Runner{Log: log, Conn: "sqlite:" + path, BatchSize: *batch, CommitStep: *step}
		if m == "push1" {
			r.CommitStep = -1
		}
		defer r.Close()
		res, err := r.RunJob(ctx, job)
		if err != nil {
			return result{}, err
		}
		for _, v := range res.Stats.Read {
			rows += v
		}
	case "app0":
		var err error
		if app, err = startApp(path); err != nil {
			return result{}, err
		}
		t0 = time.Now()
		time.Sleep(3 * time.Second)
	default:
		return result{}, fmt.Errorf("unknown contender %q", m)
	}
	out := result{Seconds: time.Since(t0).Seconds(), Rows: rows}
	if app != nil {
		w, err := app.stop()
		if err != nil {
			return result{}, err
		}
		out.MaxWaitMS, out.Writes, out.Failed = w.MaxWaitMS, w.Writes, w.Failed
	}
	return out, nil
}

// appScript is the application: python3's sqlite3 module with its default
// busy timeout (5 s), one INSERT and COMMIT every 20 ms into a table of
// the same file until the stop file exists; it prints its longest write.
const appScript = `
import json, os, sqlite3, sys, time
con = sqlite3.connect(sys.argv[1])
stop, ready = sys.argv[2], sys.argv[3]
mx, n, failed = 0.0, 0, 0
while not os.path.exists(stop):
    t = time.monotonic()
    try:
        con.execute("INSERT INTO app_events (at) VALUES (?)", (str(t),))
        con.commit()
    except sqlite3.OperationalError as e:
        failed += 1
        print("application write failed:", e, file=sys.stderr)
        con.rollback()
    mx = max(mx, (time.monotonic() - t) * 1000)
    n += 1
    if n == 1:
        open(ready, "w").close()
    time.sleep(0.02)
print(json.dumps({"max_wait_ms": mx, "writes": n, "failed": failed}))
`

type appWriter struct {
	cmd      *exec.Cmd
	out      strings.Builder
	stopFile string
}

func startApp(path string) (*appWriter, error) {
	a := &appWriter{stopFile: path + ".stop"}
	ready := path + ".ready"
	for _, f := range []string{a.stopFile, ready} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	a.cmd = exec.Command("python3", "-c", appScript, path, a.stopFile, ready)
	a.cmd.Stdout, a.cmd.Stderr = &a.out, os.Stderr
	if err := a.cmd.Start(); err != nil {
		return nil, fmt.Errorf("application writer (python3): %w", err)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(ready); err == nil {
			return a, nil
		}
		if i > 500 {
			return nil, fmt.Errorf("application writer did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (a *appWriter) stop() (result, error) {
	if err := os.WriteFile(a.stopFile, nil, 0o644); err != nil {
		return result{}, err
	}
	if err := a.cmd.Wait(); err != nil {
		return result{}, fmt.Errorf("application writer: %w", err)
	}
	var r result
	if err := json.Unmarshal([]byte(a.out.String()), &r); err != nil {
		return result{}, fmt.Errorf("application writer output %q: %w", a.out.String(), err)
	}
	return r, nil
}

// handLast is what a careful engineer writes by hand against the change
// log (layout in sources/sqlite's package doc) for a replica: the last
// change per key after the stream's offset; delete the keys whose last
// change is a delete, upsert the others' final images.
var handLast = []string{
	`CREATE TEMP TABLE last AS SELECT l.op, l.o_id, l.n_id, l.n_name, l.n_amount, l.n_status
	   FROM sluice_changes_src AS l
	   JOIN (SELECT max(seq) AS s FROM sluice_changes_src WHERE seq <= ?1 GROUP BY coalesce(n_id, o_id)) AS g ON l.seq = g.s`,
	`DELETE FROM replica WHERE id IN (SELECT o_id FROM last WHERE op IN ('D', 'KD'))`,
	`INSERT INTO replica (id, name, amount, status)
	   SELECT n_id, n_name, n_amount, n_status FROM last WHERE op NOT IN ('D', 'KD')
	   ON CONFLICT (id) DO UPDATE SET name = excluded.name, amount = excluded.amount, status = excluded.status`,
}

// handStandard is the STANDARD net change by hand (DESIGN.md, as sluice
// implements it): per key the first and the last change after the offset;
// absent → absent (an insert, then a delete) is nothing; a delete of a key
// present before deletes it; an update whose final image equals the image
// before the first change is nothing; the rest upserts the final image.
var handStandard = []string{
	`CREATE TEMP TABLE net AS SELECT f.op AS fop, l.op AS lop, coalesce(l.n_id, l.o_id) AS id,
	   l.n_name, l.n_amount, l.n_status, f.o_name, f.o_amount, f.o_status
	   FROM (SELECT min(seq) AS s0, max(seq) AS s1 FROM sluice_changes_src WHERE seq <= ?1 GROUP BY coalesce(n_id, o_id)) AS g
	   JOIN sluice_changes_src AS f ON f.seq = g.s0 JOIN sluice_changes_src AS l ON l.seq = g.s1`,
	`DELETE FROM replica WHERE id IN (SELECT id FROM net WHERE lop IN ('D', 'KD') AND fop NOT IN ('I', 'KI'))`,
	`INSERT INTO replica (id, name, amount, status)
	   SELECT id, n_name, n_amount, n_status FROM net
	   WHERE lop NOT IN ('D', 'KD') AND (fop IN ('I', 'KI') OR o_name IS NOT n_name OR o_amount IS NOT n_amount OR o_status IS NOT n_status)
	   ON CONFLICT (id) DO UPDATE SET name = excluded.name, amount = excluded.amount, status = excluded.status`,
}

// handMerge runs the statements q in one transaction, then moves the
// stream's offset and purges the log, as sluice does.
func handMerge(ctx context.Context, d *sql.DB, q []string) (int64, error) {
	conn, err := d.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return 0, err
	}
	var to int64
	if err := conn.QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = 'sluice_changes_src'`).Scan(&to); err != nil {
		return 0, err
	}
	for _, q := range append(slices.Clone(q),
		`UPDATE sluice_streams SET "offset" = json_object('positions', json_object('', CAST(?1 AS TEXT))) WHERE name = 'src_stream'`,
		`DELETE FROM sluice_changes_src WHERE seq <= ?1`,
	) {
		if _, err := conn.ExecContext(ctx, q, to); err != nil {
			conn.ExecContext(ctx, "ROLLBACK")
			return 0, fmt.Errorf("%s: %w", q, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, err
	}
	return to, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		return err
	}
	return out.Close()
}
