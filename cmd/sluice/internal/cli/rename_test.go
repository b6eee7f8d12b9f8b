package cli_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestRenameFollowed (issue #17): a tracked table
// renamed by the application (plain SQL, no sluice in between) stays the
// tracked table under its new name in every command — run, diff, plan,
// backfill, SHOW TABLE STREAMS, CREATE TABLE STREAM ON the new name,
// enabling tracking on it — and a table the application then creates
// under the old name is another, untracked table: a stream on it is
// refused until tracking is enabled on it, which starts a tracking of its
// own. Every target must equal its source table as the application reads
// it. On PostgreSQL and on SQLite.
func TestRenameFollowed(t *testing.T) {
	cases := []struct {
		name       string
		db         func(t *testing.T) (conn string, app appDB)
		notTracked string // the refusal of a stream on an untracked table
	}{
		{"postgres", func(t *testing.T) (string, appDB) {
			u := pgtest.NewDatabase(t)
			return u, pgApp(u)
		}, "table has no change tracking"},
		{"sqlite", func(t *testing.T) (string, appDB) {
			p := filepath.Join(t.TempDir(), "app.db")
			return "sqlite:" + p, sqliteApp(p)
		}, "change tracking is not enabled on the table customers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src, app := tc.db(t)
			renameFollowed(t, src, app, tc.notTracked)
		})
	}
}

func renameFollowed(t *testing.T, src string, app appDB, notTracked string) {
	dir := t.TempDir()
	job := func(name, stream string) string {
		return writeFile(t, dir, name+".yaml", "name: "+name+"\nsource: "+stream+"\nselect: [id, v]\nsink:\n  table: "+name+"\n  mode: merge\n  keys: [id]\n")
	}
	rows := func(table string) []string {
		return app.rows(t, "SELECT CAST(id AS TEXT), v FROM "+table+" ORDER BY id")
	}
	same := func(what, target, source string) {
		t.Helper()
		if got, want := rows(target), rows(source); !slices.Equal(got, want) {
			t.Errorf("%s: %s = %q, want the rows of %s %q", what, target, got, source, want)
		}
	}
	contains := func(what string, r result, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(r.stdout+r.stderr, w) {
				t.Errorf("%s: no %q in %v", what, w, r)
			}
		}
	}
	showTables := func() []string {
		t.Helper()
		return parseTable(t, mustSluice(t, "sql", "--conn", src, "SHOW TABLE STREAMS").stdout).project(t, "name", "table_name")
	}

	app.exec(t, "CREATE TABLE customers (id int PRIMARY KEY, v text)")
	app.exec(t, "INSERT INTO customers VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	mustSluice(t, "sql", "--conn", src, "ALTER TABLE customers SET PROPERTIES ('change_tracking' = 'true'); "+
		"CREATE TABLE STREAM c_s ON TABLE customers WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE')")
	repl := job("c_repl", "c_s")
	mustSluice(t, "run", "--conn", src, repl)
	same("before the rename", "c_repl", "customers")

	app.exec(t, "ALTER TABLE customers RENAME TO clients")
	app.exec(t, "INSERT INTO clients VALUES (4, 'd')")
	app.exec(t, "UPDATE clients SET v = 'b2' WHERE id = 2")
	if got, want := showTables(), []string{"c_s clients"}; !slices.Equal(got, want) {
		t.Errorf("SHOW TABLE STREAMS after the rename: %q, want %q", got, want)
	}
	contains("plan after the rename", mustSluice(t, "plan", "--conn", src, repl), "clients")
	mustSluice(t, "run", "--conn", src, repl)
	same("after the rename", "c_repl", "clients")
	contains("diff after the rename", mustSluice(t, "diff", "--conn", src, repl), "c_repl: clients → c_repl (merge by id): EQUAL", "source 4, target 4")

	// A new table under the old name is another table.
	app.exec(t, "CREATE TABLE customers (id int PRIMARY KEY, v text)")
	app.exec(t, "INSERT INTO customers VALUES (100, 'x'), (101, 'y')")
	r := sluice(t, "sql", "--conn", src, "CREATE TABLE STREAM new_s ON TABLE customers WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
	if r.code == 0 || !strings.Contains(r.stderr, notTracked) {
		t.Errorf("stream on the new table under the old name: want %q: %v", notTracked, r)
	}
	contains("diff with a new table under the old name", mustSluice(t, "diff", "--conn", src, repl), "c_repl: clients → c_repl (merge by id): EQUAL", "source 4, target 4")
	contains("plan with a new table under the old name", mustSluice(t, "plan", "--conn", src, repl), "clients")

	// Enabling tracking on the new name keeps the tracking and stream; a
	// stream on the new name reads the renamed table.
	mustSluice(t, "sql", "--conn", src, "ALTER TABLE clients SET PROPERTIES ('change_tracking' = 'true'); "+
		"CREATE TABLE STREAM c_bf_s ON TABLE clients WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
	bf := job("c_bf", "c_bf_s")
	mustSluice(t, "backfill", "--conn", src, bf)
	same("backfill of a stream on the new name", "c_bf", "clients")
	contains("diff of the backfilled job", mustSluice(t, "diff", "--conn", src, bf), "c_bf: clients → c_bf (merge by id): EQUAL", "source 4, target 4")

	// Tracking the new table under the old name: a tracking of its own.
	mustSluice(t, "sql", "--conn", src, "ALTER TABLE customers SET PROPERTIES ('change_tracking' = 'true'); "+
		"CREATE TABLE STREAM new_s ON TABLE customers WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE')")
	newJob := job("new_copy", "new_s")
	app.exec(t, "INSERT INTO customers VALUES (102, 'z')")
	app.exec(t, "INSERT INTO clients VALUES (5, 'e')")
	app.exec(t, "DELETE FROM clients WHERE id = 1")
	for _, j := range []string{repl, bf, newJob} {
		mustSluice(t, "run", "--conn", src, j)
	}
	same("renamed table after the old name was tracked again", "c_repl", "clients")
	same("second stream on the renamed table", "c_bf", "clients")
	same("the new table under the old name", "new_copy", "customers")
	if got, want := showTables(), []string{"c_bf_s clients", "c_s clients", "new_s customers"}; !slices.Equal(got, want) {
		t.Errorf("SHOW TABLE STREAMS at the end: %q, want %q", got, want)
	}
	contains("diff of the new table's job", mustSluice(t, "diff", "--conn", src, newJob), "new_copy: customers → new_copy (merge by id): EQUAL", "source 3, target 3")
}
