package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
)

// logOps returns the __op of the log rows of table logged after seq, in
// __seq order, and the highest __seq.
func logOps(t *testing.T, b *Backend, log string, after int64) (string, int64) {
	t.Helper()
	var ops string
	var top int64
	err := b.pool.QueryRow(context.Background(), fmt.Sprintf(
		`SELECT coalesce(string_agg(__op::text, '' ORDER BY __seq), ''), coalesce(max(__seq), $1) FROM sluice.%s WHERE __seq > $1`, log), after).Scan(&ops, &top)
	if err != nil {
		t.Fatal(err)
	}
	return ops, top
}

// bothReads reads stream name's net changes (one row per key, without
// versions) by the window read and by the read from the table, in one
// snapshot, as sorted text, and consumes them.
func bothReads(t *testing.T, b *Backend, name string) (window, table []string) {
	t.Helper()
	ctx := context.Background()
	s, err := b.Stream(ctx, plan.Source{Stream: name})
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginTxFunc(ctx, b.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		tr, fp, to, err := b.readPoint(ctx, tx, s, s.Offset)
		if err != nil {
			return err
		}
		if window, err = netRows(ctx, tx, changesQuery(tr, s, fp, to, queryOptions{afterOnly: true, base: literalBase(to)})); err != nil {
			return err
		}
		if table, err = netRows(ctx, tx, changesQuery(tr, s, fp, to, queryOptions{afterOnly: true, fromTable: true, keyOrdered: true})); err != nil {
			return err
		}
		// The window read without versions (the one-statement pushdown's
		// read of a small window) returns the same net changes too.
		unversioned, err := netRows(ctx, tx, changesQuery(tr, s, fp, to, queryOptions{afterOnly: true, noVersion: true, keyOrdered: true}))
		if err != nil {
			return err
		}
		if !slices.Equal(unversioned, window) {
			t.Errorf("window read without versions %q\nwindow read with versions    %q", unversioned, window)
		}
		return b.advance(ctx, tx, s, s.Offset, to.Offset())
	})
	if err != nil {
		t.Fatal(err)
	}
	return window, table
}

// netDiff is the STANDARD net change, one row per key as netRows renders
// it, between two states of a table of (id, v) rows, computed from the
// states alone.
func netDiff(before, after map[int]string) []string {
	var out []string
	for k, v := range after {
		if old, ok := before[k]; !ok {
			out = append(out, fmt.Sprintf("INSERT %d %s", k, v))
		} else if old != v {
			out = append(out, fmt.Sprintf("UPDATE_AFTER %d %s", k, v))
		}
	}
	for k, v := range before {
		if _, ok := after[k]; !ok {
			out = append(out, fmt.Sprintf("DELETE %d %s", k, v))
		}
	}
	slices.Sort(out)
	return out
}

// tableState returns the (id, v) rows of table.
func tableState(t *testing.T, b *Backend, table string) map[int]string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT id, v FROM `+table)
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]string{}
	var id int
	var v string
	if _, err := pgx.ForEachRow(rows, []any{&id, &v}, func() error { m[id] = v; return nil }); err != nil {
		t.Fatal(err)
	}
	return m
}

// shiftFunc is a BEFORE UPDATE row trigger function that changes the key
// of a row whose v is set to 'shift': a key change no statement asks for.
const shiftFunc = `CREATE OR REPLACE FUNCTION shift_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.v = 'shift' THEN NEW.id := NEW.id + 100; END IF;
	RETURN NEW;
END $$`

// inTx runs stmts in one transaction and commits it, or rolls it back.
func inTx(t *testing.T, b *Backend, commit bool, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, st := range stmts {
		if _, err := tx.Exec(ctx, st); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
	if commit {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUpdatePairMarks: an UPDATE whose new keys are all among its old
// keys logs its new images as 'U' (each follows an old image of its key
// in the statement, the package doc), one that changes the key set logs
// 'A', however the keys change (set by the statement, by a BEFORE
// trigger); a key set to itself, or a key change in another statement or
// table, changes nothing. The read that leaves 'U' rows out of its sort
// (tableImagesQuery) returns the net changes computed from the table's
// states, including a swap of two keys in one statement.
func TestUpdatePairMarks(t *testing.T) {
	b, _ := openDB(t)
	sqlExec(t, b, shiftFunc,
		`CREATE TABLE pm (id int PRIMARY KEY DEFERRABLE INITIALLY IMMEDIATE, v text)`,
		`INSERT INTO pm VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e'), (8, 'h')`,
		`CREATE TRIGGER shift BEFORE UPDATE ON pm FOR EACH ROW EXECUTE FUNCTION shift_key()`,
		`CREATE TABLE other (id int PRIMARY KEY)`, `INSERT INTO other VALUES (1)`)
	track(t, b, "pm")
	track(t, b, "other")
	mkStream(t, b, "pm_s", "pm", dsl.ModeStandard, false)
	before := tableState(t, b, "pm")
	var seq int64
	for _, c := range []struct {
		stmts []string // one transaction
		ops   string
	}{
		{[]string{`UPDATE pm SET id = CASE id WHEN 1 THEN 2 ELSE 1 END WHERE id IN (1, 2)`}, "BBUU"}, // a swap: same key set
		{[]string{`UPDATE pm SET v = 'x' WHERE id = 4`}, "BU"},
		{[]string{`UPDATE pm SET v = v WHERE id = 4`}, "BU"},
		{[]string{`UPDATE pm SET id = 10 WHERE id = 3`}, "BA"},
		{[]string{`UPDATE pm SET id = id + 1 WHERE id IN (4, 5)`}, "BBAA"}, // new key 6
		{[]string{`UPDATE pm SET v = 'y' WHERE false`}, ""},
		{[]string{`INSERT INTO pm VALUES (7, 'g')`}, "I"},
		{[]string{`DELETE FROM pm WHERE id = 7`}, "D"},
		{[]string{`UPDATE pm SET v = 'shift' WHERE id = 8`}, "BA"}, // 8 becomes 108
		{[]string{`UPDATE pm SET v = 'z' WHERE id = 6`, `UPDATE pm SET id = id WHERE id = 10`}, "BUBU"},
		{[]string{`UPDATE pm SET id = 20 WHERE id = 10`, `UPDATE pm SET v = 'w' WHERE id = 6`}, "BABU"},
		{[]string{`UPDATE other SET id = 2`, `UPDATE pm SET v = 'q' WHERE id = 6`}, "BU"},
	} {
		inTx(t, b, true, c.stmts...)
		var ops string
		ops, seq = logOps(t, b, "log_pm", seq)
		if ops != c.ops {
			t.Errorf("%s: logged %q, want %q", c.stmts, ops, c.ops)
		}
	}
	want := netDiff(before, tableState(t, b, "pm"))
	window, table := bothReads(t, b, "pm_s")
	check(t, "window read", window, want)
	check(t, "read from the table", table, want)

	// A table without a primary key marks no pairs.
	sqlExec(t, b, `CREATE TABLE nk (id int, v text)`, `INSERT INTO nk VALUES (1, 'a')`)
	track(t, b, "nk")
	mkStream(t, b, "nk_s", "nk", "APPEND_ONLY", false)
	sqlExec(t, b, `UPDATE nk SET v = 'b'`)
	if ops, _ := logOps(t, b, "log_nk", 0); ops != "BA" {
		t.Errorf("UPDATE of a table without a primary key logged %q, want %q", ops, "BA")
	}
}

// TestUpdatePairMarksPartitioned: an UPDATE that moves a row of a
// partitioned table to another partition changes its key (the partition
// key is part of it) and fires no UPDATE row trigger; the moved row is
// logged 'A' and read as a DELETE plus an INSERT.
func TestUpdatePairMarksPartitioned(t *testing.T) {
	b, _ := openDB(t)
	sqlExec(t, b,
		`CREATE TABLE pt (id int, r int, v text, PRIMARY KEY (id, r)) PARTITION BY LIST (r)`,
		`CREATE TABLE pt1 PARTITION OF pt FOR VALUES IN (1)`,
		`CREATE TABLE pt2 PARTITION OF pt FOR VALUES IN (2)`,
		`INSERT INTO pt VALUES (1, 1, 'a'), (2, 1, 'b')`)
	track(t, b, "pt")
	mkStream(t, b, "pt_s", "pt", dsl.ModeStandard, false)
	sqlExec(t, b, `UPDATE pt SET r = 2 WHERE id = 1`, `UPDATE pt SET v = 'x' WHERE id = 2`)
	if ops, _ := logOps(t, b, "log_pt", 0); ops != "BABU" {
		t.Errorf("logged %q, want %q", ops, "BABU")
	}
	// A partition is refused: statements on pt do not fire its
	// statement-level triggers.
	if err := b.EnableTracking(context.Background(), "pt1"); !errors.Is(err, ErrIsPartition) {
		t.Errorf("tracking a partition: %v, want ErrIsPartition", err)
	}
	// (id, r, v), by hand: 1 moved from partition 1 to 2, 2 updated.
	want := []string{"DELETE 1 1 a", "INSERT 1 2 a", "UPDATE_AFTER 2 1 x"}
	window, table := bothReads(t, b, "pt_s")
	check(t, "window read", window, want)
	check(t, "read from the table", table, want)
}

// TestKeyChangedByDroppedTrigger: a BEFORE UPDATE trigger created after
// tracking was enabled changes a key, and is dropped before the read (a
// fresh user found a capture that paired updates by the columns they set
// lost the new key then). The change is logged unpaired and both reads
// return the net changes computed from the table's states.
func TestKeyChangedByDroppedTrigger(t *testing.T) {
	b, _ := openDB(t)
	sqlExec(t, b, shiftFunc,
		`CREATE TABLE bt (id int PRIMARY KEY, v text)`,
		`INSERT INTO bt VALUES (1, 'a'), (2, 'b')`)
	track(t, b, "bt")
	mkStream(t, b, "bt_s", "bt", dsl.ModeStandard, false)
	before := tableState(t, b, "bt")
	sqlExec(t, b, `CREATE TRIGGER shift BEFORE UPDATE ON bt FOR EACH ROW EXECUTE FUNCTION shift_key()`,
		`UPDATE bt SET v = 'shift' WHERE id = 1`, // 1 becomes 101
		`DROP TRIGGER shift ON bt`)
	if ops, _ := logOps(t, b, "log_bt", 0); ops != "BA" {
		t.Errorf("logged %q, want %q", ops, "BA")
	}
	want := netDiff(before, tableState(t, b, "bt"))
	window, table := bothReads(t, b, "bt_s")
	check(t, "window read", window, want)
	check(t, "read from the table", table, want)
}

// TestDeferredKeyRefused: a primary key that is DEFERRABLE INITIALLY
// DEFERRED lets a transaction hold two rows of one key between
// statements, and the log's rows per key then mix two rows' histories.
// In the transaction below, key 2 logs its
// update, the row of key 1 moving onto key 2, and that row's deletion;
// read per key, the last change is a DELETE while (2, 'n2', 21) exists.
// A STANDARD stream on such a table is refused, when it is created and
// when it is read (the key made deferred after it was created), and reads
// what it had not read once the key is immediate again; an APPEND_ONLY
// stream, which reads inserted rows only, is not refused.
func TestDeferredKeyRefused(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b,
		`CREATE TABLE dk (id int PRIMARY KEY DEFERRABLE INITIALLY DEFERRED, name text, amount int)`,
		`INSERT INTO dk VALUES (1, 'n1', 10), (2, 'n2', 20), (3, 'n3', 30)`)
	track(t, b, "dk")
	err := b.CreateStream(ctx, &dsl.CreateStream{Stream: "dk_s", Table: "dk", Mode: dsl.ModeStandard})
	if !errors.Is(err, ErrDeferredKey) {
		t.Fatalf("STANDARD stream on a deferred key: %v, want ErrDeferredKey", err)
	}
	if !strings.Contains(err.Error(), `in psql (this is PostgreSQL SQL, not sluice's dialect): ALTER TABLE "dk" DROP CONSTRAINT "dk_pkey", ADD PRIMARY KEY ("id")`) {
		t.Errorf("error does not say how to make the key immediate: %v", err)
	}
	mkStream(t, b, "dk_a", "dk", dsl.ModeAppendOnly, false)
	inTx(t, b, true,
		`UPDATE dk SET amount = amount + 1 WHERE id = 2`,
		`UPDATE dk SET id = 2 WHERE id = 1`,
		`DELETE FROM dk WHERE name = 'n1'`)
	if err := readErr(t, b, "dk_a"); err != nil {
		t.Errorf("APPEND_ONLY stream: %v", err)
	}
	var rows string
	if err := b.pool.QueryRow(ctx, `SELECT string_agg(format('%s %s %s', id, name, amount), ', ' ORDER BY id) FROM dk`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != "2 n2 21, 3 n3 30" {
		t.Errorf("table after the transaction: %s, want 2 n2 21, 3 n3 30", rows)
	}

	// A key made deferred after the stream was created: its reads are
	// refused until the key is immediate again, and then read what was
	// pending.
	sqlExec(t, b, `CREATE TABLE dk2 (id int PRIMARY KEY, v text)`)
	track(t, b, "dk2")
	mkStream(t, b, "dk2_s", "dk2", dsl.ModeStandard, false)
	before := tableState(t, b, "dk2")
	sqlExec(t, b, `INSERT INTO dk2 VALUES (1, 'a')`,
		`ALTER TABLE dk2 DROP CONSTRAINT dk2_pkey, ADD PRIMARY KEY (id) DEFERRABLE INITIALLY DEFERRED`)
	if err := readErr(t, b, "dk2_s"); !errors.Is(err, ErrDeferredKey) {
		t.Fatalf("read after the key became deferred: %v, want ErrDeferredKey", err)
	}
	sqlExec(t, b, `ALTER TABLE dk2 DROP CONSTRAINT dk2_pkey, ADD PRIMARY KEY (id)`)
	want := netDiff(before, tableState(t, b, "dk2"))
	window, table := bothReads(t, b, "dk2_s")
	check(t, "window read", window, want)
	check(t, "read from the table", table, want)
}

// readErr is the error of describing stream name or taking its read
// point (nil when the stream can be read).
func readErr(t *testing.T, b *Backend, name string) error {
	t.Helper()
	ctx := context.Background()
	s, err := b.Stream(ctx, plan.Source{Stream: name})
	if err != nil {
		return err
	}
	return pgx.BeginTxFunc(ctx, b.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		_, _, _, err := b.readPoint(ctx, tx, s, s.Offset)
		return err
	})
}

// TestPairedKeyRedefined: after the primary key is redefined, the 'U'
// marks in the log were made under the old key; the next read (Stream)
// enables tracking again itself, which pairs under the new key and
// unmarks the log's old 'U' rows: an update that kept the old key and
// changed the new one is then read as a DELETE plus an INSERT.
func TestPairedKeyRedefined(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b,
		`CREATE TABLE rk (id int PRIMARY KEY, code int NOT NULL UNIQUE, v text)`,
		`INSERT INTO rk VALUES (1, 11, 'a'), (2, 12, 'b')`)
	track(t, b, "rk")
	mkStream(t, b, "rk_s", "rk", dsl.ModeStandard, false)
	pairs := func() bool {
		t.Helper()
		tr, ok, err := b.tracked(ctx, b.pool, "rk")
		if err != nil || !ok {
			t.Fatalf("tracked: %v %v", ok, err)
		}
		return tr.pairsKnown()
	}
	if !pairs() {
		t.Fatal("pairs not known right after tracking was enabled")
	}
	sqlExec(t, b,
		`ALTER TABLE rk DROP CONSTRAINT rk_pkey`, `ALTER TABLE rk ADD PRIMARY KEY (code)`,
		// id stays, code (the new key) changes: logged as a pair ('U')
		// under the old key.
		`UPDATE rk SET code = 21 WHERE id = 1`)
	if ops, _ := logOps(t, b, "log_rk", 0); ops != "BU" {
		t.Fatalf("logged %q, want %q (paired under the old key)", ops, "BU")
	}
	if pairs() {
		t.Fatal("pairs known under a redefined primary key")
	}
	if err := readErr(t, b, "rk_s"); err != nil {
		t.Fatalf("read under a redefined primary key: %v, want it to enable tracking again itself", err)
	}
	if !pairs() {
		t.Fatal("pairs not known after tracking was enabled again")
	}
	if ops, _ := logOps(t, b, "log_rk", 0); ops != "BA" {
		t.Errorf("after enabling again the log holds %q, want %q (old pairs unmarked)", ops, "BA")
	}
	// Rows rendered as netRows does, in the table's column order (id,
	// code, v).
	want := []string{"DELETE 1 11 a", "INSERT 1 21 a"}
	window, table := bothReads(t, b, "rk_s")
	check(t, "window read", window, want)
	check(t, "read from the table", table, want)

	sqlExec(t, b, `UPDATE rk SET v = 'd' WHERE code = 21`)
	if ops, _ := logOps(t, b, "log_rk", 2); ops != "BU" {
		t.Errorf("an update under the new key logged %q, want %q", ops, "BU")
	}
	want = []string{"UPDATE_AFTER 1 21 d"}
	window, table = bothReads(t, b, "rk_s")
	check(t, "window read after enabling again", window, want)
	check(t, "read from the table after enabling again", table, want)
}

// TestKeyNotLoggedRefused: moving the primary key to a column added to
// the table after changes still pending in the log were logged is
// refused when tracking is enabled again (read under the new key, those
// changes would all fall on one NULL key), and changes nothing; once the
// streams have read them under the old key, the new key is accepted.
func TestKeyNotLoggedRefused(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE nl (id int PRIMARY KEY, v text)`, `INSERT INTO nl VALUES (1, 'a'), (2, 'b')`)
	track(t, b, "nl")
	mkStream(t, b, "nl_s", "nl", dsl.ModeStandard, false)
	toNewKey := []string{`ALTER TABLE nl DROP CONSTRAINT nl_pkey`, `ALTER TABLE nl ADD PRIMARY KEY (c2)`}
	sqlExec(t, b, `UPDATE nl SET v = 'x' WHERE id = 1`, // pending, logged without c2
		`ALTER TABLE nl ADD COLUMN c2 text`, `UPDATE nl SET c2 = 'n' || id`, `ALTER TABLE nl ALTER COLUMN c2 SET NOT NULL`)
	sqlExec(t, b, toNewKey...)
	err := b.EnableTracking(ctx, "nl")
	if !errors.Is(err, ErrKeyNotLogged) || !strings.Contains(err.Error(), "(c2)") {
		t.Fatalf("enable tracking under a key the pending changes lack: %v, want ErrKeyNotLogged naming (c2)", err)
	}
	tr, _, err := b.tracked(ctx, b.pool, "nl")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.PairedKey, []string{"id"}) {
		t.Errorf("paired key after the refusal %v, want [id] (nothing changed)", tr.PairedKey)
	}
	// The read brings the log in line with the new column first (as
	// enabling does), which refuses the same way.
	if err := readErr(t, b, "nl_s"); !errors.Is(err, ErrKeyNotLogged) {
		t.Errorf("read after the refusal: %v, want ErrKeyNotLogged", err)
	}

	// Back to the old key: tracking takes c2 as a column, the stream
	// reads its pending changes, with the values of c2 that the UPDATE
	// after the ADD COLUMN wrote (captured as JSON, moved into the log's
	// new column by the enable).
	sqlExec(t, b, `ALTER TABLE nl DROP CONSTRAINT nl_pkey`, `ALTER TABLE nl ADD PRIMARY KEY (id)`)
	track(t, b, "nl")
	window, _ := bothReads(t, b, "nl_s")
	check(t, "pending changes read under the old key", window, []string{"UPDATE_AFTER 1 x n1", "UPDATE_AFTER 2 b n2"})
	sqlExec(t, b, toNewKey...)
	track(t, b, "nl")
	sqlExec(t, b, `UPDATE nl SET v = 'y' WHERE c2 = 'n2'`)
	want := []string{"UPDATE_AFTER 2 y n2"}
	window, table := bothReads(t, b, "nl_s")
	check(t, "window read under the new key", window, want)
	check(t, "read from the table under the new key", table, want)
}
