package runner_test

import (
	"strings"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestDeadLetterUniqueOnlyWhenUnavoidable: a window where keys 1 and 2
// swap their UNIQUE emails (batches of two: the swap spans batches, and
// each alone conflicts with the other's old row) and key 3 takes an email
// that a target row outside the window holds: with a dead-letter table,
// only key 3 is dead-lettered; 1 and 2 land swapped, on a PostgreSQL and a
// SQLite target.
func TestDeadLetterUniqueOnlyWhenUnavoidable(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	e.sql(pg, `CREATE TABLE u (id INT, email STRING, PRIMARY KEY (id));
INSERT INTO u VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e');
ALTER TABLE u SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s1 ON TABLE u WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE');
CREATE TABLE STREAM s2 ON TABLE u WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE');`)
	pgExec(t, other, `CREATE TABLE tu (id integer PRIMARY KEY, email text UNIQUE)`)
	if _, err := openSQLite(t, e.conn("tu.db")).Exec(`CREATE TABLE tu (id INTEGER PRIMARY KEY, email TEXT UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	jobs := []struct{ name, stream, dst string }{{"upg", "s1", other}, {"ulite", "s2", e.conn("tu.db")}}
	for _, j := range jobs {
		job := e.job(j.name+".yaml", "name: "+j.name+"\nconnection: '"+pg+"'\nsource: "+j.stream+"\nsink: {table: tu, mode: merge, keys: [id], dead_letter: rejects, connection: '"+j.dst+"'}\n")
		if _, err := e.run(job); err != nil {
			t.Fatal(err)
		}
	}
	// The target holds a row the source does not: 99 with 'x'.
	pgExec(t, other, `INSERT INTO tu VALUES (99, 'x')`)
	e.sql(e.conn("tu.db"), `INSERT INTO tu VALUES (99, 'x')`)
	pgExec(t, pg, `BEGIN; UPDATE u SET email = 'tmp' WHERE id = 1; UPDATE u SET email = 'a' WHERE id = 2; UPDATE u SET email = 'b' WHERE id = 1; COMMIT;
UPDATE u SET email = 'x' WHERE id = 3; UPDATE u SET email = 'dd' WHERE id = 4;`)
	for _, j := range jobs {
		job := e.job(j.name+".yaml", "name: "+j.name+"\nconnection: '"+pg+"'\nsource: "+j.stream+"\nsink: {table: tu, mode: merge, keys: [id], dead_letter: rejects, connection: '"+j.dst+"'}\n")
		res, err := e.run(job)
		if err != nil {
			t.Fatal(err)
		}
		if res.Stats.DeadLettered != 1 {
			t.Errorf("%s: dead-lettered %d, want 1 (key 3)", j.name, res.Stats.DeadLettered)
		}
		got := e.sql(j.dst, "SELECT id, email FROM tu ORDER BY id")
		want := [][]string{{"1", "b"}, {"2", "a"}, {"3", "c"}, {"4", "dd"}, {"5", "e"}, {"99", "x"}}
		if !equalRows(got, want) {
			t.Errorf("%s: target %v, want %v", j.name, got, want)
		}
	}
	if got := pgDeadLetters(t, other, "rejects", "upg"); len(got) != 1 || got[0].Key != `{"id": 3}` || got[0].Op != "UPDATE_AFTER" || !strings.Contains(got[0].Err, "duplicate key") {
		t.Errorf("postgres dead letters %+v, want key 3's UPDATE_AFTER with the duplicate key", got)
	}
	if got := readDeadLetters(t, openSQLite(t, e.conn("tu.db")), "rejects", "ulite"); len(got) != 1 || got[0].Key != `{"id":3}` || got[0].Op != "UPDATE_AFTER" || !strings.Contains(got[0].Err, "UNIQUE") {
		t.Errorf("sqlite dead letters %+v, want key 3's UPDATE_AFTER with the UNIQUE constraint", got)
	}
}
