package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/dsl"
)

// TestCaptureFollowsTheTable: capture is tied to the table (its oid),
// not to its name. Every statement below is the application's, on a
// plain connection. A renamed table — and one moved by SET SCHEMA — is
// still captured and read, TRUNCATE included; a table created under the
// old name is a different table, not tracked until tracking is enabled
// on it; dropping the tracked table makes the next read fail with
// ErrTableDropped saying how to go on, and every cleanup works after the
// drop.
func TestCaptureFollowsTheTable(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE ft (id int PRIMARY KEY, v text)`, `INSERT INTO ft VALUES (1, 'a'), (2, 'b')`)
	track(t, b, "ft")
	mkStream(t, b, "ft_s", "ft", dsl.ModeStandard, false)
	conn := connect(ctx, t, u)
	for _, q := range []string{
		`ALTER TABLE ft RENAME TO ft2`,
		`INSERT INTO ft2 VALUES (3, 'c')`,
		`CREATE TABLE ft (id int PRIMARY KEY, v text)`, // a new table under the old name
		`INSERT INTO ft VALUES (100, 'not tracked')`,
		`UPDATE ft2 SET v = 'b2' WHERE id = 2`,
		`TRUNCATE ft`, // must not log anything: ft is not tracked
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, got := read(t, b, "ft_s", true)
	check(t, "renamed table, new table under its old name", got, []string{"INSERT 3 c", "UPDATE_BEFORE 2 b", "UPDATE_AFTER 2 b2"})
	if _, err := conn.Exec(ctx, `TRUNCATE ft2`); err != nil {
		t.Fatalf("TRUNCATE of the renamed table: %v", err)
	}
	_, got = read(t, b, "ft_s", true)
	check(t, "TRUNCATE of the renamed table", sorted(got), []string{"DELETE 1 a", "DELETE 2 b2", "DELETE 3 c"})

	// The catalog follows the rename: the tracking and stream are
	// recorded under ft2. Enabling tracking under the new name keeps the
	// same tracking (and stream); the new ft is another table: no stream
	// on it until tracking is enabled on it, which starts its own.
	track(t, b, "ft2")
	var names []string
	if err := b.pool.QueryRow(ctx, `SELECT array_agg(table_name ORDER BY table_name) FROM (SELECT table_name FROM sluice.tracking UNION ALL SELECT table_name FROM sluice.streams) n`).Scan(&names); err != nil || strings.Join(names, " ") != "ft2 ft2" {
		t.Errorf("tracking and stream recorded as %q (%v), want both as ft2", names, err)
	}
	if err := b.CreateStream(ctx, &dsl.CreateStream{Stream: "ft_new", Table: "ft", Mode: dsl.ModeStandard}); !errors.Is(err, ErrNotTracked) {
		t.Errorf("stream on the new ft before tracking it: %v, want ErrNotTracked", err)
	}
	track(t, b, "ft")
	sqlExec(t, b, `CREATE SCHEMA other`)
	if _, err := conn.Exec(ctx, `ALTER TABLE ft2 SET SCHEMA other`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO other.ft2 VALUES (4, 'd')`); err != nil {
		t.Fatalf("insert after SET SCHEMA: %v", err)
	}
	if err := readErr(t, b, "ft_s"); !errors.Is(err, ErrNoTable) || !strings.Contains(err.Error(), "search_path") {
		t.Errorf("read after SET SCHEMA out of the search_path: %v, want ErrNoTable naming the search_path", err)
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE other.ft2 SET SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	_, got = read(t, b, "ft_s", true)
	check(t, "changes written while in another schema", got, []string{"INSERT 4 d"})

	// Dropped: the next read says so, and the cleanups work.
	if _, err := conn.Exec(ctx, `DROP TABLE ft2`); err != nil {
		t.Fatal(err)
	}
	err := readErr(t, b, "ft_s")
	if !errors.Is(err, ErrTableDropped) || !strings.Contains(err.Error(), "DROP TABLE STREAM ft_s") || !strings.Contains(err.Error(), "a merge target keeps the dropped table's rows: drop it first") {
		t.Fatalf("read after DROP TABLE: %v, want ErrTableDropped naming DROP TABLE STREAM ft_s", err)
	}
	if err := b.DropStream(ctx, "ft_s", false); err != nil {
		t.Fatalf("DROP TABLE STREAM after the drop: %v", err)
	}
	if err := b.DisableTracking(ctx, "ft2"); err != nil {
		t.Fatalf("disable tracking after the drop: %v", err)
	}
	// Left: the new ft's tracking, with a log of its own.
	var left []string
	if err := b.pool.QueryRow(ctx, `SELECT array_agg(x ORDER BY x) FROM (SELECT table_name || ' ' || log_table AS x FROM sluice.tracking UNION ALL SELECT relname::text FROM pg_class WHERE relname LIKE 'log_ft%' AND relkind = 'r') n`).Scan(&left); err != nil || strings.Join(left, ",") != "ft log_ft_2,log_ft_2" {
		t.Errorf("tracking rows and logs left after cleanup: %q, %v; want only the new ft's", left, err)
	}
	// The table under the old name is tracked from when it was enabled.
	mkStream(t, b, "ft_new", "ft", dsl.ModeStandard, false)
	if _, err := conn.Exec(ctx, `INSERT INTO ft VALUES (101, 'tracked now')`); err != nil {
		t.Fatal(err)
	}
	_, got = read(t, b, "ft_new", true)
	check(t, "the new table once tracked", got, []string{"INSERT 101 tracked now"})
}

// TestMissingTriggersFailLoudly: a tracked table whose capture trigger
// was dropped or disabled by hand fails the next read instead of reading
// nothing, and enabling tracking again reinstalls it.
func TestMissingTriggersFailLoudly(t *testing.T) {
	b, _ := openDB(t)
	sqlExec(t, b, `CREATE TABLE mt (id int PRIMARY KEY, v text)`)
	track(t, b, "mt")
	mkStream(t, b, "mt_s", "mt", dsl.ModeStandard, false)
	for _, ddl := range []string{`DROP TRIGGER sluice_capture_ins ON mt`, `ALTER TABLE mt DISABLE TRIGGER sluice_capture_upd`} {
		sqlExec(t, b, ddl, `INSERT INTO mt VALUES (1, 'a') ON CONFLICT (id) DO UPDATE SET v = 'a2'`)
		if err := readErr(t, b, "mt_s"); !errors.Is(err, ErrTriggersMissing) {
			t.Errorf("read after %s: %v, want ErrTriggersMissing", ddl, err)
		}
		track(t, b, "mt")
		sqlExec(t, b, `DELETE FROM mt`)
		if _, got := read(t, b, "mt_s", true); len(got) > 1 {
			t.Errorf("after enabling again: %q", got)
		}
	}
}

// TestDroppedPrimaryKey: a STANDARD stream on a table whose primary key
// was dropped fails with ErrNoPrimaryKey, before and after tracking is
// enabled again.
func TestDroppedPrimaryKey(t *testing.T) {
	b, _ := openDB(t)
	sqlExec(t, b, `CREATE TABLE pk (id int PRIMARY KEY, v text)`)
	track(t, b, "pk")
	mkStream(t, b, "pk_s", "pk", dsl.ModeStandard, false)
	sqlExec(t, b, `ALTER TABLE pk DROP CONSTRAINT pk_pkey`, `INSERT INTO pk VALUES (1, 'a')`)
	if err := readErr(t, b, "pk_s"); !errors.Is(err, ErrNoPrimaryKey) && !errors.Is(err, ErrTableChanged) {
		t.Errorf("read: %v, want ErrNoPrimaryKey or ErrTableChanged", err)
	}
	track(t, b, "pk")
	if err := readErr(t, b, "pk_s"); !errors.Is(err, ErrNoPrimaryKey) {
		t.Errorf("read after enabling again: %v, want ErrNoPrimaryKey", err)
	}
}
