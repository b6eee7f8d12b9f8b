package pgit

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestCrashHistory kills `sluice run` (SIGKILL) at random points of two
// history jobs on a table under a random workload — one pushed down (same
// database), one into another database — and checks, after a final run,
// that no version was lost or doubled: per key, the versions follow each
// other without overlap (each closed at or before the next opens; two
// versions that touch differ in value), at most the last is current, no
// two share a __valid_from, and the current versions equal the table row
// for row. After every kill the stream offset of the cross-database job is
// where it was or equal to its sink checkpoint (never ahead of what the
// sink committed). -short runs fewer iterations.
func TestCrashHistory(t *testing.T) {
	src := pgtest.NewDatabase(t)
	sink := pgtest.NewDatabase(t)
	bin := sluiceBinary(t)
	iterations := 30
	if testing.Short() {
		iterations = 8
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x4157))

	sc := connect(t, src)
	kc := connect(t, sink)
	mustExec(t, sc,
		`CREATE TABLE acct (id bigint PRIMARY KEY, name text NOT NULL, amount numeric(14,2), note text, updated timestamptz NOT NULL)`,
		`CREATE TABLE events (id bigint, payload text)`,
		`INSERT INTO acct SELECT g, 'initial-' || g, g * 1.25, NULL, timestamptz '2024-02-29 12:00:00+00' FROM generate_series(1, 100) g`)
	sluiceSQL(t, src, `
ALTER TABLE acct SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM hist_push_stream ON TABLE acct WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE');
CREATE TABLE STREAM hist_cross_stream ON TABLE acct WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE');
`)
	dir := t.TempDir()
	jobs := []string{
		writeJob(t, dir, "push.yaml", fmt.Sprintf("name: hist_push\nconnection: %q\nsource: hist_push_stream\nselect: [id, name, amount, note, updated]\nsink: {table: acct_hist, mode: history, keys: [id]}\n", src)),
		writeJob(t, dir, "cross.yaml", fmt.Sprintf("name: hist_cross\nconnection: %q\nsource: hist_cross_stream\nselect: [id, name, amount, note, updated]\nsink: {table: acct_hist, mode: history, keys: [id], connection: %q}\n", src, sink)),
	}
	w := &workload{t: t, rng: rng, events: map[int64]string{}}
	run := func(batch int, kill time.Duration) (killed bool, elapsed time.Duration) {
		cmd := exec.CommandContext(t.Context(), bin, append([]string{"run", "--batch", strconv.Itoa(batch)}, jobs...)...)
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
				st, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
				if killed && !st.Signaled() {
					killed = false // the run ended before the kill
				}
				if !killed && err != nil {
					t.Fatalf("sluice run failed: %v\n%s", err, out.String())
				}
				return killed, time.Since(t0)
			}
		}
	}
	run(1000, -1)
	var full time.Duration
	for range 2 {
		w.batch(sc)
		_, d := run(1000, -1)
		full += d / 2
	}
	offsets := func() (stream, checkpoint string) {
		stream = queryText(t, sc, `SELECT position FROM sluice.streams WHERE name = 'hist_cross_stream'`)[0][0]
		if rows := queryText(t, kc, `SELECT "offset" FROM sluice.checkpoints WHERE job = 'hist_cross'`); len(rows) > 0 {
			checkpoint = rows[0][0]
		}
		return stream, checkpoint
	}
	kills := 0
	for i := range iterations {
		w.batch(sc)
		before, _ := offsets()
		killed, _ := run([]int{3, 17, 1000}[rng.IntN(3)], time.Duration(rng.Int64N(int64(full)*13/10)))
		if killed {
			kills++
		}
		after, cp := offsets()
		if after != before && !sameOffset(t, after, cp) {
			t.Fatalf("iteration %d: the stream offset moved to %s, ahead of the sink checkpoint %s", i, after, cp)
		}
	}
	t.Logf("%d of %d runs killed", kills, iterations)
	w.batch(sc)
	if killed, _ := run(50, -1); killed {
		t.Fatal("final run was killed")
	}
	const cols = `id::text AS k, name, amount::text, coalesce(note, '<NULL>'), to_char(updated AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')`
	want := queryText(t, sc, `SELECT `+cols+` FROM acct ORDER BY id`)
	for name, c := range map[string]*pgx.Conn{"pushed down": sc, "other database": kc} {
		got := queryText(t, c, `SELECT `+cols+` FROM acct_hist WHERE __valid_to IS NULL ORDER BY id`)
		diffRows(t, name+": current versions vs acct", got, want)
		if bad := queryText(t, c, versionFaults); len(bad) > 0 {
			t.Errorf("%s: %d versions followed by one they overlap, double or equal (first: %q)", name, len(bad), bad[0])
		}
		n := queryText(t, c, `SELECT count(*)::text, count(DISTINCT id)::text FROM acct_hist`)[0]
		t.Logf("%s: %s versions of %s keys", name, n[0], n[1])
	}
}

// versionFaults finds each version of acct_hist followed, for its key, by
// one it does not make way for: it is still current, it closes after the
// next opens, both open at the same instant, or the next is equal to it
// and opens as it closes (an equal version opens nothing).
const versionFaults = `SELECT id::text, __valid_from::text, coalesce(__valid_to::text, 'NULL'), __next::text FROM (
  SELECT id, __valid_from, __valid_to, lead(__valid_from) OVER w AS __next,
         ROW(name, amount, note, updated) AS v, lead(ROW(name, amount, note, updated)) OVER w AS nv
  FROM acct_hist WINDOW w AS (PARTITION BY id ORDER BY __valid_from, __valid_to NULLS LAST)) x
WHERE __next IS NOT NULL AND (__valid_to IS NULL OR __valid_to > __next OR __valid_from = __next OR (__valid_to = __next AND v IS NOT DISTINCT FROM nv))`

// sameOffset reports whether a stream position equals a sink checkpoint
// (an encoded cdc.Offset).
func sameOffset(t *testing.T, position, checkpoint string) bool {
	t.Helper()
	if checkpoint == "" {
		return false
	}
	off, err := cdc.DecodeOffset(checkpoint)
	if err != nil {
		t.Fatalf("checkpoint %q: %v", checkpoint, err)
	}
	p, _ := off.Get("")
	return p == position
}
