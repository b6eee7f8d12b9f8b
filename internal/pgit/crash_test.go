package pgit

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestCrashCrossDatabase kills `sluice run` processes (SIGKILL) at random
// points of two cross-database jobs and checks that, after a final run,
// the sink holds every change exactly once:
//
//   - crash_merge: a STANDARD stream (SHOW_INITIAL_ROWS) on acct, merged
//     by id into acct_replica in another database; at the end acct_replica
//     equals acct row for row (DECIMAL and timestamps compared as text);
//   - crash_append: an APPEND_ONLY stream on events (no primary key)
//     appended into events_log (no primary key, so a duplicate would show);
//     at the end events_log holds each inserted event exactly once, with
//     the values it was inserted with (tracked here, independently of
//     sluice).
//
// Each iteration commits a random batch of INSERT / UPDATE / DELETE (single
// rows, multi-row statements, key-changing updates), sometimes leaves a
// transaction open that commits while sluice runs, starts `sluice run`
// with both jobs (random order, random batch size) and kills it after a
// random delay spread over a measured run's duration, so kills land before,
// during and after the sink commit and before or after the stream offset
// advance. After every kill it checks the protocol's invariant: the
// stream's offset is either where it was or equal to the sink checkpoint —
// never ahead of what the sink committed. SLUICE_CRASH_SEED=n replays a
// run; -short runs fewer iterations.
func TestCrashCrossDatabase(t *testing.T) {
	src := pgtest.NewDatabase(t)
	sink := pgtest.NewDatabase(t)
	bin := sluiceBinary(t)
	iterations := 60
	if testing.Short() {
		iterations = 12
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SLUICE_CRASH_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SLUICE_CRASH_SEED: %v", err)
		}
		seed = n
	}
	t.Logf("seed %d (SLUICE_CRASH_SEED=%d replays it), %d iterations", seed, seed, iterations)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))

	sc := connect(t, src)
	kc := connect(t, sink)
	mustExec(t, sc,
		`CREATE TABLE acct (id bigint PRIMARY KEY, name text NOT NULL, amount numeric(14,2), note text, updated timestamptz NOT NULL)`,
		`CREATE TABLE events (id bigint, payload text)`,
		`INSERT INTO acct SELECT g, 'initial-' || g, g * 1.25, CASE WHEN g % 3 = 0 THEN NULL ELSE 'n' || g END,
			timestamptz '2024-02-29 12:00:00.123456+00' + g * interval '1 second' FROM generate_series(1, 200) g`)
	sluiceSQL(t, src, `
ALTER TABLE acct SET PROPERTIES ('change_tracking' = 'true');
ALTER TABLE events SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM acct_stream ON TABLE acct WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE');
CREATE TABLE STREAM events_stream ON TABLE events WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');
`)
	// No primary key: a change appended twice would be a second row.
	mustExec(t, kc, `CREATE TABLE events_log (id bigint, payload text)`)

	dir := t.TempDir()
	jobs := []string{
		writeJob(t, dir, "merge.yaml", fmt.Sprintf(`name: crash_merge
connection: %q
source: acct_stream
select: [id, name, amount, note, updated]
sink: {table: acct_replica, mode: merge, keys: [id], connection: %q}
`, src, sink)),
		writeJob(t, dir, "append.yaml", fmt.Sprintf(`name: crash_append
connection: %q
source: events_stream
select: [id, payload]
sink: {table: events_log, mode: append, connection: %q}
`, src, sink)),
	}

	w := &workload{t: t, rng: rng, events: map[int64]string{}}
	run := func(batch int, kill time.Duration, late func()) (killed bool, elapsed time.Duration) {
		args := []string{"run", "--batch", strconv.Itoa(batch)}
		order := slices.Clone(jobs)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		cmd := exec.CommandContext(t.Context(), bin, append(args, order...)...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var killC, lateC <-chan time.Time
		if kill >= 0 {
			killC = time.After(kill)
		}
		if late != nil {
			lateC = time.After(time.Duration(rng.Int64N(int64(kill + 20*time.Millisecond + 1))))
		}
		for {
			select {
			case <-lateC:
				late()
				late, lateC = nil, nil
			case <-killC:
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killed = true
				killC = nil
			case err := <-done:
				elapsed = time.Since(t0)
				if late != nil {
					late()
				}
				if !killed && err != nil {
					t.Fatalf("sluice run failed: %v\n%s", err, stderr.String())
				}
				if killed {
					// The kill raced with a normal exit: the run completed.
					if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !st.Signaled() {
						if err != nil {
							t.Fatalf("sluice run failed: %v\n%s", err, stderr.String())
						}
						killed = false
					}
				}
				return killed, elapsed
			}
		}
	}

	// Calibrate: the first consumption (initial rows) and two ordinary
	// runs to completion; kills are spread over 0 … 1.3× an ordinary run.
	run(1000, -1, nil)
	var full time.Duration
	for range 2 {
		w.batch(sc)
		_, d := run(1000, -1, nil)
		full += d / 2
	}
	t.Logf("a full run of both jobs takes about %s", full.Round(time.Millisecond))

	outcomes := map[string]int{}
	for i := range iterations {
		w.batch(sc)
		var late func()
		if rng.IntN(3) == 0 {
			late = w.lateTx(src)
		}
		before := protocolState(t, sc, kc)
		batch := []int{3, 17, 100, 10000}[rng.IntN(4)]
		kill := time.Duration(rng.Int64N(int64(full) * 13 / 10))
		killed, _ := run(batch, kill, late)
		after := protocolState(t, sc, kc)
		for _, job := range []string{"crash_merge", "crash_append"} {
			b, a := before[job], after[job]
			var what string
			switch {
			case !killed:
				what = "completed before the kill"
				if a.stream != a.checkpoint {
					t.Fatalf("iteration %d: %s completed but its stream offset %q differs from its checkpoint %q", i, job, a.stream, a.checkpoint)
				}
			case a.checkpoint == b.checkpoint && a.stream == b.stream:
				what = "killed before the sink commit"
			case a.checkpoint != b.checkpoint && a.stream == b.stream:
				what = "killed between the sink commit and the offset advance"
			case a.checkpoint != b.checkpoint && a.stream == a.checkpoint:
				what = "killed after the offset advance"
			case a.checkpoint == b.checkpoint && b.stream != b.checkpoint && a.stream == a.checkpoint:
				// An earlier kill left the checkpoint ahead; this run read
				// nothing new and moved the stream's offset up to it.
				what = "offset caught up with the sink checkpoint"
			default:
				t.Fatalf("iteration %d: %s: the stream offset moved to %q without the sink checkpoint (%q → %q)", i, job, a.stream, b.checkpoint, a.checkpoint)
			}
			outcomes[what]++
		}
	}
	t.Logf("outcomes per job run (2 jobs × %d iterations): %v", iterations, outcomes)

	// A last batch, then a run to completion.
	w.batch(sc)
	if killed, _ := run(rng.IntN(50)+1, -1, nil); killed {
		t.Fatal("final run was killed")
	}
	final := protocolState(t, sc, kc)
	for job, st := range final {
		if st.stream != st.checkpoint {
			t.Errorf("%s: after the final run the stream offset %q differs from the sink checkpoint %q", job, st.stream, st.checkpoint)
		}
	}

	// The merge target equals the source, row for row.
	const rowsQ = `SELECT id::text AS k, name, amount::text, note, to_char(updated AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') FROM %s ORDER BY id`
	want := queryText(t, sc, fmt.Sprintf(rowsQ, "acct"))
	got := queryText(t, kc, fmt.Sprintf(rowsQ, "acct_replica"))
	if len(want) < 50 {
		t.Fatalf("the workload left only %d rows in acct; the comparison would prove little", len(want))
	}
	diffRows(t, "acct_replica vs acct", got, want)

	// The append target holds each inserted event exactly once.
	var wantEv [][]string
	for id, p := range w.events {
		wantEv = append(wantEv, []string{strconv.FormatInt(id, 10), p})
	}
	slices.SortFunc(wantEv, func(a, b []string) int {
		x, _ := strconv.ParseInt(a[0], 10, 64)
		y, _ := strconv.ParseInt(b[0], 10, 64)
		return int(x - y)
	})
	gotEv := queryText(t, kc, `SELECT id::text AS k, coalesce(payload, '<NULL>') FROM events_log ORDER BY id, payload`)
	cnt := queryText(t, kc, `SELECT count(*)::text, count(DISTINCT id)::text FROM events_log`)
	if cnt[0][0] != strconv.Itoa(len(wantEv)) || cnt[0][1] != cnt[0][0] {
		t.Errorf("events_log: count(*) = %s, count(DISTINCT id) = %s, inserted events = %d (each must be appended exactly once)", cnt[0][0], cnt[0][1], len(wantEv))
	}
	diffRows(t, "events_log vs inserted events", gotEv, wantEv)
	if !t.Failed() {
		t.Logf("acct: %d rows equal; events_log: %d events, each once", len(want), len(wantEv))
	}
}

// syncState is one job's checkpoint in the sink and its stream's offset
// in the source.
type syncState struct{ checkpoint, stream string }

func protocolState(t *testing.T, src, sink *pgx.Conn) map[string]syncState {
	t.Helper()
	out := map[string]syncState{}
	streams := map[string]string{}
	for _, r := range queryText(t, src, `SELECT name, position FROM sluice.streams`) {
		streams[r[0]] = r[1]
	}
	cps := map[string]string{}
	for _, r := range queryText(t, sink, `SELECT job, "offset" FROM sluice.checkpoints`) {
		cps[r[0]] = r[1]
	}
	for job, stream := range map[string]string{"crash_merge": "acct_stream", "crash_append": "events_stream"} {
		st := syncState{stream: streams[stream]}
		if enc, ok := cps[job]; ok {
			off, err := cdc.DecodeOffset(enc)
			if err != nil {
				t.Fatalf("checkpoint of %s: %v", job, err)
			}
			st.checkpoint, _ = off.Get("")
		}
		out[job] = st
	}
	return out
}

func diffRows(t *testing.T, what string, got, want [][]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d", what, len(got), len(want))
	}
	shown := 0
	for i := 0; i < max(len(got), len(want)) && shown < 10; i++ {
		var g, w []string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if !slices.Equal(g, w) {
			t.Errorf("%s: row %d: got %q, want %q", what, i, g, w)
			shown++
		}
	}
}

// workload makes random changes to acct and events and remembers every
// committed event insert (id → payload).
type workload struct {
	t      *testing.T
	rng    *rand.Rand
	nextEv int64
	events map[int64]string
}

var names = []string{"Alice", "O'Brien", `naïve "x"`, "日本語", "tab\there", "", "trailing  ", `back\slash`}

func (w *workload) value() (name string, amount, note any, updated time.Time) {
	r := w.rng
	name = names[r.IntN(len(names))] + strconv.Itoa(r.IntN(1000))
	if r.IntN(8) > 0 {
		amount = fmt.Sprintf("%s%d.%02d", []string{"", "-"}[r.IntN(5)/4], r.Int64N(1_000_000_000_000), r.IntN(100))
	}
	if r.IntN(3) > 0 {
		note = fmt.Sprintf("note %d", r.IntN(1e6))
	}
	updated = time.Date(2020+r.IntN(6), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1e6)*1000, time.UTC)
	return
}

// changes runs a random list of statements on tx; it returns the events
// it inserted (committed only when tx commits).
func (w *workload) changes(tx pgx.Tx, n int) map[int64]string {
	t, r := w.t, w.rng
	ctx := t.Context()
	ev := map[int64]string{}
	do := func(q string, args ...any) {
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for range n {
		k := r.Int64N(300) + 1
		name, amount, note, updated := w.value()
		switch x := r.IntN(100); {
		case x < 30:
			do(`INSERT INTO acct VALUES ($1, $2, $3::text::numeric, $4, $5) ON CONFLICT (id) DO NOTHING`, k, name, amount, note, updated)
		case x < 55:
			do(`UPDATE acct SET name = $2, amount = $3::text::numeric, note = $4, updated = $5 WHERE id = $1`, k, name, amount, note, updated)
		case x < 65:
			do(`DELETE FROM acct WHERE id = $1`, k)
		case x < 70:
			// A multi-row statement: one trigger call with many rows.
			do(`UPDATE acct SET amount = amount + 0.01, updated = updated + interval '1 microsecond' WHERE id % 17 = $1`, k%17)
		case x < 73:
			do(`DELETE FROM acct WHERE id % 41 = $1`, k%41)
		case x < 77:
			// A key-changing update: DELETE of the old key, INSERT of the new.
			do(`UPDATE acct SET id = $2 WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM acct WHERE id = $2)`, k, r.Int64N(300)+1)
		case x < 90:
			w.nextEv++
			p := fmt.Sprintf("ev-%d-%s", w.nextEv, name)
			do(`INSERT INTO events VALUES ($1, $2)`, w.nextEv, p)
			ev[w.nextEv] = p
		case x < 94:
			m := int64(r.IntN(40) + 2)
			do(`INSERT INTO events SELECT g, 'bulk-' || g FROM generate_series($1::bigint, $2::bigint) g`, w.nextEv+1, w.nextEv+m)
			for g := w.nextEv + 1; g <= w.nextEv+m; g++ {
				ev[g] = "bulk-" + strconv.FormatInt(g, 10)
			}
			w.nextEv += m
		case x < 97:
			// Later changes to appended rows do not change what was appended.
			do(`UPDATE events SET payload = payload || '!' WHERE id % 5 = $1`, k%5)
		default:
			do(`DELETE FROM events WHERE id = $1`, r.Int64N(w.nextEv+1))
		}
	}
	return ev
}

// batch commits 1–4 transactions of random changes.
func (w *workload) batch(c *pgx.Conn) {
	for range w.rng.IntN(4) + 1 {
		tx, err := c.Begin(w.t.Context())
		if err != nil {
			w.t.Fatal(err)
		}
		ev := w.changes(tx, w.rng.IntN(30)+1)
		if err := tx.Commit(w.t.Context()); err != nil {
			w.t.Fatal(err)
		}
		for id, p := range ev {
			w.events[id] = p
		}
	}
}

// lateTx opens a transaction with changes on a new connection to url and
// returns the function that commits it (while a sluice run is under way)
// and closes the connection.
func (w *workload) lateTx(url string) func() {
	ctx := w.t.Context()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		w.t.Fatal(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	ev := w.changes(tx, w.rng.IntN(10)+1)
	return func() {
		defer c.Close(context.WithoutCancel(ctx))
		if err := tx.Commit(ctx); err != nil {
			w.t.Fatal(err)
		}
		for id, p := range ev {
			w.events[id] = p
		}
	}
}
