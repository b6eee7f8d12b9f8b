package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestDatabaseStylesDoNotChangeValues: a source database whose sessions
// default to DateStyle 'SQL, DMY', IntervalStyle 'sql_standard',
// extra_float_digits 0 and bytea_output 'escape' (ALTER DATABASE … SET),
// and a target database with DateStyle 'SQL, MDY': values that travel as
// text (arrays of dates, floats and bytea, ranges, intervals) arrive as
// the source holds them, PostgreSQL → PostgreSQL and PostgreSQL → SQLite.
// Before every sluice session fixed these settings, the target held the
// day and month swapped and floats cut to 15 digits, exit 0. The
// application writes through a plain client, in its database's styles;
// rows are compared as text rendered by sluice on both sides, against
// the source's rows read in a session of fixed ISO styles.
func TestDatabaseStylesDoNotChangeValues(t *testing.T) {
	src := pgtest.NewDatabase(t)
	dst := pgtest.NewDatabase(t)
	e := newEnv(t)
	lite := e.conn("t.db")
	name := func(url string) string {
		c, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		return pgx.Identifier{c.Database}.Sanitize()
	}
	pgExec(t, src, "ALTER DATABASE "+name(src)+" SET DateStyle = 'SQL, DMY'")
	pgExec(t, src, "ALTER DATABASE "+name(src)+" SET IntervalStyle = 'sql_standard'")
	pgExec(t, src, "ALTER DATABASE "+name(src)+" SET extra_float_digits = 0")
	pgExec(t, src, "ALTER DATABASE "+name(src)+" SET bytea_output = 'escape'")
	pgExec(t, dst, "ALTER DATABASE "+name(dst)+" SET DateStyle = 'SQL, MDY'")
	pgExec(t, src, `CREATE TABLE st (id int PRIMARY KEY, da date[], fa float8[], ba bytea[], dr daterange, tr tsrange,
		iv interval, ia interval[], ts timestamp[], f float8)`)
	e.sql(src, "ALTER TABLE st SET PROPERTIES ('change_tracking' = 'true')")
	cols := "id, da, fa, ba, dr, tr, iv, ia, ts, f"
	jobs := map[string]string{}
	for _, p := range []struct{ name, dst string }{{"st_pg", dst}, {"st_lite", lite}} {
		e.sql(src, fmt.Sprintf("CREATE TABLE STREAM s_%s ON TABLE st WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')", p.name))
		jobs[p.name] = fmt.Sprintf("connection: '%s'\nname: %s\nsource: s_%s\nsink: {table: %s, mode: merge, keys: [id], connection: '%s'}\n", src, p.name, p.name, p.name, p.dst)
	}
	// The application, in the source database's own styles.
	pgExec(t, src, `INSERT INTO st VALUES
		(1, '{2024-01-02,NULL}', '{3.141592653589793,0.1}', '{"\\x00ff5c27",NULL}', '[2024-01-02,2024-02-03)', '[2024-01-02 03:04:05.123456,)',
		 '-1 days -02:00:00', '{"1 year 2 mons -3 days 04:05:06.789"}', '{"2024-12-31 23:59:59.999999"}', 1.0000000000000002),
		(2, '{31/12/2024}', '{1e-300}', '{""}', 'empty', '(,)', '1 mon -1 day', NULL, '{"0044-03-15 12:00:00 BC"}', -0.1)`)
	pgExec(t, src, "UPDATE st SET fa = '{2.718281828459045}' WHERE id = 2")
	for job, j := range jobs {
		if _, err := e.run(e.job(job+".yaml", j)); err != nil {
			t.Fatalf("%s: %v", job, err)
		}
	}
	// The source's rows in a session of fixed styles (sluice's own).
	want := e.sql(src, "SELECT "+cols+" FROM st ORDER BY id")
	if len(want) != 2 || want[0][1] != "{2024-01-02,NULL}" || !strings.Contains(want[0][2], "3.141592653589793") {
		t.Fatalf("source rows read back as %v", want)
	}
	for job, conn := range map[string]string{"st_pg": dst, "st_lite": lite} {
		got := e.sql(conn, "SELECT "+cols+" FROM "+job+" ORDER BY id")
		if !equalRows(got, want) {
			t.Errorf("%s: target rows\n%v\nwant the source's\n%v", job, got, want)
		}
	}
}
