package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
)

// TestRenameFollowsNotifyChannel: once the catalog follows a renamed
// table (the next sluice statement, here SHOW TABLE STREAMS' listing),
// its capture notifies the new name's channel, the one a serve of its
// streams listens on (NotifyChannel of the stream's table), not the old
// one; a new table under the old name, once tracked, notifies the old
// name's channel for its own writes only.
func TestRenameFollowsNotifyChannel(t *testing.T) {
	b, u := openDB(t)
	sqlExec(t, b, `CREATE TABLE nt (id int PRIMARY KEY)`)
	track(t, b, "nt")
	mkStream(t, b, "nt_s", "nt", "", false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net, not an assertion
	defer cancel()
	conn := connect(ctx, t, u)
	receive := listenUntilMarker(ctx, t, b, conn, NotifyChannel("nt"), NotifyChannel("nt2"))
	if err := RegisterListeners(ctx, conn, []string{NotifyChannel("nt"), NotifyChannel("nt2")}); err != nil {
		t.Fatal(err)
	}
	app := connect(ctx, t, u)
	for _, q := range []string{`ALTER TABLE nt RENAME TO nt2`, `CREATE TABLE nt (id int PRIMARY KEY)`} {
		if _, err := app.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	list, err := b.ListStreams(ctx)
	if err != nil || len(list) != 1 || list[0].Table != "nt2" {
		t.Fatalf("streams after the rename: %v, %v; want nt_s on nt2", list, err)
	}
	if _, err := app.Exec(ctx, `INSERT INTO nt2 VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	check(t, "the renamed table", receive(), []string{NotifyChannel("nt2")})
	track(t, b, "nt")
	mkStream(t, b, "new_s", "nt", "", false)
	for _, q := range []string{`INSERT INTO nt VALUES (1)`, `INSERT INTO nt2 VALUES (2)`} {
		if _, err := app.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	check(t, "the new table under the old name, then the renamed one", receive(), []string{NotifyChannel("nt"), NotifyChannel("nt2")})
}

// TestRenamedFrom: a name recorded longer than PostgreSQL's 63 bytes is
// the table it was truncated to, cut on a character boundary.
func TestRenamedFrom(t *testing.T) {
	long := "t_" + strings.Repeat("long", 20)
	wide := strings.Repeat("é", 40) // 80 bytes: 63 cuts inside the 32nd é
	for _, c := range []struct {
		key, cur string
		want     bool
	}{
		{"customers", "customers", false},
		{"customers", "clients", true},
		{long, long[:63], false},
		{long, long[:62], true},
		{wide, strings.Repeat("é", 31), false},
		{wide, strings.Repeat("é", 32), true},
	} {
		if got := renamedFrom(c.key, c.cur); got != c.want {
			t.Errorf("renamedFrom(%q, %q) = %v, want %v", c.key, c.cur, got, c.want)
		}
	}
}

// TestRenameSwapAndChain: names the application swaps between tracked
// tables (a ↔ b through a temporary name), and a chain (c → c_old, then
// d → c, the usual switch to a rebuilt copy) are followed: each stream is
// recorded on its own table under that table's name now, and reads it.
func TestRenameSwapAndChain(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c", "d"} {
		sqlExec(t, b, `CREATE TABLE `+n+` (id int PRIMARY KEY, v text)`)
		track(t, b, n)
		mkStream(t, b, n+"_s", n, "", false)
	}
	app := connect(ctx, t, u)
	for _, q := range []string{
		`ALTER TABLE a RENAME TO tmp`, `ALTER TABLE b RENAME TO a`, `ALTER TABLE tmp RENAME TO b`,
		`ALTER TABLE c RENAME TO c_old`, `ALTER TABLE d RENAME TO c`,
		`INSERT INTO a VALUES (1, 'was b')`, `INSERT INTO b VALUES (1, 'was a')`,
		`INSERT INTO c VALUES (1, 'was d')`, `INSERT INTO c_old VALUES (1, 'was c')`,
	} {
		if _, err := app.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	list, err := b.ListStreams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range list {
		got = append(got, s.Name+" "+s.Table)
	}
	check(t, "streams and their tables", got, []string{"a_s b", "b_s a", "c_s c_old", "d_s c"})
	for _, c := range []struct{ stream, want string }{{"a_s", "INSERT 1 was a"}, {"b_s", "INSERT 1 was b"}, {"c_s", "INSERT 1 was c"}, {"d_s", "INSERT 1 was d"}} {
		_, rows := read(t, b, c.stream, true)
		check(t, c.stream, rows, []string{c.want})
	}
	var keys []string
	if err := b.pool.QueryRow(ctx, `SELECT array_agg(table_name ORDER BY table_name) FROM sluice.tracking`).Scan(&keys); err != nil {
		t.Fatal(err)
	}
	check(t, "tracking recorded as", keys, []string{"a", "b", "c", "c_old"})
}

// TestSetSchemaNewTableUnderName: a tracked table moved by SET SCHEMA out
// of the search_path keeps being captured; a table the application then
// creates under its name is a different table: a stream on it is refused
// as untracked (not read from the moved table), and moving the tracked
// table back delivers what was written meanwhile.
func TestSetSchemaNewTableUnderName(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE st (id int PRIMARY KEY, v text)`)
	track(t, b, "st")
	mkStream(t, b, "st_s", "st", "", false)
	app := connect(ctx, t, u)
	for _, q := range []string{
		`CREATE SCHEMA archive`, `ALTER TABLE st SET SCHEMA archive`, `INSERT INTO archive.st VALUES (1, 'moved')`,
		`CREATE TABLE st (id int PRIMARY KEY, v text)`, `INSERT INTO st VALUES (100, 'new')`,
	} {
		if _, err := app.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := b.CreateStream(ctx, &dsl.CreateStream{Stream: "new_s", Table: "st"}); !errors.Is(err, ErrNotTracked) {
		t.Errorf("stream on the new st: %v, want ErrNotTracked", err)
	}
	for _, q := range []string{`DROP TABLE st`, `ALTER TABLE archive.st SET SCHEMA public`} {
		if _, err := app.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, got := read(t, b, "st_s", true)
	check(t, "written while in another schema", got, []string{"INSERT 1 moved"})
}

// TestShowStreamsAfterSetSchema: SHOW TABLE STREAMS lists every stream
// when one's tracked table was moved to a schema not on the connection's
// search_path (its pending changes cannot be counted: NULL), instead of
// failing as a whole; a read of that stream still says where the table is.
func TestShowStreamsAfterSetSchema(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	for _, tb := range []string{"sa", "sb"} {
		sqlExec(t, b, `CREATE TABLE `+tb+` (id int PRIMARY KEY)`)
		track(t, b, tb)
		mkStream(t, b, tb+"_s", tb, "", false)
	}
	app := connect(ctx, t, u)
	for _, q := range []string{`CREATE SCHEMA away`, `ALTER TABLE sa SET SCHEMA away`, `INSERT INTO away.sa VALUES (1)`, `INSERT INTO sb VALUES (1)`} {
		if _, err := app.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rs, err := b.showStreams(ctx)
	if err != nil {
		t.Fatalf("SHOW TABLE STREAMS: %v", err)
	}
	var names []string
	for _, r := range rs.Rows {
		names = append(names, r[0].(string))
		if r[0] == "sb_s" && r[7] == nil {
			t.Errorf("sb_s: oldest_unconsumed NULL, want the time of its pending insert")
		}
	}
	if strings.Join(names, ",") != "sa_s,sb_s" {
		t.Errorf("SHOW TABLE STREAMS lists %v, want sa_s, sb_s", names)
	}
	if _, err := b.Stream(ctx, plan.Source{Stream: "sa_s"}); !errors.Is(err, ErrNoTable) || !strings.Contains(err.Error(), `"away"."sa"`) {
		t.Errorf("reading sa_s: %v, want ErrNoTable naming away.sa", err)
	}
}
