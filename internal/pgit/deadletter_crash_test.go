package pgit

import (
	"bytes"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicedata/sluice/internal/pgtest"
	_ "modernc.org/sqlite"
)

// TestDeadLetterCrash kills `sluice run` (SIGKILL) at random points of a
// cross-database append job with a dead-letter table whose target refuses
// some rows (a CHECK on qty), so that every run falls back to the
// savepoint-and-bisect apply and the kills land in it too. After a final
// run to completion the target and the dead-letter table together hold
// every change exactly once: the target the rows of the source with qty
// >= 0, the dead-letter table those with qty < 0 — computed from the
// source table itself (APPEND_ONLY: each change is a row inserted and never
// changed), not from sluice. Neither table has a key, so a row delivered
// twice would show.
func TestDeadLetterCrash(t *testing.T) {
	bin := sluiceBinary(t)
	t.Run("postgres sink", func(t *testing.T) { deadLetterCrash(t, bin, false) })
	t.Run("sqlite sink", func(t *testing.T) { deadLetterCrash(t, bin, true) })
}

// deadLetterCrash is TestDeadLetterCrash into a PostgreSQL database or,
// with lite, a SQLite file.
func deadLetterCrash(t *testing.T, bin string, lite bool) {
	src := pgtest.NewDatabase(t)
	sink := pgtest.NewDatabase(t)
	dir := t.TempDir()
	sinkConn := sink
	if lite {
		sinkConn = "sqlite:" + filepath.Join(dir, "sink.db")
	}
	iterations := 20
	if testing.Short() {
		iterations = 8
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0xdead))
	sc := connect(t, src)
	kc := connect(t, sink)
	mustExec(t, sc, `CREATE TABLE ev (id bigint PRIMARY KEY, qty integer, note text)`)
	sluiceSQL(t, src, `
ALTER TABLE ev SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM ev_stream ON TABLE ev WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');
`)
	target := `CREATE TABLE ev_copy (id bigint, qty integer CHECK (qty >= 0), note text)`
	var ldb *sql.DB
	if lite {
		var err error
		if ldb, err = sql.Open("sqlite", strings.TrimPrefix(sinkConn, "sqlite:")); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ldb.Close() })
		if _, err := ldb.Exec(`CREATE TABLE ev_copy (id BIGINT, qty INT CHECK (qty >= 0), note TEXT)`); err != nil {
			t.Fatal(err)
		}
	} else {
		mustExec(t, kc, target)
	}
	job := writeJob(t, dir, "dl.yaml", fmt.Sprintf(`name: crash_dl
connection: %q
source: ev_stream
select: [id, qty, note]
sink: {table: ev_copy, mode: append, dead_letter: ev_rejects, connection: %q}
`, src, sinkConn))

	next := int64(1)
	insert := func() {
		n := 1 + rng.IntN(60)
		var b bytes.Buffer
		b.WriteString("INSERT INTO ev VALUES ")
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			qty := rng.IntN(100)
			if rng.IntN(8) == 0 {
				qty = -qty - 1 // refused by the target's CHECK
			}
			fmt.Fprintf(&b, "(%d, %d, 'n%d')", next, qty, next)
			next++
		}
		mustExec(t, sc, b.String())
	}
	run := func(batch int, kill time.Duration) (killed bool, elapsed time.Duration) {
		cmd := exec.CommandContext(t.Context(), bin, "run", "--batch", strconv.Itoa(batch), job)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var killC <-chan time.Time
		if kill >= 0 {
			killC = time.After(kill)
		}
		for {
			select {
			case <-killC:
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killed, killC = true, nil
			case err := <-done:
				elapsed = time.Since(t0)
				if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); killed && ok && st.Signaled() {
					return true, elapsed
				}
				if err != nil {
					t.Fatalf("sluice run failed: %v\n%s", err, out.String())
				}
				return false, elapsed
			}
		}
	}
	insert()
	_, full := run(7, -1)
	t.Logf("a run takes about %s", full.Round(time.Millisecond))
	kills := 0
	for range iterations {
		insert()
		if rng.IntN(2) == 0 {
			insert()
		}
		k, _ := run([]int{1, 5, 17, 1000}[rng.IntN(4)], time.Duration(rng.Int64N(int64(full)*13/10)))
		if k {
			kills++
		}
	}
	insert()
	if k, _ := run(13, -1); k {
		t.Fatal("final run was killed")
	}
	t.Logf("%d of %d runs killed", kills, iterations)

	// Expected, from the source's own rows.
	wantGood := queryText(t, sc, `SELECT id::text, qty::text, note FROM ev WHERE qty >= 0 ORDER BY ev.id`)
	wantBad := queryText(t, sc, `SELECT id::text, qty::text, note FROM ev WHERE qty < 0 ORDER BY ev.id`)
	var gotGood, gotBad [][]string
	if lite {
		gotGood = sqliteText(t, ldb, `SELECT id, qty, note FROM ev_copy ORDER BY id`)
		gotBad = sqliteText(t, ldb, `SELECT json_extract("row", '$.id'), json_extract("row", '$.qty'), json_extract("row", '$.note') FROM ev_rejects WHERE job = 'crash_dl' ORDER BY json_extract("row", '$.id')`)
	} else {
		gotGood = queryText(t, kc, `SELECT id::text, qty::text, note FROM ev_copy ORDER BY ev_copy.id`)
		gotBad = queryText(t, kc, `SELECT "row"->>'id', "row"->>'qty', "row"->>'note' FROM ev_rejects WHERE job = 'crash_dl' ORDER BY ("row"->>'id')::bigint`)
	}
	if fmt.Sprint(gotGood) != fmt.Sprint(wantGood) {
		t.Errorf("target holds %d rows, want %d (each accepted change once)\n got %v\nwant %v", len(gotGood), len(wantGood), gotGood, wantGood)
	}
	if fmt.Sprint(gotBad) != fmt.Sprint(wantBad) {
		t.Errorf("dead-letter table holds %d rows, want %d (each rejected change once)\n got %v\nwant %v", len(gotBad), len(wantBad), gotBad, wantBad)
	}
	if len(wantBad) == 0 {
		t.Error("the workload made no rejected row; the test would prove nothing")
	}
	var keys [][]string
	if lite {
		keys = sqliteText(t, ldb, `SELECT count(*) FROM ev_rejects WHERE "key" IS NOT NULL AND "key" <> 'null' AND "change_type" = 'INSERT' AND "error" LIKE '%CHECK constraint failed%'`)
	} else {
		keys = queryText(t, kc, `SELECT count(*)::text FROM ev_rejects WHERE "key" IS NOT NULL AND "key" <> 'null'::jsonb AND "change_type" = 'INSERT' AND "error" LIKE '%check constraint%'`)
	}
	if keys[0][0] != strconv.Itoa(len(gotBad)) {
		t.Errorf("%s dead letters name a key, an INSERT and the check constraint; want all %d", keys[0][0], len(gotBad))
	}
}

// sqliteText returns the rows of query as text (NULL as <NULL>).
func sqliteText(t *testing.T, db *sql.DB, query string) [][]string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		r := make([]string, len(cols))
		for i, v := range vals {
			r[i] = v.String
			if !v.Valid {
				r[i] = "<NULL>"
			}
		}
		out = append(out, r)
	}
	return out
}
