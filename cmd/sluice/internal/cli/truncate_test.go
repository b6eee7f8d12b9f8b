package cli_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestRunPostgresTruncate: TRUNCATE of a tracked PostgreSQL table, from
// the application's side (plain SQL sessions, no sluice between the
// statements and the checks): a TRUNCATE followed in the same
// transaction by an update-free re-insert of some of its keys, and a
// TRUNCATE between inserts of the same keys in later transactions. Four
// streams on the table, read at different offsets: two STANDARD streams
// (one read before and after each truncate, one read only at the end,
// its window holding both), an APPEND_ONLY stream and a STANDARD stream
// with SHOW_INITIAL_ROWS created between the truncates. Each merge
// target must equal the source table as the application reads it; the
// append target must hold every row the application inserted after the
// APPEND_ONLY stream was created. Pushed down (sink in the source
// database), PostgreSQL to another PostgreSQL database, and PostgreSQL
// to SQLite.
func TestRunPostgresTruncate(t *testing.T) {
	cases := []struct {
		name string
		sink func(t *testing.T, src string) (conn string, app appDB)
	}{
		{"pushdown", func(t *testing.T, src string) (string, appDB) { return "", pgApp(src) }},
		{"to another postgres database", func(t *testing.T, src string) (string, appDB) {
			u := pgtest.NewDatabase(t)
			return u, pgApp(u)
		}},
		{"to sqlite", func(t *testing.T, src string) (string, appDB) {
			p := filepath.Join(t.TempDir(), "sink.db")
			return "sqlite:" + p, sqliteApp(p)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := pgtest.NewDatabase(t)
			app := pgApp(src)
			sinkConn, sinkApp := tc.sink(t, src)
			dir := t.TempDir()
			job := func(name, stream, mode string) string {
				text := "name: " + name + "\nsource: " + stream + "\nselect: [id, v]\nsink:\n  table: " + name + "\n  mode: " + mode + "\n"
				if mode == "merge" {
					text += "  keys: [id]\n"
				}
				if sinkConn != "" {
					text += "  connection: " + sinkConn + "\n"
				}
				return writeFile(t, dir, name+".yaml", text)
			}
			app.exec(t, "CREATE TABLE items (id int PRIMARY KEY, v text)")
			app.exec(t, "INSERT INTO items VALUES (1, 'a'), (2, 'b'), (3, 'c')")
			mustSluice(t, "sql", "--conn", src, "ALTER TABLE items SET PROPERTIES ('change_tracking' = 'true'); "+
				"CREATE TABLE STREAM s_often ON TABLE items WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE'); "+
				"CREATE TABLE STREAM s_once ON TABLE items WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE'); "+
				"CREATE TABLE STREAM s_append ON TABLE items WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')")
			often, once, appendJob := job("copy_often", "s_often", "merge"), job("copy_once", "s_once", "merge"), job("inserted", "s_append", "append")
			source := func() []string { return app.rows(t, "SELECT CAST(id AS TEXT), v FROM items ORDER BY id") }
			target := func(table string) []string {
				return sinkApp.rows(t, "SELECT CAST(id AS TEXT), v FROM "+table+" ORDER BY id, v")
			}
			same := func(what, table string) {
				t.Helper()
				if got, want := target(table), source(); !slices.Equal(got, want) {
					t.Errorf("%s: %s = %q, want the source's rows %q", what, table, got, want)
				}
			}
			var inserted []string // what the APPEND_ONLY stream must deliver

			mustSluice(t, "run", "--conn", src, often)
			same("before any truncate", "copy_often")
			app.exec(t, "INSERT INTO items VALUES (4, 'd')")
			inserted = append(inserted, "4 d")
			// One transaction: an update, the truncate, then one of the
			// truncated keys again and a new one.
			app.exec(t, "BEGIN; UPDATE items SET v = 'b2' WHERE id = 2; TRUNCATE items; INSERT INTO items VALUES (1, 'x'), (5, 'e'); COMMIT")
			inserted = append(inserted, "1 x", "5 e")
			mustSluice(t, "run", "--conn", src, often)
			same("truncate and re-insert in one transaction", "copy_often")

			mustSluice(t, "sql", "--conn", src, "CREATE TABLE STREAM s_initial ON TABLE items WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE')")
			initial := job("copy_initial", "s_initial", "merge")
			// Later transactions: the same keys before and after a truncate.
			app.exec(t, "INSERT INTO items VALUES (2, 'y')")
			app.exec(t, "TRUNCATE items")
			app.exec(t, "INSERT INTO items VALUES (2, 'y2'), (3, 'z')")
			app.exec(t, "UPDATE items SET v = 'z2' WHERE id = 3")
			inserted = append(inserted, "2 y", "2 y2", "3 z")
			for _, j := range []string{often, once, initial, appendJob} {
				mustSluice(t, "run", "--conn", src, j)
			}
			same("truncate between transactions", "copy_often")
			same("one read over both truncates", "copy_once")
			same("SHOW_INITIAL_ROWS created between the truncates", "copy_initial")
			slices.Sort(inserted)
			if got := target("inserted"); !slices.Equal(got, inserted) {
				t.Errorf("APPEND_ONLY target = %q, want every insert %q", got, inserted)
			}
			// Nothing left: runs with nothing new change nothing.
			for _, j := range []string{often, once, initial} {
				r := mustSluice(t, "run", "--conn", src, j)
				if got := parseRun(t, r.stdout); len(got) != 1 {
					t.Errorf("run %s: %v", j, r)
				}
			}
			same("after empty runs", "copy_often")
		})
	}
}
