package postgres

import (
	"context"
	"fmt"
	"testing"
)

// TestJSONPathExact: rows captured after a DDL travel as to_json(row)
// and are moved into the log's typed columns when tracking is enabled
// again (migrateExtra). Written by a session with settings that change
// the text forms (extra_float_digits 0, IntervalStyle sql_standard,
// DateStyle German, bytea_output escape), every value of every type
// comes back equal to the table's, compared in SQL column by column; the
// documented exceptions (a json value's surrounding whitespace, the
// escapes of a json value that is a bare string, an array's lower bound)
// are asserted as they are.
func TestJSONPathExact(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	cols := []struct{ name, typ, val string }{
		{"f8", "double precision", `0.1::float8 + 0.2::float8`},
		{"f8inf", "double precision", `'-Infinity'`},
		{"f8nan", "double precision", `'NaN'`},
		{"f4", "real", `1.1::real / 3`},
		{"num", "numeric", `'123456789012345678901234567890.000100'`},
		{"numnan", "numeric", `'NaN'`},
		{"money", "money", `12345.67`},
		{"iv", "interval", `'-1 year -2 mons +3 days -04:05:06.789'`},
		{"ts", "timestamp", `'0044-03-15 12:00:00.123456 BC'`},
		{"tsinf", "timestamp", `'infinity'`},
		{"tz", "timestamptz", `'2024-02-29 23:59:59.999999+05:30'`},
		{"d", "date", `'-infinity'`},
		{"tm", "time", `'23:59:59.999999'`},
		{"tmz", "timetz", `'10:00+05:30'`},
		{"bt", "bytea", `'\x00ff5c27'::bytea`},
		{"u", "uuid", `'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'`},
		{"ip", "inet", `'2001:db8::1/64'`},
		{"cidr", "cidr", `'10.0.0.0/8'`},
		{"mac", "macaddr", `'08:00:2b:01:02:03'`},
		{"bits", "bit(4)", `B'1010'`},
		{"vbits", "varbit", `B'1'`},
		{"xml", "xml", `'<a b="1">x &amp; y</a>'`},
		{"jb", "jsonb", `'{"b": [1.50, null], "a": "é"}'::text::jsonb - 'zz'`},
		{"js", "json", `'{"b" : [1.50, null],  "a":"x"}'`},
		{"arr2", "int[]", `'{{1,NULL},{3,4}}'`},
		{"tarr", "text[]", `ARRAY['a,b', NULL, '"', 'é', '']`},
		{"tsarr", "timestamptz[]", `ARRAY['2024-01-01 00:00+00'::timestamptz, 'infinity']`},
		{"rng", "int4range", `'[1,5)'`},
		{"big", "text", `repeat('x', 20000) || 'é'`},
		{"empty", "text", `''`},
		{"nul", "text", `NULL`},
	}
	create := "CREATE TABLE ty (id int PRIMARY KEY"
	var insertCols, insertVals string
	for _, c := range cols {
		create += ", " + c.name + " " + c.typ
		insertCols += ", " + c.name
		insertVals += ", " + c.val
	}
	sqlExec(t, b, create+")")
	track(t, b, "ty")
	mkStream(t, b, "ty_s", "ty", "STANDARD", false)
	conn := connect(ctx, t, u)
	for _, s := range []string{
		`ALTER TABLE ty ADD COLUMN extra int`, // the capture now logs rows as JSON
		`SET extra_float_digits = 0`, `SET IntervalStyle = sql_standard`, `SET DateStyle = German`, `SET bytea_output = escape`,
		`INSERT INTO ty (id` + insertCols + `, extra) VALUES (1` + insertVals + `, 5)`,
		// the documented exceptions
		`INSERT INTO ty (id, js, arr2, extra) VALUES (2, '  {"a": "caf\u00e9"}  ', '[0:1]={7,8}', 6)`,
		`INSERT INTO ty (id, js) VALUES (3, '"caf\u00e9"')`,
		`INSERT INTO ty (id, jb, js) VALUES (4, 'null', 'null')`,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	var fd string
	if err := conn.QueryRow(ctx, `SELECT current_setting('extra_float_digits') || current_setting('IntervalStyle')`).Scan(&fd); err != nil || fd != "0sql_standard" {
		t.Errorf("writer's settings after the capture: %q, %v; want them as it set them (0sql_standard)", fd, err)
	}
	track(t, b, "ty")
	tr, _, err := b.tracked(ctx, b.pool, "ty")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(cols, struct{ name, typ, val string }{"extra", "int", ""}) {
		var same bool
		q := fmt.Sprintf(`SELECT t.%[1]s::text IS NOT DISTINCT FROM l.%[1]s::text FROM ty t JOIN %[2]s l ON l.id = t.id AND l.__op = 'I' WHERE t.id = 1`, c.name, tr.LogRef())
		if err := b.pool.QueryRow(ctx, q).Scan(&same); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !same {
			var tv, lv *string
			_ = b.pool.QueryRow(ctx, fmt.Sprintf(`SELECT t.%[1]s::text, l.%[1]s::text FROM ty t JOIN %[2]s l ON l.id = t.id AND l.__op = 'I' WHERE t.id = 1`, c.name, tr.LogRef())).Scan(&tv, &lv)
			t.Errorf("column %s (%s): table %v, logged through JSON %v", c.name, c.typ, deref(tv), deref(lv))
		}
	}
	var js, arr, str string
	if err := b.pool.QueryRow(ctx, fmt.Sprintf(`SELECT js::text, arr2::text, (SELECT js::text FROM %[1]s WHERE id = 3) FROM %[1]s WHERE id = 2`, tr.LogRef())).Scan(&js, &arr, &str); err != nil {
		t.Fatal(err)
	}
	if js != `{"a": "caf\u00e9"}` || arr != `{7,8}` || str != `"café"` {
		t.Errorf("documented exceptions: json %q, array %q, json string %q; want the surrounding whitespace gone, the lower bound 1, the string's escape rewritten", js, arr, str)
	}
	// The fourth: a json or jsonb value that is JSON's null reads as SQL
	// NULL (to_json(row) writes both as null).
	var jbNull, jsNull bool
	if err := b.pool.QueryRow(ctx, fmt.Sprintf(`SELECT jb IS NULL, js IS NULL FROM %s WHERE id = 4`, tr.LogRef())).Scan(&jbNull, &jsNull); err != nil {
		t.Fatal(err)
	}
	if !jbNull || !jsNull {
		t.Errorf("documented exception: JSON null logged through JSON as jsonb NULL %v, json NULL %v; want both SQL NULL (or, if this is fixed, the README's exceptions updated)", jbNull, jsNull)
	}
}

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}
