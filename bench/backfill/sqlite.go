package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluicedata/sluice/sources/sqlite"
)

// The SQLite paths of the benchmark (issue #18):
//
//   - SQLite → SQLite, another file: sluice backfill (append) against
//     ATTACH + INSERT INTO … SELECT in one transaction on the same engine
//     (modernc.org/sqlite, as sluice uses), and against the same
//     statements in Python's sqlite3 module (the C SQLite library);
//   - SQLite → SQLite, the same file: sluice backfill into a new table of
//     the source's file against INSERT INTO … SELECT on the same engine
//     and in the C library.
//
// Baseline targets are created as a user copying the table would: the
// same columns and declared types, no primary key, no CHECK (sluice's
// append target has no key either, and it has its DECIMAL CHECK: that
// cost is sluice's). The C-library baselines set the target's
// journal_mode = WAL and synchronous = NORMAL, as sluice's files are.
// Every contender gets a fresh target file (same-file contenders a fresh
// copy of the source file); contenders alternate (the order rotates each
// round). Each target is checked equal to the source in every column: a
// SHA-256 of quote() of every column of every row in key order.

const sqliteItemsDDL = `CREATE TABLE items (id BIGINT, name STRING, amount DECIMAL(12,2), at TIMESTAMP, note STRING, PRIMARY KEY (id))`

// handDDL is the baselines' target: the columns and declared types
// sluice's target gets (sinks/sqlite), without key or CHECK.
const handDDL = `(id BIGINT NOT NULL, name TEXT, amount DECIMAL_TEXT(12,2), at TIMESTAMP, note TEXT)`

// pySQLite is the C-library baseline: argv = source, target, table,
// same ("1": the target table is in the source file).
const pySQLite = `
import json, sqlite3, sys, time
src, dst, table, same = sys.argv[1:5]
t0 = time.perf_counter()
c = sqlite3.connect(src, isolation_level=None)
if same == "1":
    c.execute("CREATE TABLE %s %s" % (table, sys.argv[5]))
    target = "main." + table
else:
    c.execute("ATTACH DATABASE ? AS d", (dst,))
    c.execute("PRAGMA d.journal_mode = WAL")
    c.execute("PRAGMA d.synchronous = NORMAL")
    c.execute("CREATE TABLE d.%s %s" % (table, sys.argv[5]))
    target = "d." + table
c.execute("BEGIN")
n = c.execute("INSERT INTO %s SELECT id, name, amount, at, note FROM main.items" % target).rowcount
c.execute("COMMIT")
c.close()
print(json.dumps({"seconds": time.perf_counter() - t0, "rows": n}))
`

type sqlitePath struct {
	name    string // the goal row's name in the SUMMARY
	same    bool
	sluice  string // contender mode of sluice
	base    string // the baseline of the goal ratio
	contend []string
}

var sqliteNames = map[string]string{
	"sqlite-hand":        "ATTACH + INSERT … SELECT, same engine (modernc)",
	"sqlite-py":          "ATTACH + INSERT … SELECT, C library (python3 sqlite3)",
	"sqlite-sluice":      "sluice backfill (append)",
	"sqlite-hand-same":   "INSERT … SELECT, same engine (modernc)",
	"sqlite-py-same":     "INSERT … SELECT, C library (python3 sqlite3)",
	"sqlite-sluice-same": "sluice backfill (append)",
}

// run is one contender's measurement.
type run struct {
	res result
	rss int64   // KiB
	cpu float64 // user + system seconds of the contender's process
}

func benchSQLite(ctx context.Context) ([]summary, error) {
	dir, err := os.MkdirTemp("", "sluice-bench-backfill-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srcPath := filepath.Join(dir, "src.db")
	s := "sqlite:" + srcPath
	t0 := time.Now()
	if err := execSluice(ctx, s, sqliteItemsDDL); err != nil {
		return nil, err
	}
	b, err := sqlite.Open(ctx, s, nil)
	if err != nil {
		return nil, err
	}
	_, err = b.DB().ExecContext(ctx, fmt.Sprintf(`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < %d)
		INSERT INTO items SELECT i, 'name ' || i || ' ✓', printf('%%.2f', (i %% 100000) * 1.25), strftime('%%Y-%%m-%%d %%H:%%M:%%S', 1704067200 + i, 'unixepoch') || '+00:00',
		CASE WHEN i %% 7 = 0 THEN NULL ELSE hex(randomblob(16)) END FROM g`, *sqliteRows))
	b.Close()
	if err != nil {
		return nil, err
	}
	if err := execSluice(ctx, s, tracking); err != nil {
		return nil, err
	}
	if err := checkpointFile(ctx, srcPath); err != nil {
		return nil, err
	}
	want, err := sqliteHash(ctx, srcPath, "items")
	if err != nil {
		return nil, err
	}
	fmt.Printf("prepared %d SQLite rows in %s\n", *sqliteRows, time.Since(t0).Round(time.Millisecond))

	paths := []sqlitePath{
		{name: "SQLite → SQLite, another file", sluice: "sqlite-sluice", base: "sqlite-hand", contend: []string{"sqlite-hand", "sqlite-py", "sqlite-sluice"}},
		{name: "SQLite → SQLite, same file", same: true, sluice: "sqlite-sluice-same", base: "sqlite-hand-same", contend: []string{"sqlite-hand-same", "sqlite-py-same", "sqlite-sluice-same"}},
	}
	var sums []summary
	for _, p := range paths {
		runs := map[string][]run{}
		for round := 0; round < *rounds; round++ {
			order := slices.Clone(p.contend)
			k := round % len(order)
			order = append(order[k:], order[:k]...)
			for _, m := range order {
				src, dst, table := srcPath, filepath.Join(dir, fmt.Sprintf("%s-%d.db", m, round)), "items"
				if p.same {
					// a fresh copy of the source file for each contender
					if err := copyFile(srcPath, dst); err != nil {
						return nil, err
					}
					src, table = dst, "items_copy"
				}
				r, err := sqliteChild(m, src, dst, table, p.same)
				if err != nil {
					return nil, err
				}
				got, err := sqliteHash(ctx, dst, table)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", m, err)
				}
				if got != want {
					return nil, fmt.Errorf("%s round %d: target %s differs from the source (hash of every column %s, want %s)", m, round+1, table, got, want)
				}
				runs[m] = append(runs[m], r)
				for _, f := range []string{dst, dst + "-wal", dst + "-shm"} {
					os.Remove(f)
				}
			}
		}
		sums = append(sums, reportRuns(p.name, p.contend, p.base, p.sluice, runs, sqliteNames))
		if p.base == "sqlite-hand" || p.base == "sqlite-hand-same" {
			// the same ratio against the C library
			py := strings.Replace(p.base, "hand", "py", 1)
			sums = append(sums, ratioSummary(p.name+" (vs C library)", runs[p.sluice], runs[py], sqliteNames[py]))
		}
	}
	return sums, nil
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
		out.Close()
		return err
	}
	return out.Close()
}

// checkpointFile moves the WAL into the database file, so that copying
// the file copies the database.
func checkpointFile(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}

// sqliteHash is the SHA-256 of quote() of every column of every row of
// table, in key order (NULL, text and numbers quoted apart).
func sqliteHash(ctx context.Context, path, table string) (string, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return "", err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT quote(id) || ',' || quote(name) || ',' || quote(amount) || ',' || quote(at) || ',' || quote(note) FROM `+table+` ORDER BY id`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	h := sha256.New()
	n := 0
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		h.Write([]byte(line))
		h.Write([]byte{'\n'})
		n++
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d rows %s", n, hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// sqliteChild runs one SQLite contender in its own process.
func sqliteChild(m, src, dst, table string, same bool) (run, error) {
	var cmd *exec.Cmd
	if strings.HasPrefix(m, "sqlite-py") {
		sameArg := "0"
		if same {
			sameArg = "1"
		}
		cmd = exec.Command("python3", "-c", pySQLite, src, dst, table, sameArg, handDDL)
	} else {
		args := []string{"-mode", m, "-src", "sqlite:" + src, "-dst", "sqlite:" + dst, "-table", table, "-chunk", fmt.Sprint(*chunk)}
		if *cpuprofile != "" {
			args = append(args, "-cpuprofile", *cpuprofile+"."+m)
		}
		cmd = exec.Command(os.Args[0], args...)
	}
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		return run{}, fmt.Errorf("%s: %w", m, err)
	}
	var r run
	if err := json.Unmarshal(outb, &r.res); err != nil {
		return run{}, fmt.Errorf("%s: child output %q: %w", m, outb, err)
	}
	st := cmd.ProcessState
	r.rss = st.SysUsage().(*syscall.Rusage).Maxrss
	r.cpu = (st.UserTime() + st.SystemTime()).Seconds()
	return r, nil
}

// sqliteHandCopy is the same-engine baseline: INSERT … SELECT in one
// transaction, into an attached file or (same) a new table of the source
// file.
func sqliteHandCopy(ctx context.Context, s, d, table string, same bool) (int64, error) {
	b, err := sqlite.Open(ctx, s, nil)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	conn, err := b.DB().Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	target := "main." + table
	stmts := []string{"CREATE TABLE " + target + " " + handDDL}
	if !same {
		target = "d." + table
		stmts = []string{"ATTACH DATABASE '" + strings.TrimPrefix(d, "sqlite:") + "' AS d", "PRAGMA d.journal_mode = WAL", "PRAGMA d.synchronous = NORMAL", "CREATE TABLE " + target + " " + handDDL}
	}
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return 0, err
		}
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return 0, err
	}
	res, err := conn.ExecContext(ctx, `INSERT INTO `+target+` SELECT id, name, amount, at, note FROM main.items`)
	if err != nil {
		return 0, err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
