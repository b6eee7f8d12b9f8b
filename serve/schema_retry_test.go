package serve

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	_ "github.com/sluicedata/sluice/sources/postgres"
	_ "github.com/sluicedata/sluice/sources/sqlite"
)

// TestSchemaRefusalRetried: a serve loop over real jobs and databases.
// A run refused because of a schema change is retried with backoff, not
// stopped, and the job goes on by itself once its user has acted, with no
// reload:
//
//   - PostgreSQL, on_schema_change: fail: ADD COLUMN on the source stops
//     each run before writing (runner.ErrSchemaChanged) until the user
//     adds the column to the target;
//   - SQLite: the table rebuilt (CREATE new / INSERT … SELECT / DROP /
//     RENAME) loses its capture: runs refuse (capture lost) until the user
//     enables tracking again.
//
// Afterwards each target equals its source (the values compared are the
// source's, read with a plain client).
func TestSchemaRefusalRetried(t *testing.T) {
	ctx := t.Context()
	pg := pgtest.NewDatabase(t)
	lite := "sqlite:" + filepath.Join(t.TempDir(), "src.db")
	r := &runner.Runner{Log: testLog(t), Conn: lite}
	t.Cleanup(func() { r.Close() })
	sluiceSQL := func(conn, text string) {
		t.Helper()
		b, err := r.Backend(runner.WithCreate(ctx, runner.CreateAll), conn)
		if err != nil {
			t.Fatal(err)
		}
		stmts, err := dsl.ParseStatements("t.sql", text)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range stmts {
			if _, err := b.(runner.Executor).Exec(ctx, st); err != nil {
				t.Fatalf("%s: %v", text, err)
			}
		}
	}
	pgc, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer pgc.Close(context.Background())
	ldb := openLite(t, lite)
	// rows reads columns cols of table's rows, as JSON arrays, with a
	// plain client.
	rows := func(conn, cols, table string) string {
		t.Helper()
		var out []string
		if conn == pg {
			rs, err := pgc.Query(ctx, "SELECT json_build_array("+cols+")::text FROM "+table+" ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			if out, err = pgx.CollectRows(rs, pgx.RowTo[string]); err != nil {
				t.Fatal(err)
			}
			return strings.Join(out, "\n")
		}
		rs, err := ldb.QueryContext(ctx, "SELECT json_array("+cols+") FROM "+table+" ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		for rs.Next() {
			var s string
			if err := rs.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return strings.Join(out, "\n")
	}
	native := func(conn string, qs ...string) {
		t.Helper()
		for _, q := range qs {
			var err error
			if conn == pg {
				_, err = pgc.Exec(ctx, q)
			} else {
				_, err = ldb.ExecContext(ctx, q)
			}
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}

	native(pg, "CREATE TABLE sc (id int PRIMARY KEY, v int)", "INSERT INTO sc VALUES (1, 10)")
	sluiceSQL(pg, "ALTER TABLE sc SET PROPERTIES ('change_tracking' = 'true'); CREATE TABLE STREAM s ON TABLE sc WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE')")
	native(lite, "CREATE TABLE sc (id INTEGER PRIMARY KEY, v INT)", "INSERT INTO sc VALUES (1, 10)")
	sluiceSQL(lite, "ALTER TABLE sc SET PROPERTIES ('change_tracking' = 'true'); CREATE TABLE STREAM s ON TABLE sc WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE')")
	job := func(name, conn, extra string) *plan.Job {
		j, err := dsl.ParseJob(name+".yaml", []byte(fmt.Sprintf("name: %s\nconnection: '%s'\nschedule: '@every 10s'\nsource: s\nsink: {table: sc_copy, mode: merge, keys: [id]%s}\n", name, conn, extra)))
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	jobs := []*plan.Job{job("pgfail", pg, ", on_schema_change: fail"), job("literebuild", lite, "")}
	conns := map[string]string{"pgfail": pg, "literebuild": lite}
	run := func(ctx context.Context, j *plan.Job) (*runner.Result, error) {
		prep, err := r.Plan(ctx, j)
		if err != nil {
			return nil, err
		}
		return r.Run(ctx, prep)
	}
	s, clock, rec := newTestServer(t, Config{Run: run}, jobs...)
	_ = s
	// fire runs every job once (each waits for its next fire time).
	fire := func() {
		t.Helper()
		var next = clock.Now()
		for _, j := range jobs {
			if ev := rec.waitKind(t, j.Name, EventScheduled); ev.Next.After(next) {
				next = ev.Next
			}
		}
		clock.Set(next)
	}
	done := func(name string) Event {
		t.Helper()
		return rec.wait(t, "end of a run of "+name, func(ev Event) bool {
			return ev.Job == name && (ev.Kind == EventDone || ev.Kind == EventRetry || ev.Kind == EventStopped)
		})
	}
	same := func(name, cols string) {
		t.Helper()
		c := conns[name]
		if got, want := rows(c, cols, "sc_copy"), rows(c, cols, "sc"); got != want {
			t.Errorf("%s: target\n%s\nwant the source's\n%s", name, got, want)
		}
	}

	fire()
	for _, j := range jobs {
		if ev := done(j.Name); ev.Kind != EventDone || ev.Err != nil {
			t.Fatalf("%s, first run: %s %v", j.Name, ev.Kind, ev.Err)
		}
		same(j.Name, "id, v")
	}

	// The schema changes, from plain clients.
	native(pg, "ALTER TABLE sc ADD COLUMN w text", "INSERT INTO sc VALUES (2, 20, 'w2')", "UPDATE sc SET w = 'w1' WHERE id = 1")
	native(lite, "CREATE TABLE sc_new (id INTEGER PRIMARY KEY, v INT, w TEXT)", "INSERT INTO sc_new SELECT id, v, NULL FROM sc",
		"DROP TABLE sc", "ALTER TABLE sc_new RENAME TO sc")
	fire()
	retries := map[string]Event{}
	for _, j := range jobs {
		ev := done(j.Name)
		if ev.Kind != EventRetry {
			t.Fatalf("%s after the schema change: %s %v, want a retry", j.Name, ev.Kind, ev.Err)
		}
		if !errors.Is(ev.Err, runner.ErrSchemaChanged) && !errors.Is(ev.Err, runner.ErrSourceSchema) {
			t.Errorf("%s: retried error %v is not a schema refusal", j.Name, ev.Err)
		}
		retries[j.Name] = ev
	}
	// Until the user acts, each retry is refused again, with a longer delay.
	clock.Advance(max(retries["pgfail"].Delay, retries["literebuild"].Delay))
	for _, j := range jobs {
		ev := done(j.Name)
		if ev.Kind != EventRetry || ev.Delay <= retries[j.Name].Delay {
			t.Fatalf("%s, second attempt: %s (delay %v after %v) %v, want a longer retry", j.Name, ev.Kind, ev.Delay, retries[j.Name].Delay, ev.Err)
		}
		retries[j.Name] = ev
	}

	// The users act: the target gets the column; tracking is enabled
	// again and the application writes on.
	native(pg, "ALTER TABLE sc_copy ADD COLUMN w text")
	sluiceSQL(lite, "ALTER TABLE sc SET PROPERTIES ('change_tracking' = 'true')")
	native(lite, "INSERT INTO sc VALUES (2, 20, 'w2')", "UPDATE sc SET w = 'w1' WHERE id = 1")
	clock.Advance(max(retries["pgfail"].Delay, retries["literebuild"].Delay))
	for _, j := range jobs {
		if ev := done(j.Name); ev.Kind != EventDone || ev.Err != nil {
			t.Fatalf("%s after the user acted: %s %v, want a committed run", j.Name, ev.Kind, ev.Err)
		}
	}
	same("pgfail", "id, v, w")
	same("literebuild", "id, v, w")
	for _, st := range s.Status(ctx) {
		if st.Stopped {
			t.Errorf("%s stopped", st.Job)
		}
	}
}

func openLite(t *testing.T, url string) *sql.DB {
	t.Helper()
	loc, err := sqlitex.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlitex.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
