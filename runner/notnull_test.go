package runner_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// TestSQLitePushdownNotNullNamesRow: on SQLite too, a pushed-down merge
// that writes NULL into a NOT NULL column of the target fails naming the
// row's key and the column (the run is replayed through sluice, which
// notes the rows it stages); nothing is written and, once the data is
// fixed at the source, the next run applies every pending change.
func TestSQLitePushdownNotNullNamesRow(t *testing.T) {
	e := newEnv(t)
	e.sql("", `
CREATE TABLE src (id INT, name STRING, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM src_s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
INSERT INTO src VALUES (1, 'a'), (2, NULL), (3, 'c');
`)
	db, err := sql.Open("sqlite", filepath.Join(e.dir, "src.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE tgt (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	job := e.job("push.yaml", "source: src_s\nsink: {table: tgt, mode: merge, keys: [id]}\n")
	_, err = e.run(job)
	if err == nil {
		t.Fatal("run succeeded; want the failure of id 2")
	}
	for _, want := range []string{"key (id=2)", `column "name"`, "NOT NULL", "pushed-down run failed", "nothing committed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if got := e.sql("", "SELECT count(*) FROM tgt"); !equalRows(got, [][]string{{"0"}}) {
		t.Errorf("target rows after the failed run: %v, want none", got)
	}
	e.sql("", `UPDATE src SET name = 'b' WHERE id = 2`)
	if _, err := e.run(job); err != nil {
		t.Fatal(err)
	}
	if got := e.sql("", "SELECT id, name FROM tgt ORDER BY id"); !equalRows(got, [][]string{{"1", "a"}, {"2", "b"}, {"3", "c"}}) {
		t.Errorf("target after the fix: %v", got)
	}
}
