package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// logState returns the log's relfilenode (TRUNCATE gives it a new one, a
// DELETE does not) and its visible row count.
func logState(t *testing.T, b *Backend, table string) (node uint32, rows int) {
	t.Helper()
	log := "sluice." + `"` + objectName("log_", table) + `"`
	if err := b.pool.QueryRow(context.Background(),
		`SELECT pg_relation_filenode($1::regclass)::int8, (SELECT count(*) FROM `+log+`)::int`, log).Scan(&node, &rows); err != nil {
		t.Fatal(err)
	}
	return node, rows
}

// TestPurgeTruncatesOnlyWhenSafe: after a consuming read, an idle log
// that every stream has consumed is truncated (new relfilenode); a log
// held by a concurrent writer whose transaction is still open, by a read,
// or with rows another stream still needs is purged by DELETE instead, and
// the rows still needed survive and are read later.
func TestPurgeTruncatesOnlyWhenSafe(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE pt (id int PRIMARY KEY, v int)`)
	track(t, b, "pt")
	mkStream(t, b, "pa", "pt", dsl.ModeStandard, false)

	// Idle and consumed: TRUNCATE.
	sqlExec(t, b, `INSERT INTO pt VALUES (1, 1), (2, 2)`)
	node0, rows0 := logState(t, b, "pt")
	if rows0 != 2 {
		t.Fatalf("log rows before the read: %d, want 2", rows0)
	}
	_, got := read(t, b, "pa", true)
	check(t, "first read", got, []string{"INSERT 1 1", "INSERT 2 2"})
	node1, rows1 := logState(t, b, "pt")
	if rows1 != 0 || node1 == node0 {
		t.Errorf("idle consumed log: rows %d (want 0), relfilenode %d → %d (want a new one: TRUNCATE)", rows1, node0, node1)
	}

	// A writer's transaction is open while a read is consumed: its log row
	// is not visible to the read, so the purge must not TRUNCATE; the row
	// is read once the writer commits.
	sqlExec(t, b, `UPDATE pt SET v = 10 WHERE id = 1`)
	w, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Rollback(ctx)
	if _, err := w.Exec(ctx, `INSERT INTO pt VALUES (3, 3)`); err != nil {
		t.Fatal(err)
	}
	_, got = read(t, b, "pa", true)
	check(t, "read while a writer is open", got, []string{"UPDATE_BEFORE 1 1", "UPDATE_AFTER 1 10"})
	node2, _ := logState(t, b, "pt")
	if node2 != node1 {
		t.Errorf("log truncated while a writer held it (relfilenode %d → %d)", node1, node2)
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, rows := logState(t, b, "pt"); rows != 1 {
		t.Errorf("after the writer committed the log holds %d rows, want its 1 (the consumed update deleted)", rows)
	}
	_, got = read(t, b, "pa", true)
	check(t, "the writer's change", got, []string{"INSERT 3 3"})

	// A read holds the log (lockLog before its snapshot): no TRUNCATE.
	sqlExec(t, b, `UPDATE pt SET v = 20 WHERE id = 2`)
	s, err := b.Stream(ctx, plan.Source{Stream: "pa"})
	if err != nil {
		t.Fatal(err)
	}
	holder, err := b.Changes(ctx, s, s.Offset, runner.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node3, _ := logState(t, b, "pt")
	_, got = read(t, b, "pa", true)
	check(t, "read while another read holds the log", got, []string{"UPDATE_BEFORE 2 2", "UPDATE_AFTER 2 20"})
	if node4, rows := logState(t, b, "pt"); node4 != node3 || rows != 0 {
		t.Errorf("with a read holding the log: relfilenode %d → %d (want unchanged), rows %d (want 0: DELETE)", node3, node4, rows)
	}
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}

	// Another stream has not consumed the rows: they stay.
	mkStream(t, b, "pb", "pt", dsl.ModeStandard, false)
	sqlExec(t, b, `DELETE FROM pt WHERE id = 3`)
	_, got = read(t, b, "pa", true)
	check(t, "pa reads the delete", got, []string{"DELETE 3 3"})
	if _, rows := logState(t, b, "pt"); rows != 1 {
		t.Errorf("log rows after pa consumed what pb still needs: %d, want 1", rows)
	}
	_, got = read(t, b, "pb", true)
	check(t, "pb reads the delete", got, []string{"DELETE 3 3"})
	if _, rows := logState(t, b, "pt"); rows != 0 {
		t.Errorf("log rows after both streams consumed: %d, want 0", rows)
	}
}

// TestLockLogWithoutLog: a read of a stream whose table lost its log still
// gets the read's own error, not the LOCK's.
func TestLockLogWithoutLog(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := lockLog(ctx, tx, "no_such_table"); err != nil {
		t.Fatalf("lockLog on a table without a log: %v, want nil", err)
	}
	var one int
	if err := tx.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil || one != 1 {
		t.Fatalf("transaction unusable after lockLog: %v", err)
	}
}

// TestPushdownPurgesWhatItConsumed: a pushed-down run purges the log rows
// it consumed even when they net to nothing (an insert and a delete of one
// key: nothing read, nothing written); a run whose window holds no log row
// — its offset moved only because a transaction of another table ended —
// leaves the log as it was (issue #19: it skips the purge; an idle empty
// log would be truncated, a new relfilenode), and later changes are read
// and purged as before.
func TestPushdownPurgesWhatItConsumed(t *testing.T) {
	b, _ := openDB(t)
	ctx := t.Context()
	sqlExec(t, b, `CREATE TABLE pz (id int PRIMARY KEY, v int)`, `CREATE TABLE other (id int PRIMARY KEY)`)
	track(t, b, "pz")
	mkStream(t, b, "pz_s", "pz", dsl.ModeStandard, false)
	p, s := bindPlan(t, b, "pz_s", "", []string{"id", "v"},
		plan.SinkStage{Backend: "postgres", Table: "pz_copy", Mode: plan.ModeMerge, Keys: []string{"id"}})
	pd, err := b.Pushdown(ctx, p, s)
	if err != nil {
		t.Fatal(err)
	}
	run := func(what string) (read int64, moved bool) {
		t.Helper()
		stats, from, to, err := pd.Run(ctx, "pzjob")
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, n := range stats.Read {
			read += n
		}
		return read, !from.Equal(to)
	}
	run("first run") // the target is created; nothing pending

	sqlExec(t, b, `INSERT INTO pz VALUES (1, 1)`, `DELETE FROM pz WHERE id = 1`)
	if _, rows := logState(t, b, "pz"); rows != 2 {
		t.Fatalf("log rows after an insert and a delete: %d, want 2", rows)
	}
	if read, moved := run("net zero"); read != 0 || !moved {
		t.Fatalf("net-zero run: read %d, offset moved %v; want 0 and true", read, moved)
	}
	if _, rows := logState(t, b, "pz"); rows != 0 {
		t.Errorf("after a run that consumed an insert and a delete of one key: %d log rows, want 0 (purged)", rows)
	}

	// A transaction writing another table is running when a run reads:
	// its offset keeps it as running. Once it commits, the next run's
	// offset moves past it, and its window holds no log row.
	o, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Rollback(ctx)
	if _, err := o.Exec(ctx, `INSERT INTO other VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, b, `INSERT INTO pz VALUES (2, 2)`)
	if read, _ := run("one insert"); read != 1 {
		t.Fatalf("one insert: read %d, want 1", read)
	}
	if err := o.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	node0, rows0 := logState(t, b, "pz")
	if read, moved := run("offset only"); read != 0 || !moved {
		t.Fatalf("run after the other transaction committed: read %d, offset moved %v; want 0 and true", read, moved)
	}
	if node, rows := logState(t, b, "pz"); node != node0 || rows != rows0 {
		t.Errorf("a run with no log row in its window purged the log: relfilenode %d → %d, rows %d → %d", node0, node, rows0, rows)
	}
	sqlExec(t, b, `INSERT INTO pz VALUES (3, 3)`)
	if read, _ := run("a later insert"); read != 1 {
		t.Errorf("a later insert: read %d, want 1", read)
	}
	check(t, "target", tableRows(t, b, `SELECT id, v FROM pz_copy ORDER BY id`), []string{"2 2", "3 3"})
	if _, rows := logState(t, b, "pz"); rows != 0 {
		t.Errorf("after every change was consumed: %d log rows, want 0", rows)
	}
}
