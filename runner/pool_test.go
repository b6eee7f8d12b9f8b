package runner_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestPushdownRunsShareASmallPool: more concurrent pushed-down PostgreSQL
// runs than the database's connection pool holds (pool_max_conns=2, four
// jobs with pending changes) all finish. A run once held its connection
// while its purge after the commit waited for another one, so runs that
// filled the pool waited for each other forever (found by bench/serve with
// ten jobs: every run hung until shutdown). Each target must equal its
// source table.
func TestPushdownRunsShareASmallPool(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	sep := "?"
	if strings.Contains(pg, "?") {
		sep = "&"
	}
	small := pg + sep + "pool_max_conns=2"
	e := newEnv(t)
	const jobs = 4
	for i := range jobs {
		pgExec(t, pg, fmt.Sprintf("CREATE TABLE p%d (id integer PRIMARY KEY, v text)", i))
		e.sql(small, fmt.Sprintf("ALTER TABLE p%d SET PROPERTIES ('change_tracking' = 'true'); CREATE TABLE STREAM p%d_s ON TABLE p%d WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')", i, i, i))
	}
	for round := range 3 {
		for i := range jobs {
			pgExec(t, pg, fmt.Sprintf("INSERT INTO p%d SELECT g, 'r%d-' || g FROM generate_series(%d, %d) g ON CONFLICT (id) DO UPDATE SET v = excluded.v", i, round, 1, 50+round*10))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		var wg sync.WaitGroup
		errs := make([]error, jobs)
		for i := range jobs {
			j := e.job(fmt.Sprintf("p%d.yaml", i), fmt.Sprintf("connection: '%s'\nsource: p%d_s\nsink: {table: p%d_copy, mode: merge, keys: [id]}\n", small, i, i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = e.r.RunJob(ctx, j)
			}()
		}
		wg.Wait()
		cancel()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, job p%d: %v", round, i, err)
			}
		}
	}
	for i := range jobs {
		want := e.sql(pg, fmt.Sprintf("SELECT id, v FROM p%d ORDER BY id", i))
		got := e.sql(pg, fmt.Sprintf("SELECT id, v FROM p%d_copy ORDER BY id", i))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("p%d_copy = %v, want the source's %v", i, got, want)
		}
	}
}
