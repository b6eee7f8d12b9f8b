package runner_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/runner"
	_ "modernc.org/sqlite"
)

// dlRow is a dead letter as the test reads it back from the table.
type dlRow struct {
	Key, Op, Row, Err string
}

// readDeadLetters reads job's dead letters from table of the SQLite file
// path, in id order.
func readDeadLetters(t *testing.T, db *sql.DB, table, job string) []dlRow {
	t.Helper()
	rows, err := db.Query(`SELECT "key", "change_type", "row", "error" FROM "`+table+`" WHERE "job" = ? ORDER BY "id"`, job)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []dlRow
	for rows.Next() {
		var d dlRow
		if err := rows.Scan(&d.Key, &d.Op, &d.Row, &d.Err); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// TestSQLiteDeadLetterKinds: a cross-database merge into a SQLite target
// whose constraints refuse some rows — a CHECK, a NOT NULL, a length (a
// CHECK on length), a DECIMAL too wide for its column (a conversion), a
// UNIQUE value another target row holds — stores each refused row in the
// dead-letter table with its key, change type and the reason; the good
// rows of the same window land, the offset moves, and a second run
// delivers nothing again (on_schema_change: ignore keeps the narrower
// DECIMAL as it is).
func TestSQLiteDeadLetterKinds(t *testing.T) {
	e := newEnv(t)
	e.sql("", `
CREATE TABLE src (id INT, name STRING, qty INT, price DECIMAL(10,2), email STRING, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM src_s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
`)
	tdb, err := sql.Open("sqlite", filepath.Join(e.dir, "tgt.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer tdb.Close()
	if _, err := tdb.Exec(`CREATE TABLE tgt (id INTEGER PRIMARY KEY, name TEXT NOT NULL CHECK (length(name) <= 5), qty INTEGER CHECK (qty >= 0), price DECIMAL_TEXT(4,2), email TEXT UNIQUE);
INSERT INTO tgt VALUES (100, 'old', 1, '1.00', 'taken@x')`); err != nil {
		t.Fatal(err)
	}
	e.sql("", `INSERT INTO src VALUES
 (1, 'ok1', 1, 1.00, 'a@x'),
 (2, 'neg', -1, 1.00, 'b@x'),
 (3, NULL, 1, 1.00, 'c@x'),
 (4, 'toolongname', 1, 1.00, 'd@x'),
 (5, 'wide', 1, 123.45, 'e@x'),
 (6, 'dup', 1, 1.00, 'taken@x'),
 (7, 'ok7', 7, 7.00, 'g@x')`)
	job := e.job("dl.yaml", "name: dl\nsource: src_s\nsink: {table: tgt, mode: merge, keys: [id], connection: "+e.conn("tgt.db")+", dead_letter: tgt_rejects, on_schema_change: ignore}\n")
	res, err := e.run(job)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.DeadLettered != 5 {
		t.Errorf("dead-lettered %d, want 5", res.Stats.DeadLettered)
	}
	got := readDeadLetters(t, tdb, "tgt_rejects", "dl")
	want := []struct{ key, reason string }{
		{`{"id":2}`, "CHECK constraint failed"},
		{`{"id":3}`, "NOT NULL"},
		{`{"id":4}`, "CHECK constraint failed"},
		{`{"id":5}`, "price"},
		{`{"id":6}`, "UNIQUE constraint failed"},
	}
	if len(got) != len(want) {
		t.Fatalf("dead letters %v, want %d", got, len(want))
	}
	for i, w := range want {
		if got[i].Key != w.key || got[i].Op != "INSERT" || !strings.Contains(got[i].Err, w.reason) {
			t.Errorf("dead letter %d = %+v, want key %s, INSERT, error containing %q", i, got[i], w.key, w.reason)
		}
	}
	if want := `{"id":5,"name":"wide","qty":1,"price":"123.45","email":"e@x"}`; got[3].Row != want {
		t.Errorf("row of id 5 = %s, want %s", got[3].Row, want)
	}
	if rows := e.sql(e.conn("tgt.db"), "SELECT id FROM tgt ORDER BY id"); !equalRows(rows, [][]string{{"1"}, {"7"}, {"100"}}) {
		t.Errorf("target ids %v, want 1, 7, 100", rows)
	}
	if p := e.pending("src_s"); len(p) != 0 {
		t.Errorf("pending after the run: %v, want none (the offset moved)", p)
	}
	res, err = e.run(job)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.DeadLettered != 0 || sum(res.Stats.Read) != 0 {
		t.Errorf("second run read %v, dead-lettered %d; want nothing", res.Stats.Read, res.Stats.DeadLettered)
	}
	if got := readDeadLetters(t, tdb, "tgt_rejects", "dl"); len(got) != 5 {
		t.Errorf("dead letters after the second run: %d, want 5", len(got))
	}
	_ = context.Background
	_ = runner.NotRejected
}
