package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
)

// TestNewPrimaryKeyFollowed: the primary key redefined on a tracked table
// (DROP CONSTRAINT, ADD PRIMARY KEY (id, region)) between two reads, with
// writes before and after from a plain connection: the next read enables
// tracking again itself (nobody runs the statement) and delivers the net
// changes per new key — an UPDATE logged under the old key, a second row
// of one id under another region, and an UPDATE that moves a row to
// another region (a delete of the old key, an insert of the new). The
// expected rows are read from the table.
func TestNewPrimaryKeyFollowed(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE nk (id int PRIMARY KEY, region text NOT NULL, v int)`, `INSERT INTO nk VALUES (1, 'eu', 1), (2, 'us', 2)`)
	track(t, b, "nk")
	mkStream(t, b, "nk_s", "nk", dsl.ModeStandard, false)
	conn := connect(ctx, t, u)
	for _, q := range []string{
		`UPDATE nk SET v = 10 WHERE id = 1`,
		`ALTER TABLE nk DROP CONSTRAINT nk_pkey`,
		`ALTER TABLE nk ADD PRIMARY KEY (id, region)`,
		`INSERT INTO nk VALUES (1, 'us', 5)`,
		`UPDATE nk SET region = 'ap' WHERE id = 2`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("the application's %s failed: %v", q, err)
		}
	}
	row := func(where string) string {
		return tableRowsAll(t, b, `SELECT * FROM nk WHERE `+where+` -- new key`)[0]
	}
	want := []string{"UPDATE_AFTER " + row("id = 1 AND region = 'eu'"), "INSERT " + row("id = 1 AND region = 'us'"),
		"INSERT " + row("id = 2 AND region = 'ap'"), "DELETE 2 us"}
	chs, got := read(t, b, "nk_s", true)
	var keyed []string
	for i, c := range chs {
		switch c.Op.String() {
		case "UPDATE_BEFORE":
		case "DELETE":
			keyed = append(keyed, strings.Join(strings.Fields(got[i])[:3], " "))
		default:
			keyed = append(keyed, got[i])
		}
	}
	check(t, "net changes under the new key", sorted(keyed), sorted(want))
	var paired []string
	if err := b.pool.QueryRow(ctx, `SELECT paired_key FROM sluice.tracking WHERE table_name = 'nk'`).Scan(&paired); err != nil {
		t.Fatal(err)
	}
	check(t, "the key the capture pairs under", paired, []string{"id", "region"})
}

// TestNewPrimaryKeyRefused: a new primary key on a column added after
// changes were logged that no stream has read: those changes have no
// value for it, so the read refuses (ErrKeyNotLogged), naming the
// statement that restores the old key, reads and moves nothing; once the
// old key is back the read delivers every change: the row inserted and
// deleted before the key column existed nets out, the later one arrives
// as the table has it.
func TestNewPrimaryKeyRefused(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE nr (id int PRIMARY KEY, v int)`)
	track(t, b, "nr")
	mkStream(t, b, "nr_s", "nr", dsl.ModeStandard, false)
	conn := connect(ctx, t, u)
	for _, q := range []string{
		`INSERT INTO nr VALUES (1, 1)`,
		`DELETE FROM nr`,
		`ALTER TABLE nr ADD COLUMN region text NOT NULL`,
		`ALTER TABLE nr DROP CONSTRAINT nr_pkey, ADD PRIMARY KEY (id, region)`,
		`INSERT INTO nr VALUES (2, 2, 'us')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("the application's %s failed: %v", q, err)
		}
	}
	s, err := b.Stream(ctx, plan.Source{Stream: "nr_s"})
	if !errors.Is(err, ErrKeyNotLogged) || !strings.Contains(err.Error(), `ALTER TABLE "nr" DROP CONSTRAINT "nr_pkey", ADD PRIMARY KEY ("id")`) {
		t.Fatalf("read after the new key: stream %v, error %v; want ErrKeyNotLogged naming the statement that restores the key", s, err)
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE nr DROP CONSTRAINT nr_pkey, ADD PRIMARY KEY (id)`); err != nil {
		t.Fatal(err)
	}
	_, got := read(t, b, "nr_s", true)
	want := []string{"INSERT " + tableRowsAll(t, b, `SELECT * FROM nr WHERE id = 2 -- old key`)[0]} // key 1: inserted and deleted
	check(t, "after the old key is back", sorted(got), sorted(want))
}
