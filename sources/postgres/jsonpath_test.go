package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/plan"
)

// TestJSONPathExact: rows captured after a DDL travel as the row's
// record text in __extra and are moved into the log's typed columns by
// attnum, either when tracking is enabled again (migrateExtra) or when a
// run describes the stream (followColumnsNow). Written by a session with
// settings that change the text forms (extra_float_digits 0,
// IntervalStyle sql_standard, DateStyle German, bytea_output escape,
// TimeZone America/St_Johns), every value of every type — an INSERT's,
// an UPDATE's old and new images, a TRUNCATE's deleted rows — comes back
// equal to the table's, compared in SQL column by column as text (IS NOT
// DISTINCT FROM: a json value's text byte for byte, an array's bounds, a
// json or jsonb null apart from SQL NULL), with none of the exceptions
// the to_json form had (a json value's surrounding whitespace and string
// escapes, an array's lower bound, JSON's null as SQL NULL, in arrays
// and composites too).
func TestJSONPathExact(t *testing.T) {
	for _, how := range []string{"enable tracking again", "a run describes the stream"} {
		t.Run(how, func(t *testing.T) { testJSONPathExact(t, how == "enable tracking again") })
	}
}

func testJSONPathExact(t *testing.T, enable bool) {
	b, u := openDB(t)
	ctx := context.Background()
	type col struct{ name, typ, val string }
	cols := []col{
		{"f8", "double precision", `0.1::float8 + 0.2::float8`},
		{"f8inf", "double precision", `'-Infinity'`},
		{"f8nan", "double precision", `'NaN'`},
		{"f4", "real", `1.1::real / 3`},
		{"f4arr", "real[]", `ARRAY[1.1::real / 3, 'NaN']`},
		{"num", "numeric", `'123456789012345678901234567890.000100'`},
		{"numnan", "numeric", `'NaN'`},
		{"num52", "numeric(5,2)", `'-1.50'`},
		{"money", "money", `12345.67`},
		{"iv", "interval", `'-1 year -2 mons +3 days -04:05:06.789'`},
		{"ivarr", "interval[]", `ARRAY['1 day -00:00:01'::interval, NULL]`},
		{"ts", "timestamp", `'0044-03-15 12:00:00.123456 BC'`},
		{"tsinf", "timestamp", `'infinity'`},
		{"tz", "timestamptz", `'2024-02-29 23:59:59.999999+05:30'`},
		{"tzlmt", "timestamptz", `'1850-01-01 00:00:00+00'`},
		{"d", "date", `'-infinity'`},
		{"d2", "date", `'2024-02-03'`},
		{"tm", "time", `'23:59:59.999999'`},
		{"tmz", "timetz", `'10:00+05:30'`},
		{"bt", "bytea", `'\x00ff5c27'::bytea`},
		{"u", "uuid", `'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'`},
		{"ip", "inet", `'2001:db8::1/64'`},
		{"cidr", "cidr", `'10.0.0.0/8'`},
		{"mac", "macaddr", `'08:00:2b:01:02:03'`},
		{"bits", "bit(4)", `B'1010'`},
		{"vbits", "varbit", `B'1'`},
		{"vc", "varchar(3)", `'ab '`},
		{"ch", "char(5)", `'ab'`},
		{"xml", "xml", `'<a b="1">x &amp; y</a>'`},
		{"jb", "jsonb", `'{"b": [1.50, null], "a": "é"}'::text::jsonb - 'zz'`},
		{"js", "json", `'{"b" : [1.50, null],  "a":"x"}'`},
		// Forms the row's to_json lost.
		{"jbnull", "jsonb", `'null'`},
		{"jsnull", "json", `'null'`},
		{"jsspace", "json", `'  {"a": "caf\u00e9"}  '`},
		{"jsstr", "json", `' "a\u0041" '`},
		{"lb", "int[]", `'[0:1]={7,8}'`},
		{"lb2", "text[]", `'[-2:-1][3:3]={{"a b"},{NULL}}'`},
		{"jbarr", "jsonb[]", `ARRAY['null'::jsonb, NULL, '{"a": 1}']`},
		{"jsarr", "json[]", `ARRAY[' null '::json, NULL]`},
		{"cmp", "jp_pair", `ROW(NULL, ' null ')::jp_pair`},
		{"cmpnull", "jp_pair", `ROW(NULL, NULL)::jp_pair`},
		{"arr2", "int[]", `'{{1,NULL},{3,4}}'`},
		{"tarr", "text[]", `ARRAY['a,b', NULL, '"', 'é', '', 'NULL', '(x)']`},
		{"tsarr", "timestamptz[]", `ARRAY['2024-01-01 00:00+00'::timestamptz, 'infinity']`},
		{"rng", "int4range", `'[1,5)'`},
		{"trng", "tstzrange", `'[2024-01-01 00:00+00,)'`},
		{"big", "text", `repeat('x', 20000) || 'é'`},
		{"empty", "text", `''`},
		{"nulltext", "text", `'NULL'`},
		{"quote", "text", `'a"b\c(d),e'`},
		{"nul", "text", `NULL`},
	}
	create := "CREATE TYPE jp_pair AS (a int, j json); CREATE TABLE ty (id int PRIMARY KEY"
	var insertCols, insertVals, allNull string
	for _, c := range cols {
		create += ", " + c.name + " " + c.typ
		insertCols += ", " + c.name
		insertVals += ", " + c.val
		allNull += ", NULL"
	}
	sqlExec(t, b, create+")")
	track(t, b, "ty")
	mkStream(t, b, "ty_s", "ty", "STANDARD", false)
	conn := connect(ctx, t, u)
	for _, s := range []string{
		`ALTER TABLE ty ADD COLUMN extra int`, // the capture now logs rows as JSON
		`SET extra_float_digits = 0`, `SET IntervalStyle = sql_standard`, `SET DateStyle = German`, `SET bytea_output = escape`, `SET TimeZone = 'America/St_Johns'`,
		`INSERT INTO ty (id` + insertCols + `, extra) VALUES (1` + insertVals + `, 5), (2` + allNull + `, NULL)`,
		`UPDATE ty SET extra = extra`, // old and new images, both the table's rows
		`CREATE TABLE ty_before AS SELECT * FROM ty`,
		`TRUNCATE ty`, // every row logged as deleted
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	var settings string
	if err := conn.QueryRow(ctx, `SELECT concat_ws(' ', current_setting('extra_float_digits'), current_setting('IntervalStyle'), current_setting('DateStyle'))`).Scan(&settings); err != nil || settings != "0 sql_standard German, DMY" {
		t.Errorf("writer's settings after the capture: %q, %v; want them as it set them (0 sql_standard German, DMY)", settings, err)
	}
	if enable {
		track(t, b, "ty")
	} else if _, err := b.Stream(ctx, plan.Source{Stream: "ty_s"}); err != nil {
		t.Fatal(err)
	}
	tr, _, err := b.tracked(ctx, b.pool, "ty")
	if err != nil {
		t.Fatal(err)
	}
	var images string
	if err := b.pool.QueryRow(ctx, fmt.Sprintf(`SELECT string_agg(__op || id, ' ' ORDER BY __op, id) FROM %s WHERE __extra IS NULL`, tr.LogRef())).Scan(&images); err != nil || images != "A1 A2 B1 B2 D1 D2 I1 I2" {
		t.Fatalf("log rows moved into the typed columns: %q, %v; want A1 A2 B1 B2 D1 D2 I1 I2", images, err)
	}
	for _, c := range append(cols, col{"extra", "int", ""}) {
		var differ []string
		q := fmt.Sprintf(`SELECT l.__op || l.id FROM ty_before t JOIN %[2]s l ON l.id = t.id WHERE t.%[1]s::text IS DISTINCT FROM l.%[1]s::text ORDER BY l.__seq`, c.name, tr.LogRef())
		rows, err := b.pool.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if differ, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(differ) > 0 {
			var tv, lv *string
			_ = b.pool.QueryRow(ctx, fmt.Sprintf(`SELECT t.%[1]s::text, l.%[1]s::text FROM ty_before t JOIN %[2]s l ON l.id = t.id WHERE l.__op || l.id = $1`, c.name, tr.LogRef()), differ[0]).Scan(&tv, &lv)
			t.Errorf("column %s (%s): images %v differ from the table's, e.g. %s: table %v, logged %v", c.name, c.typ, differ, differ[0], deref(tv), deref(lv))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}

// TestJSONPathFunctionUpgraded: a capture function written by an earlier
// sluice, which logged the JSON path's rows as to_json objects, is
// rewritten by the next run's description of a stream on its table
// (logBehind, alignLog), with no DDL in between, so a JSON null written
// after a later DDL arrives as JSON's null, not as SQL NULL.
func TestJSONPathFunctionUpgraded(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE up (id int PRIMARY KEY, jb jsonb)`)
	track(t, b, "up")
	mkStream(t, b, "up_s", "up", "STANDARD", false)
	tr, _, err := b.tracked(ctx, b.pool, "up")
	if err != nil {
		t.Fatal(err)
	}
	fn := "sluice." + tr.Func + "()"
	// The earlier function: the same source with to_json(r.*).
	sqlExec(t, b, fmt.Sprintf(`DO $$ DECLARE src text; BEGIN
		SELECT prosrc INTO src FROM pg_proc WHERE oid = %[1]s::regprocedure;
		EXECUTE format('CREATE OR REPLACE FUNCTION %[2]s RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS %%L', replace(src, %[3]s, 'pg_catalog.to_json(r.*)'));
	END $$`, sqlLiteral(fn), fn, sqlLiteral(rowTextMark)))
	current := func() bool {
		var ok bool
		if err := b.pool.QueryRow(ctx, `SELECT strpos(prosrc, $2) > 0 FROM pg_proc WHERE oid = $1::regprocedure`, fn, rowTextMark).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if current() {
		t.Fatal("the function still logs record text after it was replaced by the earlier one")
	}
	if _, err := b.Stream(ctx, plan.Source{Stream: "up_s"}); err != nil {
		t.Fatal(err)
	}
	if !current() {
		t.Fatal("a run's description of the stream left the earlier capture function in place")
	}
	conn := connect(ctx, t, u)
	for _, q := range []string{`ALTER TABLE up ADD COLUMN extra int`, `INSERT INTO up VALUES (1, 'null', 1)`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := b.Stream(ctx, plan.Source{Stream: "up_s"}); err != nil {
		t.Fatal(err)
	}
	var got *string
	if err := b.pool.QueryRow(ctx, fmt.Sprintf(`SELECT jb::text FROM %s WHERE id = 1 AND __extra IS NULL`, tr.LogRef())).Scan(&got); err != nil || got == nil || *got != "null" {
		t.Errorf("jsonb null logged after the DDL: %v, %v; want null", deref(got), err)
	}
}
