package runner_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// backfill plans j and backfills it.
func (e *env) backfill(ctx context.Context, j *plan.Job, opt runner.BackfillOptions) (*runner.BackfillResult, error) {
	e.t.Helper()
	prep, err := e.r.Plan(ctx, j)
	if err != nil {
		return nil, err
	}
	return e.r.Backfill(ctx, prep, opt)
}

// items creates table items (id, name, amount) with n rows, tracked, and a
// STANDARD stream items_s on it.
func (e *env) items(n int) {
	e.t.Helper()
	var b strings.Builder
	b.WriteString(`CREATE TABLE items (id INT, name STRING, amount DECIMAL(10,2), PRIMARY KEY (id));
ALTER TABLE items SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM items_s ON TABLE items WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "INSERT INTO items VALUES (%d, 'n%d', %d.%02d);\n", i, i, i*100, i)
	}
	e.sql("", b.String())
}

const itemsQuery = "SELECT id, name, amount FROM items ORDER BY id"

func (e *env) rows(conn, q string) string {
	e.t.Helper()
	return fmt.Sprint(e.sql(conn, q))
}

func TestBackfillCompositeKeysTypes(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	b.WriteString("CREATE TABLE `order` (`group` STRING, `select` INT, amount DECIMAL(20,4), note STRING, at TIMESTAMP, PRIMARY KEY (`group`, `select`));\n")
	b.WriteString("ALTER TABLE `order` SET PROPERTIES ('change_tracking' = 'true');\n")
	b.WriteString("CREATE TABLE STREAM s ON TABLE `order` WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');\n")
	groups := []string{"東京", "b", "Ünï 'q'", "a"}
	for i, g := range groups {
		for k := 1; k <= 6; k++ {
			note := fmt.Sprintf("'naïve ✓ %d'", k)
			if k == 3 {
				note = "NULL"
			}
			fmt.Fprintf(&b, "INSERT INTO `order` VALUES ('%s', %d, %d12345678.%04d, %s, '2024-0%d-15 10:00:00.123456+08:00');\n",
				strings.ReplaceAll(g, "'", "''"), k*10-i, k-3, k*7, note, k)
		}
	}
	e.sql("", b.String())
	sink := e.conn("sink.db")
	j := e.job("copy.yaml", "source: s\nsink: {table: copy, mode: merge, keys: [group, select], connection: "+sink+"}\n")
	var seen []int64
	res, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 5, Progress: func(_ context.Context, p runner.BackfillProgress) {
		seen = append(seen, p.Rows)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 24 || res.Chunks != 5 || res.HandOff.IsZero() {
		t.Fatalf("result = %+v, want 24 rows in 5 chunks", res)
	}
	if fmt.Sprint(seen) != "[0 5 10 15 20 24]" {
		t.Errorf("progress rows = %v", seen)
	}
	q := "SELECT `group`, `select`, amount, note, at FROM %s ORDER BY `group`, `select`"
	src, dst := e.rows("", fmt.Sprintf(q, "`order`")), e.rows(sink, fmt.Sprintf(q, "copy"))
	if src != dst {
		t.Fatalf("target differs from source:\n src %s\n dst %s", src, dst)
	}
	if !strings.Contains(dst, "-212345678.0007") || !strings.Contains(dst, "東京") || !strings.Contains(dst, "+08:00") {
		t.Errorf("values not exact: %s", dst)
	}
	// Handed off: the stream's offset is the hand-off offset, nothing is
	// pending, a run copies nothing and a second backfill is refused.
	if p := e.pending("s"); len(p) != 0 {
		t.Errorf("pending after backfill = %v", p)
	}
	run, err := e.run(j)
	if err != nil {
		t.Fatal(err)
	}
	if !run.From.Equal(res.HandOff) || len(run.Stats.Written) != 0 {
		t.Errorf("run after backfill: from %s (hand-off %s), wrote %v", run.From, res.HandOff, run.Stats.Written)
	}
	if _, err := e.backfill(t.Context(), j, runner.BackfillOptions{}); !errors.Is(err, runner.ErrAlreadyConsumed) {
		t.Errorf("second backfill: err = %v, want ErrAlreadyConsumed", err)
	}
}

// TestBackfillChangesDuringArriveOnce changes the source between chunks;
// the next run must bring every change exactly once.
func TestBackfillChangesDuringArriveOnce(t *testing.T) {
	for _, tc := range []struct {
		name, sink string
		check      func(e *env, sink string)
	}{
		{"merge", "{table: copy, mode: merge, keys: [id], connection: %s}", func(e *env, sink string) {
			if src, dst := e.rows("", itemsQuery), e.rows(sink, "SELECT id, name, amount FROM copy ORDER BY id"); src != dst {
				e.t.Fatalf("target differs from source:\n src %s\n dst %s", src, dst)
			}
		}},
		{"append-only log", "{table: log, mode: append, connection: %s}\nfilter: \"`__change_type` = 'INSERT'\"", func(e *env, sink string) {
			// 30 rows at the snapshot + id 100 inserted during the copy (id 0
			// was inserted and deleted: no net change).
			got := e.rows(sink, "SELECT count(*), count(DISTINCT id), sum(id) FROM log")
			if want := fmt.Sprint([][]string{{"31", "31", fmt.Sprint(465 + 100)}}); got != want {
				e.t.Fatalf("log target = %s, want %s", got, want)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.items(30)
			sink := e.conn("sink.db")
			j := e.job("j.yaml", "source: items_s\nsink: "+fmt.Sprintf(tc.sink, sink)+"\n")
			_, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 4, Progress: func(_ context.Context, p runner.BackfillProgress) {
				switch {
				case p.Phase == "copy" && p.Chunks == 2: // copied ids 1..8
					e.sql("", `INSERT INTO items VALUES (100, 'new', 1.00);
INSERT INTO items VALUES (0, 'gone', 2.00);
UPDATE items SET name = 'upd-below' WHERE id = 3;
UPDATE items SET name = 'upd-above' WHERE id = 20;
DELETE FROM items WHERE id = 5;
DELETE FROM items WHERE id = 25;`)
				case p.Phase == "copy" && p.Chunks == 4:
					e.sql("", `UPDATE items SET amount = 99.99 WHERE id = 100;
DELETE FROM items WHERE id = 0;`)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.run(j); err != nil {
				t.Fatal(err)
			}
			tc.check(e, sink)
		})
	}
}

// interrupt backfills j and cancels it after `after` chunks.
func (e *env) interrupt(j *plan.Job, after int) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.t.Context())
	defer cancel()
	_, err := e.backfill(ctx, j, runner.BackfillOptions{Chunk: 4, Progress: func(_ context.Context, p runner.BackfillProgress) {
		if p.Phase == "copy" && p.Chunks == after {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		e.t.Fatalf("interrupted backfill: err = %v, want context.Canceled", err)
	}
}

func TestBackfillInterruptedResumeMerge(t *testing.T) {
	e := newEnv(t)
	e.items(30)
	sink := e.conn("sink.db")
	j := e.job("j.yaml", "source: items_s\nsink: {table: copy, mode: merge, keys: [id], connection: "+sink+"}\n")
	e.interrupt(j, 3) // ids 1..12 committed as of O1
	if got := e.rows(sink, "SELECT count(*) FROM copy"); got != "[[12]]" {
		t.Fatalf("after interruption: %s rows, want 12", got)
	}
	if _, err := e.run(j); !errors.Is(err, runner.ErrBackfillInProgress) {
		t.Fatalf("a run during an incomplete backfill: err = %v, want ErrBackfillInProgress", err)
	}
	// Changes while interrupted, on both sides of the last copied key.
	e.sql("", `UPDATE items SET name = 'x3' WHERE id = 3;
DELETE FROM items WHERE id = 7;
INSERT INTO items VALUES (40, 'n40', 4.00);
UPDATE items SET name = 'x20' WHERE id = 20;
INSERT INTO items VALUES (50, 'temp', 5.00);
UPDATE items SET name = 'tmp2' WHERE id = 2;
UPDATE items SET name = 'tmp21' WHERE id = 21;`)
	res, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 4, Progress: func(_ context.Context, p runner.BackfillProgress) {
		if p.Phase == "copy" && p.Chunks == 2 {
			// After the new snapshot: undo some of the above. With a
			// hand-off at the first snapshot, 50 (absent→absent since O1)
			// and 2, 21 (unchanged since O1) would keep their stale copies.
			e.sql("", `DELETE FROM items WHERE id = 50;
UPDATE items SET name = 'n2' WHERE id = 2;
UPDATE items SET name = 'n21' WHERE id = 21;
INSERT INTO items VALUES (60, 'n60', 6.00);`)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || res.CaughtUp != 5 || res.TotalRows != 12+res.Rows {
		t.Errorf("resume result = %+v, want resumed with 5 caught-up changes (3, 2 updated: UPDATE_BEFORE+UPDATE_AFTER each; 7 deleted)", res)
	}
	if _, err := e.run(j); err != nil {
		t.Fatal(err)
	}
	if src, dst := e.rows("", itemsQuery), e.rows(sink, "SELECT id, name, amount FROM copy ORDER BY id"); src != dst {
		t.Fatalf("target differs from source:\n src %s\n dst %s", src, dst)
	}
}

func TestRunDuringBackfillRefusedSameFile(t *testing.T) {
	e := newEnv(t)
	e.items(30)
	// Sink in the source file: the run would be pushed down.
	j := e.job("j.yaml", "source: items_s\nsink: {table: copy, mode: merge, keys: [id]}\n")
	e.interrupt(j, 2)
	if _, err := e.run(j); !errors.Is(err, runner.ErrBackfillInProgress) {
		t.Fatalf("pushed-down run during an incomplete backfill: err = %v, want ErrBackfillInProgress", err)
	}
}

func TestBackfillInterruptedEqualsUninterrupted(t *testing.T) {
	e := newEnv(t)
	e.items(30)
	e.sql("", "CREATE TABLE STREAM items_s2 ON TABLE items WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
	a := e.job("a.yaml", "source: items_s\nsink: {table: copy, mode: merge, keys: [id], connection: "+e.conn("a.db")+"}\n")
	b := e.job("b.yaml", "source: items_s2\nsink: {table: copy, mode: merge, keys: [id], connection: "+e.conn("b.db")+"}\n")
	if _, err := e.backfill(t.Context(), a, runner.BackfillOptions{Chunk: 4}); err != nil {
		t.Fatal(err)
	}
	e.interrupt(b, 2)
	e.interrupt(b, 1) // interrupted twice
	if _, err := e.backfill(t.Context(), b, runner.BackfillOptions{Chunk: 4}); err != nil {
		t.Fatal(err)
	}
	q := "SELECT id, name, amount FROM copy ORDER BY id"
	if ra, rb := e.rows(e.conn("a.db"), q), e.rows(e.conn("b.db"), q); ra != rb {
		t.Fatalf("interrupted target differs:\n a %s\n b %s", ra, rb)
	}
}

func TestBackfillAppendResumeRefused(t *testing.T) {
	e := newEnv(t)
	e.items(30)
	sink := e.conn("sink.db")
	j := e.job("j.yaml", "source: items_s\nsink: {table: log, mode: append, connection: "+sink+"}\n")
	e.interrupt(j, 2)
	_, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 4})
	if !errors.Is(err, runner.ErrBackfillResume) || !strings.Contains(err.Error(), "sluice backfill --restart JOBFILE` (the job file of j)") {
		t.Fatalf("resume into an append target: err = %v, want ErrBackfillResume naming --restart", err)
	}
	e.sql("", "INSERT INTO items VALUES (31, 'n31', 1.00)")
	res, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 4, Restart: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Restarted || res.Rows != 31 {
		t.Errorf("restart result = %+v", res)
	}
	if got := e.rows(sink, "SELECT count(*), count(DISTINCT id) FROM log"); got != "[[31 31]]" {
		t.Fatalf("after restart: %s, want 31 distinct rows (partial copy deleted)", got)
	}

	// A target that existed before the backfill is not wiped.
	e2 := newEnv(t)
	e2.items(10)
	sink2 := e2.conn("sink.db")
	e2.sql(sink2, "CREATE TABLE log (id INT, name STRING, amount DECIMAL(10,2)); INSERT INTO log VALUES (-1, 'mine', 0.00)")
	j2 := e2.job("j.yaml", "source: items_s\nsink: {table: log, mode: append, connection: "+sink2+"}\n")
	e2.interrupt(j2, 1)
	if _, err := e2.backfill(t.Context(), j2, runner.BackfillOptions{Chunk: 4, Restart: true}); !errors.Is(err, runner.ErrBackfillRestart) {
		t.Fatalf("restart into a pre-existing target: err = %v, want ErrBackfillRestart", err)
	}
}

func TestBackfillFailedChunkCommitsNothing(t *testing.T) {
	e := newEnv(t)
	e.items(12) // id 10's amount is 1000.10
	sink := e.conn("sink.db")
	e.sql(sink, "CREATE TABLE copy (id INT, name STRING, amount DECIMAL(5,2), PRIMARY KEY (id))")
	// ignore: the target keeps its narrower DECIMAL(5,2) (evolve would widen it).
	j := e.job("j.yaml", "source: items_s\nsink: {table: copy, mode: merge, keys: [id], on_schema_change: ignore, connection: "+sink+"}\n")
	_, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 4})
	if err == nil || !strings.Contains(err.Error(), "id=10") {
		t.Fatalf("err = %v, want one naming key id=10", err)
	}
	if got := e.rows(sink, "SELECT count(*), max(id) FROM copy"); got != "[[8 8]]" {
		t.Fatalf("target = %s, want the two committed chunks only", got)
	}
}

func TestBackfillDryRun(t *testing.T) {
	e := newEnv(t)
	e.items(30)
	sink := e.conn("sink.db")
	j := e.job("j.yaml", "source: items_s\nsink: {table: copy, mode: merge, keys: [id], connection: "+sink+"}\n")
	prep, err := e.r.Plan(t.Context(), j)
	if err != nil {
		t.Fatal(err)
	}
	bp, err := e.r.PlanBackfill(t.Context(), prep, runner.BackfillOptions{Chunk: 7})
	if err != nil {
		t.Fatal(err)
	}
	if bp.Rows != 30 || bp.Chunk != 7 || bp.Resume || bp.Offset.IsZero() {
		t.Fatalf("dry run = %+v", bp)
	}
	var text bytes.Buffer
	if err := plan.Format(&text, bp.Plan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), `WHERE ("id") > (?)`) {
		t.Errorf("plan lacks the keyset scan:\n%s", text.String())
	}
}
