package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
)

// TestDeadLetterPlanAndSQLJob: `sluice plan` names the dead-letter table
// and the fallback step, pushed down (the pushdown stays) and through
// sluice; a SQL job with "-- dead_letter:" pushed down on SQLite stores
// the row its target refuses (a NOT NULL) there and commits the others.
func TestDeadLetterPlanAndSQLJob(t *testing.T) {
	e := newEnv(t)
	e.sql("", `CREATE TABLE src (id INT, name STRING, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
INSERT INTO src VALUES (1, 'a'), (2, NULL), (3, 'c');`)
	if _, err := openSQLite(t, e.conn("src.db")).Exec(`CREATE TABLE tgt (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	job, err := dsl.ParseSQL("dl.sql", []byte("-- name: dlsql\n-- dead_letter: `tgt rejects`\nINSERT INTO tgt SELECT id, name FROM s\n"))
	if err != nil {
		t.Fatal(err)
	}
	prep, err := e.r.Plan(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := plan.Format(&b, prep.Plan); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dead letters: a row the sink rejects", "goes to table tgt rejects", "the pushdown stays", "on a value the target refuses: roll the pushed-down transaction back"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan does not say %q:\n%s", want, b.String())
		}
	}
	res, err := e.r.Run(context.Background(), prep)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.DeadLettered != 1 {
		t.Errorf("dead-lettered %d, want 1", res.Stats.DeadLettered)
	}
	if got := e.sql("", "SELECT id FROM tgt ORDER BY id"); !equalRows(got, [][]string{{"1"}, {"3"}}) {
		t.Errorf("target %v, want ids 1 and 3", got)
	}
	if got := readDeadLetters(t, openSQLite(t, e.conn("src.db")), "tgt rejects", "dlsql"); len(got) != 1 || got[0].Key != `{"id":2}` || !strings.Contains(got[0].Err, "NOT NULL") {
		t.Errorf("dead letters %+v, want id 2's NOT NULL", got)
	}
	if p := e.pending("s"); len(p) != 0 {
		t.Errorf("pending %v, want none", p)
	}

	through := e.job("t.yaml", "name: thr\nsource: s\nsink: {table: t2, connection: "+e.conn("other.db")+", dead_letter: rej}\n")
	prep, err = e.r.Plan(context.Background(), through)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := plan.Format(&b, prep.Plan); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "goes to table rej") || strings.Contains(s, "pushdown stays") || !strings.Contains(s, "bisected to the rows that fail alone") {
		t.Errorf("plan through sluice:\n%s", s)
	}
}
