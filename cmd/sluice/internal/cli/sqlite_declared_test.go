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
