package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// The PostgreSQL → SQLite path of the benchmark (issue #18: "SQLite ↔
// PostgreSQL backfill ≥ 0.5× of the better of the two one-sided
// baselines"). The one-sided baselines are each side's own bulk tool,
// alone:
//
//   - the source's dump: psql's \copy (SELECT …) TO a CSV file;
//   - the sink's load: the sqlite3 CLI's .import of that file into a new
//     file (WAL, synchronous NORMAL, as sluice's files), then the UPDATE
//     that turns its empty strings back into NULLs (CSV has no NULL for
//     .import).
//
// "The better" is the faster of the two; the ratio against the slower one
// is printed too (no pipeline of the two can beat the slower side).
// sluice backfills the same table into a new SQLite file (append).
// Contenders alternate; every target is checked equal to the source in
// every column (the SHA-256 of each row's columns, quoted as SQLite's
// quote() prints them, computed by each database).

const pgsqRowsSQL = `INSERT INTO items SELECT i, 'name ' || i || ' ✓', (i %% 100000) * 1.25, timestamptz '2024-01-01 00:00:00+00' + i * interval '1 second', CASE WHEN i %% 7 = 0 THEN NULL ELSE md5(i::text) END FROM generate_series(1, %d) i`

var pgsqNames = map[string]string{
	"pg-dump":     "source's dump: psql \\copy (SELECT …) TO csv file",
	"sqlite-load": "sink's load: sqlite3 CLI .import of that csv",
	"pgsq-sluice": "sluice backfill PostgreSQL → SQLite (append)",
}

func benchPGSQLite(ctx context.Context) ([]summary, error) {
	admin, err := pgx.Connect(ctx, *pgURL)
	if err != nil {
		return nil, err
	}
	defer admin.Close(ctx)
	name := randName("bench_pgsq_")
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, err
	}
	defer admin.Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	src, err := withDB(*pgURL, name)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-bench-pgsqlite-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	t0 := time.Now()
	sc, err := pgx.Connect(ctx, src)
	if err != nil {
		return nil, err
	}
	defer sc.Close(ctx)
	for _, q := range []string{pgDDL, fmt.Sprintf(pgsqRowsSQL, *rows), "VACUUM ANALYZE items"} {
		if _, err := sc.Exec(ctx, q); err != nil {
			return nil, err
		}
	}
	if err := execSluice(ctx, src, tracking); err != nil {
		return nil, err
	}
	fmt.Printf("prepared %d PostgreSQL rows for PostgreSQL → SQLite in %s\n", *rows, time.Since(t0).Round(time.Millisecond))
	// what each target must hold, by its form of the timestamp
	wantSluice, err := pgItemsHash(ctx, sc, `to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '+00:00'`)
	if err != nil {
		return nil, err
	}
	wantLoad, err := pgItemsHash(ctx, sc, `to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '+00'`)
	if err != nil {
		return nil, err
	}
	contend := []string{"pg-dump", "sqlite-load", "pgsq-sluice"}
	runs := map[string][]run{}
	for round := 0; round < *rounds; round++ {
		order := slices.Clone(contend)
		k := round % len(order)
		order = append(order[k:], order[:k]...)
		csv := filepath.Join(dir, fmt.Sprintf("dump-%d.csv", round))
		if round == 0 || order[0] == "sqlite-load" {
			// the load needs a dump of this round before it
			if _, err := pgsqChild("pg-dump", src, csv, ""); err != nil {
				return nil, err
			}
		}
		for _, m := range order {
			dst := filepath.Join(dir, fmt.Sprintf("%s-%d.db", m, round))
			r, err := pgsqChild(m, src, csv, dst)
			if err != nil {
				return nil, err
			}
			switch m {
			case "pgsq-sluice", "sqlite-load":
				want := wantSluice
				if m == "sqlite-load" {
					want = wantLoad
				}
				got, err := sqliteHash(ctx, dst, "items")
				if err != nil {
					return nil, fmt.Errorf("%s: %w", m, err)
				}
				if got != want {
					return nil, fmt.Errorf("%s round %d: target differs from the source (hash of every column %s, want %s)", m, round+1, got, want)
				}
				for _, f := range []string{dst, dst + "-wal", dst + "-shm"} {
					os.Remove(f)
				}
			}
			runs[m] = append(runs[m], r)
		}
		os.Remove(csv)
	}
	path := "PostgreSQL → SQLite"
	reportRuns(path, contend, "sqlite-load", "pgsq-sluice", runs, pgsqNames)
	// the faster one-sided baseline, round by round
	var best []run
	for i := range runs["pg-dump"] {
		b := runs["pg-dump"][i]
		if l := runs["sqlite-load"][i]; rate(l) > rate(b) {
			b = l
		}
		best = append(best, b)
	}
	s := ratioSummary(path, runs["pgsq-sluice"], best, "the faster one-sided: "+pgsqNames["pg-dump"]+" / "+pgsqNames["sqlite-load"])
	slower := ratioSummary(path, runs["pgsq-sluice"], runs["sqlite-load"], "")
	m, lo, hi := stats(s.ratios)
	sm, slo, shi := stats(slower.ratios)
	fmt.Printf("  sluice × the faster one-sided baseline: %.2f (%.2f–%.2f); × the slower: %.2f (%.2f–%.2f)\n", m, lo, hi, sm, slo, shi)
	return []summary{s}, nil
}

// pgItemsHash is sqliteHash's value computed by PostgreSQL for table items,
// with at rendered by atText.
func pgItemsHash(ctx context.Context, c *pgx.Conn, atText string) (string, error) {
	rows, err := c.Query(ctx, `SELECT id::text || ',' || quote_literal(name) || ',' || quote_literal(amount::text) || ',' || quote_literal(`+atText+`) || ',' || coalesce(quote_literal(note), 'NULL') FROM items ORDER BY id`)
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

// pgsqChild runs one contender of the PostgreSQL → SQLite path in its own
// process and times it from outside (the tools print nothing to time).
func pgsqChild(m, src, csv, dst string) (run, error) {
	var cmd *exec.Cmd
	switch m {
	case "pg-dump":
		cmd = exec.Command("psql", "-X", "-q", "-d", src, "-c", `\copy (SELECT id, name, amount, at, note FROM items) TO '`+csv+`' WITH (FORMAT csv)`)
		cmd.Env = append(os.Environ(), "PGTZ=UTC")
	case "sqlite-load":
		cmd = exec.Command("sqlite3", dst)
		cmd.Stdin = strings.NewReader("PRAGMA journal_mode = WAL;\nPRAGMA synchronous = NORMAL;\nCREATE TABLE items " + handDDL + ";\n.mode csv\n.import '" + csv + "' items\nUPDATE items SET note = NULL WHERE note = '';\n")
	default:
		args := []string{"-mode", m, "-src", src, "-dst", "sqlite:" + dst, "-table", "items", "-chunk", fmt.Sprint(*chunk)}
		if *cpuprofile != "" {
			args = append(args, "-cpuprofile", *cpuprofile+"."+m)
		}
		cmd = exec.Command(os.Args[0], args...)
	}
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	out, err := cmd.Output()
	secs := time.Since(t0).Seconds()
	if err != nil {
		return run{}, fmt.Errorf("%s: %w (%s)", m, err, out)
	}
	st := cmd.ProcessState
	return run{res: result{Seconds: secs, Rows: int64(*rows)}, rss: st.SysUsage().(*syscall.Rusage).Maxrss, cpu: (st.UserTime() + st.SystemTime()).Seconds()}, nil
}
