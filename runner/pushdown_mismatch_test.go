package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestPushdownTypeMismatchRunsThrough: a same-database merge whose
// target column has another type than the source's (source text, target
// timestamp: a type change that is not a widening) cannot be pushed down
// (the MERGE assigns text to timestamp: SQLSTATE 42804, for every value);
// the run goes through sluice instead, which converts each value, and a
// value that does not convert fails the run naming the row's key and the
// column, offset unmoved.
func TestPushdownTypeMismatchRunsThrough(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	e := newEnv(t)
	pgExec(t, pg, "CREATE TABLE tm (id int PRIMARY KEY, q text)")
	pgExec(t, pg, "CREATE TABLE tm_t (id int PRIMARY KEY, q timestamp)")
	e.sql(pg, "ALTER TABLE tm SET PROPERTIES ('change_tracking' = 'true')")
	e.sql(pg, "CREATE TABLE STREAM s_tm ON TABLE tm WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
	job := e.job("tm.yaml", "connection: '"+pg+"'\nname: tm\nsource: s_tm\nsink: {table: tm_t, mode: merge, keys: [id]}\n")
	pgExec(t, pg, "INSERT INTO tm VALUES (1, '2024-01-02 03:04:05.5'), (2, NULL)")
	if _, err := e.run(job); err != nil {
		t.Fatalf("run: %v", err)
	}
	c, err := pgx.Connect(context.Background(), pg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var same bool
	if err := c.QueryRow(context.Background(), `SELECT array_agg(q ORDER BY id) IS NOT DISTINCT FROM ARRAY['2024-01-02 03:04:05.5'::timestamp, NULL] FROM tm_t`).Scan(&same); err != nil || !same {
		t.Errorf("target rows not the source's, converted (err %v)", err)
	}
	pgExec(t, pg, "UPDATE tm SET q = 'abc' WHERE id = 2")
	_, err = e.run(job)
	if err == nil {
		t.Fatal("a run writing 'abc' into a timestamp succeeded")
	}
	for _, want := range []string{"id=2", "q", "abc"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if got := e.sql(pg, "SELECT count(*) FROM tm_t WHERE q IS NULL"); got[0][0] != "1" {
		t.Errorf("the failed run changed the target: %v", got)
	}
}
