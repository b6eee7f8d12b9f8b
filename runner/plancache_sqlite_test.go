package runner_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/sluicedata/sluice/runner"
)

// TestPlanCacheFollowsDDLSQLite: on SQLite (sources/sqlite.CatalogVersion:
// the file's schema_version and sluice's rows of the stream), a cached
// job reuses its plan while no DDL ran and plans again after each DDL on
// the source table or the target, delivering what a job planned for
// every run delivers on an identical file.
func TestPlanCacheFollowsDDLSQLite(t *testing.T) {
	e := newEnv(t)
	cached, fresh := e.conn("cached.db"), e.conn("fresh.db")
	for _, db := range []string{cached, fresh} {
		e.sql(db, `CREATE TABLE t (id INT, v STRING, PRIMARY KEY (id)); CREATE TABLE r (id INT, v STRING, PRIMARY KEY (id));
ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');`)
	}
	jobOf := func(db string) string {
		return "name: j\nconnection: '" + db + "'\nsource: s\nsink: {table: r, mode: append}\n"
	}
	jc := e.job("cached.yaml", jobOf(cached))
	jf := e.job("fresh.yaml", jobOf(fresh))
	cache := runner.NewPlanCache(e.r)
	steps := []struct {
		name, ddl, insert string
		reused            bool
	}{
		{"first run", "", "INSERT INTO t VALUES (1, 'a')", false},
		// The first run created sluice_checkpoints in the file after the
		// version was read: the next run plans again, the one after reuses.
		{"second run", "", "INSERT INTO t VALUES (2, 'b')", false},
		{"no DDL again", "", "INSERT INTO t VALUES (3, 'c')", true},
		{"ADD COLUMN", "ALTER TABLE t ADD COLUMN w STRING", "INSERT INTO t VALUES (4, 'd', 'x')", false},
		{"after ADD COLUMN", "", "INSERT INTO t VALUES (5, 'e', 'y')", false},
		{"after ADD COLUMN again", "", "INSERT INTO t VALUES (50, 'e', 'y')", true},
		{"target dropped", "DROP TABLE r", "INSERT INTO t VALUES (10, 'j', 'z')", false},
		{"after the target came back", "", "INSERT INTO t VALUES (11, 'k', 'z')", false},
		{"no DDL after the target came back", "", "INSERT INTO t VALUES (110, 'k', 'z')", true},
	}
	raw := map[string]*sql.DB{cached: openSQLite(t, cached), fresh: openSQLite(t, fresh)}
	var prev *runner.Prepared
	for _, st := range steps {
		for _, db := range []string{cached, fresh} {
			// the application's DDL and writes, on its own connection
			for _, q := range []string{st.ddl, st.insert} {
				if _, err := raw[db].ExecContext(context.Background(), q); q != "" && err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
		}
		_, errC := cache.Run(context.Background(), jc)
		_, errF := e.r.RunJob(context.Background(), jf)
		if errC != nil || errF != nil {
			t.Fatalf("%s: cached run error %v, uncached run error %v", st.name, errC, errF)
		}
		const q = "SELECT * FROM r ORDER BY id"
		if got, want := e.sql(cached, q), e.sql(fresh, q); !equalRows(got, want) {
			t.Errorf("%s: cached job's target %v, uncached job's %v", st.name, got, want)
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
	for _, db := range []string{cached, fresh} {
		e.sql(db, `DROP TABLE STREAM s;
CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');`)
		if _, err := raw[db].ExecContext(context.Background(), "INSERT INTO t VALUES (12, 'l', 'z')"); err != nil {
			t.Fatal(err)
		}
	}
	_, errC := cache.Run(context.Background(), jc)
	_, errF := e.r.RunJob(context.Background(), jf)
	if !errors.Is(errF, runner.ErrStreamReplaced) || !errors.Is(errC, runner.ErrStreamReplaced) {
		t.Fatalf("runs after CREATE TABLE STREAM again: cached %v, uncached %v; want ErrStreamReplaced for both", errC, errF)
	}
}
