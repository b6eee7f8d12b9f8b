// Command sqlitemerge measures sluice consuming a STANDARD table stream
// into a merge sink on embedded SQLite, side by side with a hand-written
// SQLite statement that does the same net-change merge, and prints changes
// per second, peak RSS and the ratio.
//
//	go run ./bench/sqlitemerge                 # 1,000,000 changes over 200,000 keys
//	go run ./bench/sqlitemerge -changes 100000 -keys 20000
//
// Each contender runs in its own child process (this program re-executed)
// on its own copy of the same prepared database, so peak RSS (getrusage
// ru_maxrss of the child) is the contender's alone.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
	_ "github.com/sluicedata/sluice/sources/sqlite"
)

var (
	changes = flag.Int("changes", 1_000_000, "pending changes to consume")
	keys    = flag.Int("keys", 200_000, "distinct primary keys")
	batch   = flag.Int("batch", runner.DefaultBatchSize, "batch size of the through-sluice run")
	mode    = flag.String("mode", "", "internal: run one contender (sluice, cross, hand) on -db")
	db      = flag.String("db", "", "internal: database file")
)

type result struct {
	Seconds float64 `json:"seconds"`
	Rows    int64   `json:"rows"`
}

func main() {
	flag.Parse()
	ctx := context.Background()
	if *mode != "" {
		r, err := contender(ctx, *mode, *db)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	if err := parent(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
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
	fmt.Printf("prepared %d pending changes over %d keys in %s\n", *changes, *keys, time.Since(t0).Round(time.Millisecond))
	type row struct {
		name string
		res  result
		rss  int64
	}
	var rows []row
	for _, m := range []string{"hand", "sluice", "cross"} {
		path := filepath.Join(dir, m+".db")
		if err := copyFile(base, path); err != nil {
			return err
		}
		res, rss, err := child(m, path)
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		rows = append(rows, row{m, res, rss})
	}
	if err := sameTargets(ctx, filepath.Join(dir, "hand.db"), filepath.Join(dir, "sluice.db"), filepath.Join(dir, "cross.db")+".sink"); err != nil {
		return err
	}
	hand := float64(*changes) / rows[0].res.Seconds
	fmt.Printf("%-44s %12s %12s %10s %8s\n", "contender", "seconds", "changes/s", "peak RSS", "ratio")
	names := map[string]string{
		"hand":   "hand-written SQLite net-change merge",
		"sluice": "sluice run, same file (pushdown)",
		"cross":  fmt.Sprintf("sluice run, other file (batches of %d)", *batch),
	}
	for _, r := range rows {
		cps := float64(*changes) / r.res.Seconds
		fmt.Printf("%-44s %12.2f %12.0f %8dMB %7.2fx\n", names[r.name], r.res.Seconds, cps, r.rss/1024, cps/hand)
	}
	fmt.Println("targets identical: yes (each equals the source table)")
	return nil
}

// child runs one contender in a child process and returns its result and
// peak RSS in KiB.
func child(m, path string) (result, int64, error) {
	cmd := exec.Command(os.Args[0], "-mode", m, "-db", path, "-batch", fmt.Sprint(*batch))
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
	switch m {
	case "hand":
		d, err := open(path)
		if err != nil {
			return result{}, err
		}
		defer d.Close()
		if rows, err = handMerge(ctx, d); err != nil {
			return result{}, err
		}
	case "sluice", "cross":
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
		r := &runner.Runner{Log: log, Conn: "sqlite:" + path, BatchSize: *batch}
		defer r.Close()
		res, err := r.RunJob(ctx, job)
		if err != nil {
			return result{}, err
		}
		for _, v := range res.Stats.Read {
			rows += v
		}
	}
	return result{Seconds: time.Since(t0).Seconds(), Rows: rows}, nil
}

// handMerge is what a careful engineer writes by hand against the change
// log (layout in sources/sqlite's package doc): in one transaction, take
// the last change per key after the stream's offset, delete the keys whose
// last change is a delete, upsert the others' final images, move the
// offset and purge the log.
func handMerge(ctx context.Context, d *sql.DB) (int64, error) {
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
	var n int64
	for _, q := range []string{
		`CREATE TEMP TABLE last AS SELECT l.op, l.o_id, l.n_id, l.n_name, l.n_amount, l.n_status
		   FROM sluice_changes_src AS l
		   JOIN (SELECT max(seq) AS s FROM sluice_changes_src WHERE seq <= ?1 GROUP BY coalesce(n_id, o_id)) AS g ON l.seq = g.s`,
		`DELETE FROM replica WHERE id IN (SELECT o_id FROM last WHERE op IN ('D', 'KD'))`,
		`INSERT INTO replica (id, name, amount, status)
		   SELECT n_id, n_name, n_amount, n_status FROM last WHERE op NOT IN ('D', 'KD')
		   ON CONFLICT (id) DO UPDATE SET name = excluded.name, amount = excluded.amount, status = excluded.status`,
		`UPDATE sluice_streams SET "offset" = json_object('positions', json_object('', CAST(?1 AS TEXT))) WHERE name = 'src_stream'`,
		`DELETE FROM sluice_changes_src WHERE seq <= ?1`,
	} {
		if _, err := conn.ExecContext(ctx, q, to); err != nil {
			conn.ExecContext(ctx, "ROLLBACK")
			return 0, fmt.Errorf("%s: %w", q, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, err
	}
	n = to
	return n, nil
}

// sameTargets checks that every contender's replica equals the source.
func sameTargets(ctx context.Context, hand, push, cross string) error {
	var want string
	for i, p := range []string{hand, push, cross} {
		d, err := open(p)
		if err != nil {
			return err
		}
		var sum string
		err = d.QueryRowContext(ctx, `SELECT count(*) || ':' || total(id) || ':' || group_concat(amount || status, ',') FROM (SELECT * FROM replica ORDER BY id)`).Scan(&sum)
		if err == nil && i == 0 {
			var src string
			err = d.QueryRowContext(ctx, `SELECT count(*) || ':' || total(id) || ':' || group_concat(amount || status, ',') FROM (SELECT * FROM src ORDER BY id)`).Scan(&src)
			if err == nil && src != sum {
				err = fmt.Errorf("hand-written merge: replica differs from the source table")
			}
			want = sum
		}
		d.Close()
		if err != nil {
			return err
		}
		if sum != want {
			return fmt.Errorf("%s: replica differs from the hand-written merge's", p)
		}
	}
	return nil
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
