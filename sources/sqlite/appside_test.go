package sqlite_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sources/sqlite"
)

// These tests act as the application does: its own connection with
// SQLite's default settings (recursive_triggers off, no sluice functions),
// or Python's sqlite3 module, and no sluice command between the
// application's statements. Expected changes are computed from the
// table's own states, not from sluice.

// appDB opens path the way an application does: database/sql with the
// driver's defaults (only a busy timeout, so it waits for sluice's lock).
func appDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	var rec int
	if err := db.QueryRow(`PRAGMA recursive_triggers`).Scan(&rec); err != nil || rec != 0 {
		t.Fatalf("application connection: recursive_triggers = %d, %v; want the default 0", rec, err)
	}
	return db
}

func appExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("application statement %q failed: %v", s, err)
		}
	}
}

// python runs script with Python's sqlite3 module on path (default
// connection settings; autocommit per the module's default, commit at the
// end). It skips the test when python3 is not installed.
func python(t *testing.T, path, script string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed: the Python sqlite3 client cannot be exercised")
	}
	prog := "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], timeout=10)\n" +
		"assert c.execute('PRAGMA recursive_triggers').fetchone()[0] == 0\n" + script + "\nc.commit()\nc.close()\n"
	out, err := exec.Command(py, "-c", prog, path).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
}

// state reads table through query (its columns in the order of schema)
// into key → formatted row.
func state(t testing.TB, db *sql.DB, query string, schema cdc.Schema) map[string]string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	keys, _ := schema.KeyIndexes()
	out := map[string]string{}
	for rows.Next() {
		vals := make([]any, len(schema.Columns))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		if err := sqlitex.DecodeRow(vals, schema.Columns); err != nil {
			t.Fatal(err)
		}
		k, r := rowText(vals, schema, keys)
		out[k] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func rowText(vals []any, schema cdc.Schema, keys []int) (key, row string) {
	var ks, rs []string
	for _, i := range keys {
		ks = append(ks, cdc.FormatValue(vals[i], schema.Columns[i].Type))
	}
	for i, c := range schema.Columns {
		v := "NULL"
		if vals[i] != nil {
			v = cdc.FormatValue(vals[i], c.Type)
		}
		rs = append(rs, c.Name+"="+v)
	}
	return strings.Join(ks, ","), strings.Join(rs, " ")
}

// netChanges is the STANDARD net change between two states (DESIGN.md),
// as sorted lines "OP row".
func netChanges(before, after map[string]string) []string {
	var out []string
	for k, b := range before {
		a, ok := after[k]
		switch {
		case !ok:
			out = append(out, "DELETE "+b)
		case a != b:
			out = append(out, "UPDATE_BEFORE "+b, "UPDATE_AFTER "+a)
		}
	}
	for k, a := range after {
		if _, ok := before[k]; !ok {
			out = append(out, "INSERT "+a)
		}
	}
	slices.Sort(out)
	return out
}

func changeLines(cs []cdc.Change, schema cdc.Schema) []string {
	keys, _ := schema.KeyIndexes()
	var out []string
	for _, c := range cs {
		_, r := rowText(c.Row, schema, keys)
		out = append(out, c.Op.String()+" "+r)
	}
	slices.Sort(out)
	return out
}

func diffLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\ngot  %q\nwant %q", what, got, want)
	}
}

// consume reads stream s through Stream (as a run does), checks the
// changes against want, and advances the offset to the read point.
func (f *fixture) consume(s string, want []string) *runner.StreamInfo {
	f.t.Helper()
	info := f.info(s)
	got, rp := f.read(info)
	diffLines(f.t, "changes of "+s, changeLines(got, info.TableSchema), want)
	if err := f.b.Advance(f.t.Context(), info, info.Offset, rp); err != nil {
		f.t.Fatal(err)
	}
	return f.info(s)
}

const usersDDL = `CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, name TEXT, note TEXT, score NUMERIC)`

// The application's DDL on a tracked table succeeds, and so do its writes
// after it, with no sluice command in between; the next run delivers
// exactly the net changes between the two states, every column the table
// has now included — also a column added after the offset and filled by
// writes made before anyone enabled tracking again.
func TestApplicationDDLOnTrackedTable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	f := newFixture(t, "sqlite:"+path)
	app := appDB(t, path)
	appExec(t, app, usersDDL,
		`INSERT INTO users VALUES (1, 'a@x', 'Ann', 'n1', 10), (2, 'b@x', 'Bob', NULL, 20), (3, 'c@x', 'Cy', 'n3', 30)`)
	f.run(`ALTER TABLE users SET PROPERTIES ('change_tracking' = 'true');
		CREATE TABLE STREAM s ON TABLE users WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
		CREATE TABLE STREAM a ON TABLE users WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')`)
	final := cdc.Schema{Columns: []cdc.Column{
		{Name: "id", Type: cdc.TypeBigInt}, {Name: "email", Type: cdc.TypeString}, {Name: "full_name", Type: cdc.TypeString},
		{Name: "score", Type: cdc.TypeNumeric}, {Name: "tier", Type: cdc.TypeString}, {Name: "since", Type: cdc.TypeBigInt},
	}, Key: []string{"id"}}
	// The state at the stream's offset, seen through the table's final
	// columns: full_name was name, note goes, tier and since read their
	// DEFAULTs in rows older than them.
	before := state(t, app, `SELECT id, email, name, score, 'basic', NULL FROM users`, final)

	appExec(t, app,
		`UPDATE users SET note = 'changed' WHERE id = 1`,
		`ALTER TABLE users RENAME COLUMN name TO full_name`,
		`INSERT INTO users (id, email, full_name, score) VALUES (4, 'd@x', 'Di', 40)`,
		`UPDATE users SET full_name = 'Bobby' WHERE id = 2`,
		`ALTER TABLE users DROP COLUMN note`,
		`DELETE FROM users WHERE id = 3`,
		`INSERT INTO users VALUES (5, 'e@x', 'Ed', 50)`,
		`ALTER TABLE users ADD COLUMN tier TEXT DEFAULT 'basic'`,
		`UPDATE users SET tier = 'gold' WHERE id = 2`,
		`INSERT INTO users VALUES (6, 'f@x', 'Flo', 60, 'silver')`,
		`UPDATE users SET score = 11 WHERE id = 1`,
		`ALTER TABLE users ADD COLUMN since INTEGER`,
		`UPDATE users SET since = 2020 WHERE id = 6`,
	)
	after := state(t, app, `SELECT id, email, full_name, score, tier, since FROM users`, final)
	info := f.consume("s", netChanges(before, after))
	if !slices.Equal(info.TableSchema.Names(), final.Names()) {
		t.Errorf("stream columns %v, want %v", info.TableSchema.Names(), final.Names())
	}
	// APPEND_ONLY: row 6 was inserted with tier 'silver' before sluice
	// re-installed capture and updated since, so the value its tier had
	// when inserted is known to nobody: the read refuses, consuming
	// nothing, and says how to go on.
	_, err := f.b.Changes(t.Context(), f.info("a"), f.info("a").Offset, runner.ReadOptions{})
	if !errors.Is(err, sqlite.ErrSchemaChanged) || !strings.Contains(err.Error(), "1 row(s) of users") || !strings.Contains(err.Error(), "CREATE OR REPLACE TABLE STREAM a") {
		t.Fatalf("APPEND_ONLY read over an unknowable insert: %v", err)
	}
	f.run(`CREATE OR REPLACE TABLE STREAM a ON TABLE users WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')`)
	appExec(t, app, `ALTER TABLE users ADD COLUMN extra TEXT DEFAULT 'e'`,
		`INSERT INTO users (id, email, full_name, score, tier) VALUES (10, 'j@x', 'Jo', 1, 'gold')`,
		`INSERT INTO users (id, email, full_name, score, tier, extra) VALUES (11, 'k@x', 'Kim', 2, 'gold', 'x')`)
	// Inserted after the ADD and before any re-install, unchanged since:
	// the table holds the inserted values.
	f.consume("a", []string{
		"INSERT id=10 email=j@x full_name=Jo score=1 tier=gold since=NULL extra=e",
		"INSERT id=11 email=k@x full_name=Kim score=2 tier=gold since=NULL extra=x",
	})
	appExec(t, app, `ALTER TABLE users DROP COLUMN extra`, `DELETE FROM users WHERE id IN (10, 11)`)
	before, after = after, state(t, app, `SELECT id, email, full_name, score, tier, since FROM users`, final)
	f.consume("s", netChanges(before, after))

	// Python's sqlite3, after the capture was re-installed: DDL and writes
	// again, then a second window.
	before = after
	python(t, path, `
c.execute("ALTER TABLE users RENAME COLUMN tier TO level")
c.execute("UPDATE users SET level = 'gold', since = 2021 WHERE id IN (1, 5)")
c.execute("ALTER TABLE users DROP COLUMN since")
c.execute("DELETE FROM users WHERE id = 4")
c.execute("INSERT INTO users VALUES (7, 'g@x', 'Gus', 70, 'bronze')")`)
	final.Columns[4].Name = "level"
	final.Columns = final.Columns[:5]
	before = reproject(t, before, 5)
	after = state(t, app, `SELECT id, email, full_name, score, level FROM users`, final)
	f.consume("s", netChanges(before, after))
}

// reproject drops the columns from n on of formatted rows (a DROP COLUMN
// seen from the earlier state) and applies the test's renames.
func reproject(t *testing.T, st map[string]string, n int) map[string]string {
	out := map[string]string{}
	for k, r := range st {
		parts := strings.Split(r, " ")
		if len(parts) < n {
			t.Fatalf("row %q has fewer than %d columns", r, n)
		}
		parts = parts[:n]
		for i, p := range parts {
			parts[i] = strings.Replace(p, "tier=", "level=", 1)
		}
		out[k] = strings.Join(parts, " ")
	}
	return out
}

// REPLACE, UPSERT and OR IGNORE from connections with SQLite's default
// recursive_triggers = off (database/sql and Python), and from sluice's own
// connection (recursive_triggers on): every row a REPLACE removes is a
// delete, a same-key REPLACE is an update, an ignored insert is nothing,
// and no delete is logged twice.
func TestReplaceCapturesEveryRow(t *testing.T) {
	for _, client := range []string{"database/sql", "python", "sluice"} {
		t.Run(client, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.db")
			f := newFixture(t, "sqlite:"+path)
			app := appDB(t, path)
			appExec(t, app, usersDDL, `CREATE UNIQUE INDEX users_name ON users (name COLLATE NOCASE)`,
				`INSERT INTO users VALUES (1, 'a@x', 'Ann', NULL, 1), (2, 'b@x', 'Bob', NULL, 2), (3, 'c@x', 'Cy', NULL, 3), (4, 'd@x', 'Di', NULL, 4)`)
			f.run(`ALTER TABLE users SET PROPERTIES ('change_tracking' = 'true');
				CREATE TABLE STREAM s ON TABLE users`)
			schema := f.info("s").TableSchema
			before := state(t, app, `SELECT * FROM users`, schema)
			stmts := []string{
				`INSERT OR REPLACE INTO users VALUES (5, 'a@x', 'Eve', NULL, 5)`, // removes 1 (email)
				`REPLACE INTO users VALUES (2, 'b@x', 'Bob', 'same key', 2)`,     // update of 2
				`INSERT INTO users VALUES (3, 'c@x', 'Cy', NULL, 3) ON CONFLICT (id) DO UPDATE SET score = 33`,
				`INSERT OR IGNORE INTO users VALUES (6, 'd@x', 'Zed', NULL, 6)`,  // nothing
				`INSERT OR REPLACE INTO users VALUES (7, 'x@x', 'DI', NULL, 7)`,  // removes 4 (name, NOCASE)
				`UPDATE OR REPLACE users SET email = 'b@x' WHERE id = 3`,         // removes 2
				`INSERT OR REPLACE INTO users VALUES (8, 'e@x', 'eve', NULL, 8)`, // removes 5 (name)
			}
			switch client {
			case "database/sql":
				appExec(t, app, stmts...)
			case "python":
				var b strings.Builder
				for _, s := range stmts {
					fmt.Fprintf(&b, "c.execute(%q)\n", s)
				}
				python(t, path, b.String())
			case "sluice":
				for _, s := range stmts {
					f.sql(s)
				}
			}
			after := state(t, app, `SELECT * FROM users`, schema)
			f.consume("s", netChanges(before, after))
			// Each removed row once: 1, 4, 2, 5 (the log was purged up to
			// the read point, so count before consuming a second window).
			appExec(t, app, `INSERT OR REPLACE INTO users VALUES (9, 'e@x', 'Nine', NULL, 9)`)
			var d int
			if err := app.QueryRow(`SELECT count(*) FROM sluice_changes_users WHERE op = 'D'`).Scan(&d); err != nil || d != 1 {
				t.Errorf("deletes logged for one REPLACE removing one row: %d, %v", d, err)
			}
		})
	}
}

// Capture follows the table: a renamed table goes on being captured under
// its new name, a new table under the old name is a different (untracked)
// table, the rebuild migration makes runs fail with the statement that
// re-installs capture, enabling tracking installs the triggers, and every
// cleanup works after the application dropped the table.
func TestCaptureFollowsTheTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	f := newFixture(t, "sqlite:"+path)
	app := appDB(t, path)
	appExec(t, app, usersDDL, `INSERT INTO users VALUES (1, 'a@x', 'Ann', NULL, 1)`)
	f.run(`ALTER TABLE users SET PROPERTIES ('change_tracking' = 'true'); CREATE TABLE STREAM s ON TABLE users`)

	appExec(t, app, `ALTER TABLE users RENAME TO members`,
		`INSERT INTO members VALUES (2, 'b@x', 'Bob', NULL, 2)`,
		`CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)`,
		`INSERT INTO users VALUES (100, 'new table')`)
	info := f.info("s")
	if info.Table != "members" {
		t.Fatalf("stream s reads %q after the rename, want members", info.Table)
	}
	f.consume("s", []string{"INSERT id=2 email=b@x name=Bob note=NULL score=2"})
	appExec(t, app, `INSERT INTO users VALUES (101, 'new table again')`, `UPDATE members SET name = 'Ann2' WHERE id = 1`)
	f.consume("s", []string{
		"UPDATE_AFTER id=1 email=a@x name=Ann2 note=NULL score=1",
		"UPDATE_BEFORE id=1 email=a@x name=Ann note=NULL score=1",
	})
	if _, err := f.b.Exec(t.Context(), &dsl.CreateStream{Stream: "u", Table: "users"}); !errors.Is(err, sqlite.ErrNotTracked) {
		t.Errorf("stream on the new table under the old name: %v, want ErrNotTracked", err)
	}

	// The rebuild migration (https://sqlite.org/lang_altertable.html#otheralter).
	appExec(t, app, `BEGIN`,
		`CREATE TABLE new_members (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, name TEXT, score NUMERIC, joined TEXT DEFAULT 'x')`,
		`INSERT INTO new_members (id, email, name, score) SELECT id, email, name, score FROM members`,
		`DROP TABLE members`,
		`ALTER TABLE new_members RENAME TO members`,
		`COMMIT`)
	_, err := f.b.Stream(t.Context(), runnerSource("s"))
	if !errors.Is(err, sqlite.ErrCaptureLost) || !strings.Contains(err.Error(), "ALTER TABLE members SET PROPERTIES ('change_tracking' = 'true')") {
		t.Fatalf("run after a rebuild: %v; want ErrCaptureLost naming the statement that re-installs capture", err)
	}
	f.run(`ALTER TABLE members SET PROPERTIES ('change_tracking' = 'true')`)
	var n int
	if err := app.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'members'`).Scan(&n); err != nil || n != 6 {
		t.Fatalf("capture triggers on members after enabling: %d, %v", n, err)
	}
	appExec(t, app, `UPDATE members SET joined = 'y', score = 5 WHERE id = 2`)
	f.consume("s", []string{
		"UPDATE_AFTER id=2 email=b@x name=Bob score=5 joined=y",
		"UPDATE_BEFORE id=2 email=b@x name=Bob score=2 joined=x",
	})

	// The application drops the table: runs fail saying so, and every
	// cleanup works.
	appExec(t, app, `DROP TABLE members`)
	if _, err := f.b.Stream(t.Context(), runnerSource("s")); !errors.Is(err, sqlite.ErrCaptureLost) || !strings.Contains(err.Error(), "was dropped") {
		t.Fatalf("run after DROP TABLE: %v", err)
	}
	f.run(`DROP TABLE STREAM s; ALTER TABLE members SET PROPERTIES ('change_tracking' = 'false')`)
	if err := app.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name LIKE 'sluice_%members%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("sluice objects left for the dropped table: %d, %v", n, err)
	}
}

// A database whose capture an earlier sluice installed (AFTER triggers
// naming every column) goes on without a gap or a repeat: the first run
// replaces the triggers and keeps the change log and the offset.
func TestUpgradeFromEarlierCapture(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	app := appDB(t, path)
	earlier, err := os.ReadFile("testdata/capture_v1.sql")
	if err != nil {
		t.Fatal(err)
	}
	appExec(t, app, string(earlier))
	f := newFixture(t, "sqlite:"+path)
	// The earlier version's stream has consumed change 1; 2 and 3 are
	// pending.
	f.consume("s", []string{
		"DELETE id=2 name=b",
		"UPDATE_AFTER id=1 name=a2",
		"UPDATE_BEFORE id=1 name=a",
	})
	appExec(t, app, `INSERT INTO t VALUES (3, 'c')`, `ALTER TABLE t DROP COLUMN name`, `INSERT INTO t VALUES (4)`)
	f.consume("s", []string{"INSERT id=3", "INSERT id=4"})
}

// A WITHOUT ROWID table is refused with a reason, and nothing is installed.
func TestWithoutRowidRefused(t *testing.T) {
	f := newFixture(t, "")
	f.sql(`CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID`)
	_, err := f.b.Exec(t.Context(), &dsl.SetChangeTracking{Table: "kv", Enabled: true})
	if !errors.Is(err, sqlite.ErrUnsupported) || !strings.Contains(err.Error(), "WITHOUT ROWID") {
		t.Fatalf("enable on a WITHOUT ROWID table: %v", err)
	}
	var n int
	if err := f.b.DB().QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema WHERE name LIKE 'sluice_%kv'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("objects left: %d, %v", n, err)
	}
}
