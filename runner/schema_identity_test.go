package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestSchemaColumnIdentity: DDL sequences that column names alone
// cannot read right, each done from a plain client with no run in
// between, then one merge job without select per policy on every path
// (pushed down on PostgreSQL and SQLite, PostgreSQL → PostgreSQL,
// PostgreSQL → SQLite, SQLite → SQLite, SQLite → PostgreSQL):
//   - ADD COLUMN a, an INSERT that gives it a value, RENAME a TO b (the
//     row must arrive with b = the source's value, never NULL);
//   - on PostgreSQL, an INSERT logging b, DROP COLUMN b, ADD COLUMN b
//     again, an INSERT (the first row's b must be the new column's NULL,
//     not the dropped column's value).
//
// evolve adds the column and fills it; fail stops naming it and, once the
// target has it, delivers the same values; ignore writes the other
// columns. Expected values are read from the source table.
func TestSchemaColumnIdentity(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	liteSink := e.conn("sink.db")
	paths := []schemaPath{
		{name: "postgres pushdown", src: pg, dst: pg, prefix: "i_pp", pg: true},
		{name: "postgres → postgres", src: pg, dst: other, prefix: "i_pg", pg: true},
		{name: "postgres → sqlite", src: pg, dst: liteSink, prefix: "i_pl", pg: true},
		{name: "sqlite pushdown", prefix: "i_lp"},
		{name: "sqlite → sqlite", dst: liteSink, prefix: "i_ll"},
		{name: "sqlite → postgres", dst: other, prefix: "i_lg"},
	}
	policies := []string{"evolve", "fail", "ignore"}
	pgExec(t, pg, "CREATE TABLE sc (id integer PRIMARY KEY, v integer)")
	e.sql("", "CREATE TABLE sc (id INT, v INT, PRIMARY KEY (id))")
	for _, c := range []string{pg, ""} {
		e.sql(c, "ALTER TABLE sc SET PROPERTIES ('change_tracking' = 'true')")
	}
	for _, p := range paths {
		if p.dst == "" {
			p.dst = e.r.Conn
		}
		for _, pol := range policies {
			e.sql(p.src, fmt.Sprintf("CREATE TABLE STREAM %s ON TABLE sc WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')", p.stream(pol)))
		}
	}
	both := func(q string) {
		t.Helper()
		e.native(pg, q)
		e.native("", q)
	}
	run := func(step string, p schemaPath, pol, want string) {
		t.Helper()
		_, err := e.run(e.job(p.target(pol)+".yaml", p.job(pol)))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s, %s, %s: %v", step, p.name, pol, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s, %s, %s: error %v, want one with %q", step, p.name, pol, err, want)
		}
	}
	same := func(step string, p schemaPath, pol, cols, where string) {
		t.Helper()
		want := e.sql(p.src, "SELECT "+cols+" FROM sc WHERE "+where+" ORDER BY id")
		got := e.sql(p.dst, "SELECT "+cols+" FROM "+p.target(pol)+" WHERE "+where+" ORDER BY id")
		if len(want) == 0 || !equalRows(got, want) {
			t.Errorf("%s, %s, %s: target (%s) %v, want the source's %v", step, p.name, pol, cols, got, want)
		}
	}

	both("INSERT INTO sc VALUES (1, 1)")
	for _, p := range paths {
		for _, pol := range policies {
			run("initial", p, pol, "")
		}
	}

	// ADD, INSERT, RENAME with no run in between.
	both("ALTER TABLE sc ADD COLUMN a integer")
	both("INSERT INTO sc VALUES (2, 2, 5)")
	both("ALTER TABLE sc RENAME COLUMN a TO b")
	for _, p := range paths {
		run("add, insert, rename", p, "evolve", "")
		same("add, insert, rename", p, "evolve", "id, v, b", "id <= 2")
		run("add, insert, rename", p, "fail", "column b (")
		typ := "bigint" // a SQLite INTEGER column is BIGINT to sluice
		if p.pg {
			typ = "integer"
		}
		e.native(p.dst, fmt.Sprintf("ALTER TABLE %s ADD COLUMN b %s", p.target("fail"), typ))
		run("add, insert, rename, target altered", p, "fail", "")
		same("add, insert, rename, target altered", p, "fail", "id, v, b", "id <= 2")
		run("add, insert, rename", p, "ignore", "")
		same("add, insert, rename", p, "ignore", "id, v", "id <= 2")
	}

	// A value of b logged, b dropped and added again under its name. On
	// PostgreSQL only: SQLite has no column identity (no attnum), so its
	// capture reads the new b as the old one (README, "SQLite: what
	// tracking installs").
	e.native(pg, "INSERT INTO sc VALUES (3, 3, 7)")
	e.native(pg, "ALTER TABLE sc DROP COLUMN b")
	e.native(pg, "ALTER TABLE sc ADD COLUMN b integer")
	e.native(pg, "INSERT INTO sc VALUES (4, 4, 8)")
	for _, p := range paths {
		if !p.pg {
			continue
		}
		for _, pol := range policies {
			run("drop and add again", p, pol, "")
		}
		same("drop and add again", p, "evolve", "id, v, b", "id IN (3, 4)")
		same("drop and add again", p, "fail", "id, v, b", "id IN (3, 4)")
		same("drop and add again", p, "ignore", "id, v", "id IN (3, 4)")
	}
}
