package cli_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLiteDeclaredTypesArriveExactly: an application's SQLite table with
// the declared types ORMs write (Django's datetime and decimal, a bare
// NUMERIC, Rails' datetime(6), time) goes to another SQLite file through
// a merge job, and every value arrives as the application stored it,
// compared with what Python's sqlite3 reads from both files. Before, a
// DATETIME column failed every run ("cannot store … (timestamp) as
// DECIMAL(38,10)") and NUMERIC values were rounded to 10 places and
// padded (1.5 → 1.5000000000).
func TestSQLiteDeclaredTypesArriveExactly(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the application's writes and the comparison use its sqlite3 module")
	}
	d := newDB(t)
	src := filepath.Join(d.dir, "x.db")
	dst := filepath.Join(d.dir, "target.db")
	app := func(script string) string {
		t.Helper()
		out, err := exec.Command(py, "-c", "import sqlite3, sys\n"+script, src, dst).CombinedOutput()
		if err != nil {
			t.Fatalf("python3: %v\n%s", err, out)
		}
		return string(out)
	}
	app(`c = sqlite3.connect(sys.argv[1])
c.execute("CREATE TABLE ev (id INTEGER PRIMARY KEY, at datetime, at6 datetime(6), amt NUMERIC, price decimal, tm time)")
c.execute("INSERT INTO ev VALUES (1, '2024-01-02 03:04:05', '2024-01-02 03:04:05.123456', 0.123456789012345, '12.3400', '10:11:12')")
c.execute("INSERT INTO ev VALUES (2, NULL, NULL, 1.5, 7, NULL)")
c.commit()`)
	mustSluice(t, "sql", "--conn", d.conn, `ALTER TABLE ev SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE ev WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE')`)
	job := writeFile(t, d.dir, "ev.yaml", "name: ev_copy\nconnection: "+d.conn+"\nsource: s\nsink: {connection: \"sqlite:"+dst+"\", table: ev, mode: merge, keys: [id]}\n")
	mustSluice(t, "run", job)
	app(`c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE ev SET amt = 2.25, at = '2025-06-07 08:09:10' WHERE id = 2")
c.execute("INSERT INTO ev VALUES (3, '1999-12-31 23:59:59', NULL, 100, '0.000000000001', '00:00:00')")
c.commit()`)
	mustSluice(t, "run", job)
	// Each value as the application reads it: its text (a REAL through
	// Python's shortest repr, which is Go's too); the decimals as numbers
	// (the source stores them as REAL under NUMERIC affinity, 1e-12, the
	// target as decimal text, 0.000000000001).
	cmp := app(`from decimal import Decimal
def val(i, v):
    if v is None: return None
    s = repr(v) if isinstance(v, float) else str(v)
    return str(Decimal(s).normalize()) if i in (3, 4) else s
def rows(path):
    c = sqlite3.connect(path)
    return [[val(i, v) for i, v in enumerate(r)]
            for r in c.execute("SELECT id, at, at6, amt, price, tm FROM ev ORDER BY id")]
s, d = rows(sys.argv[1]), rows(sys.argv[2])
print(s == d)
print(s)
print(d)`)
	lines := strings.Split(strings.TrimSpace(cmp), "\n")
	if len(lines) != 3 || lines[0] != "True" {
		t.Fatalf("target differs from the source:\nsource %s\ntarget %s", lines[1], lines[2])
	}
	if !strings.Contains(lines[1], "'0.123456789012345'") || !strings.Contains(lines[1], "'1E-12'") || !strings.Contains(lines[1], "'2024-01-02 03:04:05.123456'") {
		t.Fatalf("the source does not hold what the test wrote: %s", lines[1])
	}
}

// TestSQLiteTableNamedLikeTheReadsCTEs: tables named g, r, n, f, init and
// all_ (the names the stream reads once gave their CTEs, which shadow a
// table of the same name inside the query: "circular reference: n") are
// read by every kind of stream read: SHOW_INITIAL_ROWS of a STANDARD and
// an APPEND_ONLY stream, and a STANDARD read after a consuming run.
func TestSQLiteTableNamedLikeTheReadsCTEs(t *testing.T) {
	for _, name := range []string{"g", "r", "n", "f", "init", "all_"} {
		t.Run(name, func(t *testing.T) {
			d := newDB(t)
			q := "`" + name + "`"
			mustSluice(t, "sql", "--conn", d.conn, "CREATE TABLE "+q+" (id INT, v STRING, PRIMARY KEY (id));\n"+
				"INSERT INTO "+q+" VALUES (1, 'a'), (2, 'b');\n"+
				"ALTER TABLE "+q+" SET PROPERTIES ('change_tracking' = 'true');\n"+
				"CREATE TABLE STREAM s ON TABLE "+q+" WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE');\n"+
				"CREATE TABLE STREAM a ON TABLE "+q+" WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY', 'SHOW_INITIAL_ROWS' = 'TRUE');\n"+
				"INSERT INTO "+q+" VALUES (3, 'c')")
			for _, s := range []string{"s", "a"} {
				out := mustSluice(t, "preview", "--conn", d.conn, "--format", "csv", s).stdout
				if n := strings.Count(out, "INSERT"); n != 3 {
					t.Errorf("preview %s: %d INSERTs, want 3:\n%s", s, n, out)
				}
			}
			job := writeFile(t, d.dir, "j.yaml", "name: j\nconnection: "+d.conn+"\nsource: s\nsink: {table: copy_t, mode: merge, keys: [id]}\n")
			mustSluice(t, "run", job)
			mustSluice(t, "sql", "--conn", d.conn, "UPDATE "+q+" SET v = 'z' WHERE id = 2")
			out := mustSluice(t, "preview", "--conn", d.conn, "--format", "csv", "s").stdout
			if !strings.Contains(out, "UPDATE_AFTER") || !strings.Contains(out, ",2,z") {
				t.Errorf("preview s after the run: want the UPDATE of id 2 to z:\n%s", out)
			}
		})
	}
}

// TestSQLiteValueErrorNamesTheKey: a value the application stored that
// does not read as its column's type (text in a NUMERIC column, which
// SQLite allows) fails the run with an error naming the row's key and the
// column, and the offset does not move; a job with a dead-letter table
// sets the row aside there and goes on.
func TestSQLiteValueErrorNamesTheKey(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the application's write uses its sqlite3 module")
	}
	d := newDB(t)
	if out, err := exec.Command(py, "-c", `import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("CREATE TABLE n (id INTEGER PRIMARY KEY, v NUMERIC)")
c.commit()`, filepath.Join(d.dir, "x.db")).CombinedOutput(); err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	mustSluice(t, "sql", "--conn", d.conn, "ALTER TABLE n SET PROPERTIES ('change_tracking' = 'true');\n"+
		"CREATE TABLE STREAM sn ON TABLE n WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
	if out, err := exec.Command(py, "-c", `import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("INSERT INTO n VALUES (1, 2.5)")
c.execute("INSERT INTO n VALUES (7, 'abc')")
c.commit()`, filepath.Join(d.dir, "x.db")).CombinedOutput(); err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	job := writeFile(t, d.dir, "n.yaml", "name: n_copy\nconnection: "+d.conn+"\nsource: sn\nsink: {table: n_copy, mode: merge, keys: [id]}\n")
	r := sluice(t, "run", job)
	if r.code == 0 || !strings.Contains(r.stderr, `row with key (id=7), column "v": cannot store "abc" (text)`) {
		t.Fatalf("want a failure naming key 7 and column v:\n%v", r)
	}
	// The change is still pending: a preview shows it, the value as stored.
	if p := sluice(t, "preview", "--conn", d.conn, "--format", "csv", "sn"); p.code != 0 || !strings.Contains(p.stdout, ",7,abc") {
		t.Errorf("the offset moved past key 7: preview\n%v", p)
	}
	// With a dead-letter table the row goes there, and the run goes on.
	dl := writeFile(t, d.dir, "dl.yaml", "name: n_dl\nconnection: "+d.conn+"\nsource: sn\nsink: {table: n_dl, mode: merge, keys: [id], dead_letter: n_dead}\n")
	if r := sluice(t, "run", dl); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "dead-lettered 1") {
		t.Fatalf("run with dead_letter: want success with one dead letter:\n%v", r)
	}
	if got := mustSluice(t, "sql", "--conn", d.conn, "--format", "csv", "SELECT id, v FROM n_dl ORDER BY id").stdout; !strings.Contains(got, "1,2.5") || strings.Contains(got, "7,") {
		t.Errorf("n_dl holds\n%s\nwant key 1 only", got)
	}
	if got := mustSluice(t, "dead-letter", "--format", "json", dl).stdout; !strings.Contains(got, `cannot store \"abc\" (text)`) || !strings.Contains(got, "7") {
		t.Errorf("dead letters of n_dl:\n%s\nwant key 7 with the value error", got)
	}
}
