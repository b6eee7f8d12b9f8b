package runner_test

import (
	"strings"
	"testing"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
)

// TestBackfillEngineHistory: a history target backfilled inside SQLite
// holds one current version per row.
func TestBackfillEngineHistory(t *testing.T) {
	for _, s := range engineSinks {
		t.Run(s.name, func(t *testing.T) {
			e := newEnv(t)
			logs := logTo(e)
			e.items(10)
			conn := ""
			sink := "table: h, mode: history, keys: [id]"
			if s.file != "" {
				conn = e.conn(s.file)
				sink += ", connection: " + conn
			}
			j := e.job("j.yaml", "source: items_s\nselect: [id, name, amount]\nsink: {"+sink+"}\n")
			if _, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 3}); err != nil {
				t.Fatal(err)
			}
			if got := e.rows(conn, "SELECT count(*), count(DISTINCT id), sum(__valid_to IS NULL) FROM h"); got != "[[10 10 10]]" {
				t.Errorf("history target = %s, want 10 current versions", got)
			}
			if strings.Contains(logs.String(), "through sluice") {
				t.Errorf("the copy went through sluice:\n%s", logs)
			}
		})
	}
}

// TestBackfillEngineMergeInto: a SQL MERGE INTO job's backfill runs its
// clauses over each chunk inside SQLite.
func TestBackfillEngineMergeInto(t *testing.T) {
	e := newEnv(t)
	logs := logTo(e)
	e.items(10)
	e.sql("", "CREATE TABLE tgt (id INT, name STRING, amount DECIMAL(10,2), PRIMARY KEY (id))")
	job, err := dsl.ParseJob("m.sql", []byte("MERGE INTO tgt AS t USING (SELECT id, name, amount FROM items_s) AS s ON t.id = s.id\n"+
		"WHEN MATCHED THEN UPDATE SET t.name = s.name, t.amount = s.amount WHEN NOT MATCHED THEN INSERT (id, name, amount) VALUES (s.id, s.name, s.amount);\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.backfill(t.Context(), job, runner.BackfillOptions{Chunk: 3}); err != nil {
		t.Fatal(err)
	}
	if src, dst := e.rows("", itemsQuery), e.rows("", "SELECT id, name, amount FROM tgt ORDER BY id"); src != dst {
		t.Fatalf("target differs from source:\n src %s\n dst %s", src, dst)
	}
	if strings.Contains(logs.String(), "through sluice") {
		t.Errorf("the copy went through sluice:\n%s", logs)
	}
}
