package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/dsl"
)

// TestAddColumnWithoutKey: on a tracked table without a primary key (an
// APPEND_ONLY stream), a column added with a constant DEFAULT reaches the
// change logged before the ALTER with its missing value, and one added
// without a DEFAULT that no row holds a value of yet with NULL (the
// expected rows read from the table itself); a column added with a volatile DEFAULT
// cannot be re-read by key for the changes logged before it, so the read
// refuses (ErrTableChanged), naming the table, the column and the way on,
// and the application's writes still succeed. Statements come from a plain
// connection, no sluice command in between.
func TestAddColumnWithoutKey(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE nk (a int, b text)`)
	track(t, b, "nk")
	mkStream(t, b, "nk_s", "nk", dsl.ModeAppendOnly, false)
	conn := connect(ctx, t, u)
	for _, q := range []string{`INSERT INTO nk VALUES (1, 'x')`, `ALTER TABLE nk ADD COLUMN c int DEFAULT 7`, `ALTER TABLE nk ALTER COLUMN c SET DEFAULT 8`, `ALTER TABLE nk ADD COLUMN n int`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, got := read(t, b, "nk_s", true)
	want := tableRowsAll(t, b, `SELECT a, b, c, n FROM nk WHERE a = 1`)
	check(t, "constant DEFAULT on a table without a key", got, []string{"INSERT " + want[0]})

	for _, q := range []string{`INSERT INTO nk VALUES (2, 'y')`, `ALTER TABLE nk ADD COLUMN r float8 DEFAULT random()`, `INSERT INTO nk (a) VALUES (3)`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("the application's %s failed: %v", q, err)
		}
	}
	err := readErr(t, b, "nk_s")
	if !errors.Is(err, ErrTableChanged) {
		t.Fatalf("read after a volatile DEFAULT on a table without a key: %v, want ErrTableChanged", err)
	}
	for _, w := range []string{`"r"`, `"nk"`, "no primary key", "sluice backfill"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %s", err, w)
		}
	}
}

// TestAddColumnRereadAfterCrash: a run that brings the log in line after
// an ADD COLUMN with a volatile DEFAULT records the re-read of the typed
// rows logged before it in its first transaction and does it in its
// second; when only the first committed (a crash in between), the mark
// stays, every read refuses until it is done, and the next run does it:
// the change logged before the ALTER arrives with the value the table
// holds (read from the table itself), and the mark is gone.
func TestAddColumnRereadAfterCrash(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE rr (id int PRIMARY KEY, v text)`)
	track(t, b, "rr")
	mkStream(t, b, "rr_s", "rr", dsl.ModeStandard, false)
	conn := connect(ctx, t, u)
	for _, q := range []string{`INSERT INTO rr VALUES (1, 'a')`, `ALTER TABLE rr ADD COLUMN r float8 DEFAULT random()`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tr, ok, err := b.tracked(ctx, b.pool, "rr")
	if err != nil || !ok {
		t.Fatalf("tracked: %v %v", ok, err)
	}
	// The run's first transaction alone.
	if err := pgx.BeginTxFunc(ctx, b.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		_, err := b.alignLog(ctx, tx, tr.Key, false)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if p, err := pendingRereads(ctx, b.pool, tr); err != nil || len(p) != 1 {
		t.Fatalf("after the first transaction: pending re-reads %v, %v; want one for r", p, err)
	}
	if err := b.checkLog(ctx, b.pool, tr); !errors.Is(err, ErrTableChanged) {
		t.Fatalf("a read with a re-read pending: %v, want ErrTableChanged", err)
	}
	_, got := read(t, b, "rr_s", true)
	want := tableRowsAll(t, b, `SELECT id, v, r FROM rr WHERE id = 1`)
	check(t, "change logged before the ALTER", got, []string{"INSERT " + want[0]})
	if p, err := pendingRereads(ctx, b.pool, tr); err != nil || len(p) != 0 {
		t.Fatalf("after the read: pending re-reads %v, %v; want none", p, err)
	}
}
