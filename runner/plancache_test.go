package runner_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/runner"
)

// TestPlanCacheFollowsDDL runs a pushed-down PostgreSQL job through a
// PlanCache and, in a second database, the same job planned for every
// run (Runner.RunJob), through the same steps: a row inserted before each
// run, and between runs no DDL, ALTER TABLE ADD/RENAME/DROP COLUMN on the
// source, DDL on the target, the target dropped, and the stream dropped
// and created again. After each run the cached job's target holds what
// the uncached one's does (to_jsonb of every row), its error is the
// uncached one's (a stream created again is ErrStreamReplaced, not the
// cached plan's "recreated since the plan was made"), and the plan was
// reused exactly when no DDL ran since the version read before the run
// before (the runs' own DDL — the target evolved or created — counts).
func TestPlanCacheFollowsDDL(t *testing.T) {
	cached, fresh := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	e := newEnv(t)
	for _, db := range []string{cached, fresh} {
		pgExec(t, db, `CREATE TABLE t (id int PRIMARY KEY, v text); CREATE TABLE r (id int PRIMARY KEY, v text)`)
		e.sql(db, `ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');`)
	}
	jobOf := func(db string) string {
		return "name: j\nconnection: '" + db + "'\nsource: s\nsink: {table: r, mode: append}\n"
	}
	jc := e.job("cached.yaml", jobOf(cached))
	jf := e.job("fresh.yaml", jobOf(fresh))
	cache := runner.NewPlanCache(e.r)
	steps := []struct {
		name   string
		ddl    string // on both databases before the row is inserted
		insert string
		reused bool // the cached job's run reuses the previous run's plan
	}{
		{"first run", "", "INSERT INTO t VALUES (1, 'a')", false},
		{"no DDL", "", "INSERT INTO t VALUES (2, 'b')", true},
		{"no DDL again", "", "INSERT INTO t VALUES (3, 'c')", true},
		{"ADD COLUMN", "ALTER TABLE t ADD COLUMN w text", "INSERT INTO t VALUES (4, 'd', 'x')", false},
		// That run added w to the target (evolve) after the version was
		// read: the next run plans again, the one after reuses.
		{"after ADD COLUMN", "", "INSERT INTO t VALUES (5, 'e', 'y')", false},
		{"after ADD COLUMN again", "", "INSERT INTO t VALUES (50, 'e', 'y')", true},
		{"RENAME COLUMN", "ALTER TABLE t RENAME COLUMN w TO w2", "INSERT INTO t VALUES (6, 'f', 'z')", false},
		{"DROP COLUMN", "ALTER TABLE t DROP COLUMN w2", "INSERT INTO t VALUES (7, 'g')", false},
		{"target ADD COLUMN with a default", "ALTER TABLE r ADD COLUMN extra int NOT NULL DEFAULT 5", "INSERT INTO t VALUES (8, 'h')", false},
		{"target column comment", "COMMENT ON COLUMN r.v IS 'note'", "INSERT INTO t VALUES (9, 'i')", false},
		{"target dropped", "DROP TABLE r", "INSERT INTO t VALUES (10, 'j')", false},
		// That run created the target again.
		{"after the target came back", "", "INSERT INTO t VALUES (11, 'k')", false},
		{"no DDL after the target came back", "", "INSERT INTO t VALUES (110, 'k')", true},
	}
	var prev *runner.Prepared
	for _, st := range steps {
		for _, db := range []string{cached, fresh} {
			if st.ddl != "" {
				pgExec(t, db, st.ddl)
			}
			pgExec(t, db, st.insert)
		}
		_, errC := cache.Run(context.Background(), jc)
		_, errF := e.r.RunJob(context.Background(), jf)
		if (errC == nil) != (errF == nil) {
			t.Fatalf("%s: cached run error %v, uncached run error %v", st.name, errC, errF)
		}
		got, want := targetJSON(t, cached), targetJSON(t, fresh)
		if got != want {
			t.Errorf("%s: cached job's target\n%s\nuncached job's\n%s", st.name, got, want)
		}
		now := cache.Cached("j")
		if now == nil {
			t.Fatalf("%s: no plan cached after a successful run", st.name)
		}
		if reused := now == prev; reused != st.reused {
			t.Errorf("%s: plan reused %v, want %v", st.name, reused, st.reused)
		}
		prev = now
	}
	// The stream dropped and created again: the job's checkpoint belongs to
	// the old one. A run with the cached plan (made for the old stream ID)
	// fails as a run planned afresh does.
	for _, db := range []string{cached, fresh} {
		e.sql(db, `DROP TABLE STREAM s;
CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');`)
		pgExec(t, db, "INSERT INTO t VALUES (12, 'l')")
	}
	_, errC := cache.Run(context.Background(), jc)
	_, errF := e.r.RunJob(context.Background(), jf)
	if !errors.Is(errF, runner.ErrStreamReplaced) {
		t.Fatalf("uncached run after CREATE TABLE STREAM again: %v, want ErrStreamReplaced", errF)
	}
	if !errors.Is(errC, runner.ErrStreamReplaced) {
		t.Errorf("cached run after CREATE TABLE STREAM again: %v, want ErrStreamReplaced", errC)
	}
	if cache.Cached("j") != nil {
		t.Error("a failed run left its plan cached")
	}
}

// targetJSON returns the rows of r in the PostgreSQL database db as
// to_jsonb text, by id.
func targetJSON(t *testing.T, db string) string {
	t.Helper()
	return pgScalar(t, db, "SELECT coalesce(string_agg(to_jsonb(r)::text, E'\\n' ORDER BY id), '') FROM r")
}

// TestPlanCacheNotForOtherBackends: a job whose sink is not a
// CatalogVersioner (stdout: it prints the rows and consumes nothing) is
// planned for every run, and each run reads what the uncached job reads.
func TestPlanCacheNotForOtherBackends(t *testing.T) {
	e := newEnv(t)
	e.sql("", `CREATE TABLE t (id INT, v STRING, PRIMARY KEY (id));
ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');`)
	j := e.job("j.yaml", "name: j\nsource: s\nsink: {stdout: true, format: jsonl}\n")
	cache := runner.NewPlanCache(e.r)
	for i := range 3 {
		e.sql("", fmt.Sprintf("INSERT INTO t VALUES (%d, 'x')", i))
		res, err := cache.Run(context.Background(), j)
		if err != nil {
			t.Fatal(err)
		}
		if n := res.Stats.Read; sum(n) != int64(i+1) {
			t.Errorf("run %d read %v, want %d changes (a stdout sink consumes nothing)", i, n, i+1)
		}
		if cache.Cached("j") != nil {
			t.Fatalf("run %d: a plan of a job with a stdout sink was cached", i)
		}
	}
}
