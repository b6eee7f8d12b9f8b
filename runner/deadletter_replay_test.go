package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestPostgresDeadLetterReplayAndPurge: after the target is fixed (its
// CHECK dropped, its varchar widened), a replay writes the dead letters
// the sink now takes (ids 2 and 4) with their stored values and moves them
// out of the table, in one transaction; the others (NOT NULL, numeric
// overflow, the duplicate email) stay. A second replay changes nothing;
// purge empties the job's dead letters.
func TestPostgresDeadLetterReplayAndPurge(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	e.sql(pg, `CREATE TABLE src (id INT, name STRING, qty INT, price DECIMAL(10,2), email STRING, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');`)
	e.sql(pg, dlSourceRows)
	pgExec(t, other, strings.ReplaceAll(dlPGTarget, "%s", "t"))
	job := e.job("replay.yaml", "name: rp\nconnection: '"+pg+"'\nsource: s\nsink: {table: t, mode: merge, keys: [id], dead_letter: rejects, on_schema_change: ignore, connection: '"+other+"'}\n")
	if _, err := e.run(job); err != nil {
		t.Fatal(err)
	}
	pgExec(t, other, `ALTER TABLE t DROP CONSTRAINT t_qty_check; ALTER TABLE t ALTER COLUMN name TYPE varchar(20)`)
	prep, err := e.r.Plan(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.r.ReplayDeadLetters(context.Background(), prep)
	if err != nil {
		t.Fatal(err)
	}
	if res.Replayed != 2 || res.Remaining != 3 {
		t.Errorf("replayed %d, remaining %d; want 2 and 3", res.Replayed, res.Remaining)
	}
	if got := pgScalar(t, other, "SELECT string_agg(id || ':' || name || ':' || qty || ':' || price, ',' ORDER BY id) FROM t"); got != "1:ok1:1:1.00,2:neg:-1:1.00,4:toolongname:1:1.00,7:ok7:7:7.00,100:old:1:1.00" {
		t.Errorf("target after the replay: %s", got)
	}
	if got := pgScalar(t, other, `SELECT string_agg("key"->>'id', ',' ORDER BY id) FROM rejects`); got != "3,5,6" {
		t.Errorf("dead letters left: %s, want 3,5,6", got)
	}
	res, err = e.r.ReplayDeadLetters(context.Background(), prep)
	if err != nil {
		t.Fatal(err)
	}
	if res.Replayed != 0 || res.Remaining != 3 {
		t.Errorf("second replay: replayed %d, remaining %d; want 0 and 3", res.Replayed, res.Remaining)
	}
	dls, err := e.r.DeadLetters(context.Background(), prep)
	if err != nil || len(dls) != 3 || dls[0].Key != `{"id": 3}` {
		t.Fatalf("listed %+v, %v; want 3 dead letters, the first of id 3", dls, err)
	}
	n, err := e.r.PurgeDeadLetters(context.Background(), prep)
	if err != nil || n != 3 {
		t.Fatalf("purged %d, %v; want 3", n, err)
	}
	if got := pgScalar(t, other, `SELECT count(*)::text FROM rejects`); got != "0" {
		t.Errorf("%s dead letters after the purge", got)
	}
}

// TestSQLiteDeadLetterReplay: a row dead-lettered for a UNIQUE value
// another target row held goes in once that row is gone.
func TestSQLiteDeadLetterReplay(t *testing.T) {
	e := newEnv(t)
	e.sql("", `CREATE TABLE src (id INT, email STRING, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
INSERT INTO src VALUES (1, 'a'), (2, 'taken'), (3, 'c');`)
	tdb := openSQLite(t, e.conn("tgt.db"))
	if _, err := tdb.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT UNIQUE); INSERT INTO t VALUES (100, 'taken')`); err != nil {
		t.Fatal(err)
	}
	job := e.job("r.yaml", "name: r\nsource: s\nsink: {table: t, mode: merge, keys: [id], dead_letter: \"`dead letters`\", connection: "+e.conn("tgt.db")+"}\n")
	res, err := e.run(job)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.DeadLettered != 1 {
		t.Fatalf("dead-lettered %d, want 1", res.Stats.DeadLettered)
	}
	if _, err := tdb.Exec(`DELETE FROM t WHERE id = 100`); err != nil {
		t.Fatal(err)
	}
	prep, err := e.r.Plan(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := e.r.ReplayDeadLetters(context.Background(), prep)
	if err != nil || rr.Replayed != 1 || rr.Remaining != 0 {
		t.Fatalf("replay: %+v, %v; want 1 replayed", rr, err)
	}
	if got := e.sql(e.conn("tgt.db"), "SELECT id, email FROM t ORDER BY id"); !equalRows(got, [][]string{{"1", "a"}, {"2", "taken"}, {"3", "c"}}) {
		t.Errorf("target after the replay: %v", got)
	}
	if got := readDeadLetters(t, tdb, "dead letters", "r"); len(got) != 0 {
		t.Errorf("dead letters left: %v", got)
	}
}

// TestDeadLetterNotForOtherFailures: failures that are not about one
// row's value — a foreign key to a parent row the target database lacks,
// a refused permission raised by a trigger — fail the run as without a
// dead-letter table: nothing is written, the dead-letter table is not
// created, the offset does not move.
func TestDeadLetterNotForOtherFailures(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	e.sql(pg, `CREATE TABLE src (id INT, parent INT, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s1 ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
CREATE TABLE STREAM s2 ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
INSERT INTO src VALUES (1, 10), (2, 99);`)
	pgExec(t, other, `CREATE TABLE parent (id integer PRIMARY KEY); INSERT INTO parent VALUES (10);
CREATE TABLE t_fk (id integer PRIMARY KEY, parent integer REFERENCES parent (id));
CREATE TABLE t_perm (id integer PRIMARY KEY, parent integer);
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'permission denied for table t_perm' USING ERRCODE = '42501'; END $$;
CREATE TRIGGER refuse BEFORE INSERT ON t_perm FOR EACH ROW WHEN (NEW.id = 2) EXECUTE FUNCTION refuse();`)
	for _, c := range []struct{ stream, table, want string }{{"s1", "t_fk", "foreign key"}, {"s2", "t_perm", "permission denied"}} {
		job := e.job(c.table+".yaml", "name: "+c.table+"\nconnection: '"+pg+"'\nsource: "+c.stream+"\nsink: {table: "+c.table+", mode: merge, keys: [id], dead_letter: rejects, on_schema_change: ignore, connection: '"+other+"'}\n")
		_, err := e.run(job)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: run error %v, want one containing %q", c.table, err, c.want)
		}
		if got := pgScalar(t, other, "SELECT count(*)::text FROM "+c.table); got != "0" {
			t.Errorf("%s holds %s rows after the failed run, want none", c.table, got)
		}
		if got := pgScalar(t, other, "SELECT (to_regclass('rejects') IS NOT NULL)::text"); got != "false" {
			t.Errorf("%s: the dead-letter table exists after a failure that is no row's value", c.table)
		}
		if n := pendingOn(t, e, pg, c.stream); n != 2 {
			t.Errorf("%s: %d changes pending after the failed run, want 2 (the offset did not move)", c.table, n)
		}
	}
}
