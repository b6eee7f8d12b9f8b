package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/sinks/stdout"
)

// pgTypeCol is one column of the PostgreSQL type table: its type and one
// SQL literal per row (rows past len(vals) are NULL; row 1 is NULL in
// every column).
type pgTypeCol struct {
	name, typ string
	vals      []string
}

// pgTypeRows is the number of rows of the type table.
const pgTypeRows = 8

// pgSessionZone is the session TimeZone of both sluice and psql: not UTC,
// with a half-hour offset, summer time, and local mean time before 1884.
const pgSessionZone = "America/St_Johns"

// pgTypeCols has a column for every PostgreSQL type docs/types.md lists,
// with edge values: NULL, empty, unicode, control characters, the
// smallest and largest values, infinities, NaN, -0, BC dates, 2-D arrays
// with NULL elements, timestamptz across summer time and local mean time.
var pgTypeCols = []pgTypeCol{
	{"i2", "smallint", []string{"1", "-32768", "32767", "0"}},
	{"i4", "integer", []string{"42", "-2147483648", "2147483647", "0"}},
	{"i8", "bigint", []string{"1", "-9223372036854775808", "9223372036854775807", "0"}},
	{"bo", "boolean", []string{"true", "false"}},
	{"r", "real", []string{"'0.1'", "'NaN'", "'Infinity'", "'-Infinity'", "'-3.4028235e+38'", "'1234567'", "'1e-45'"}},
	{"dp", "double precision", []string{"'0.1'", "'1.7976931348623157e308'", "'5e-324'", "'-0'", "'1e15'", "'123456789012345'", "'NaN'"}},
	{"n2", "numeric(10,2)", []string{"'12345678.90'", "'NaN'", "'-0.01'", "'0'", "'99999999.99'"}},
	{"n", "numeric", []string{"'1.50'", "'NaN'", "'Infinity'", "'-Infinity'", "'1234567890123456789012345678901234567890.0123456789012345678901234567890'", "'0.000000000000000000001'", "'1e100'"}},
	{"tx", "text", []string{"''", `'naïve "q" ✓'`, `E'tab\there\nnew line'`, "'日本語 👍🏽 é'", "'a|b,c'", "' padded '", "'NULL'"}},
	{"vc", "varchar(5)", []string{"'abc'", "''", "'ünï✓x'"}},
	{"ch", "char(4)", []string{"'ab'", "''", "'üüüü'"}},
	{"by", "bytea", []string{`'\x00ff10'`, "''", `'\x5c78'`, "decode(repeat('ab', 30), 'hex')"}},
	{"dt", "date", []string{"'2024-02-29'", "'infinity'", "'-infinity'", "'4713-01-01 BC'", "'5874897-12-31'", "'0005-02-29 BC'", "'0001-01-01'"}},
	{"tz", "timestamp with time zone", []string{"'2024-01-02 03:04:05.123456+05:30'", "'-infinity'", "'infinity'", "'2024-07-01 12:00:00Z'", "'0001-01-01 00:00:00Z'", "'4713-01-01 00:00:00Z BC'", "'294276-12-31 23:59:59.999999Z'"}},
	{"ts", "timestamp without time zone", []string{"'2024-03-10 02:30:00.123456'", "'infinity'", "'-infinity'", "'4713-01-01 00:00:00 BC'", "'294276-12-31 23:59:59.999999'", "'2000-01-01 00:00:00.000001'"}},
	{"js", "json", []string{`'{"b":2,  "b":1}'`, "'[]'", `'"\u00fc"'`, "'1e400'"}},
	{"jb", "jsonb", []string{`'{"a": 1, "b": [true, null]}'`, `'{"pi": 3.14159265358979323846264338327950288419716939937510, "big": 1e400}'`, "'{}'", `'"日本"'`}},
	{"u", "uuid", []string{"'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", "'00000000-0000-0000-0000-000000000000'", "'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF'"}},
	{"ai", "integer[]", []string{"'{1,2,3}'", "'{{1,NULL},{NULL,-2147483648}}'", "'{}'"}},
	{"at", "text[]", []string{`'{"a,b","NULL",NULL,""}'`, `'{{"ü","x"},{"y",NULL}}'`, `E'{"with \\"quote\\"","back\\\\slash"}'`}},
	{"an", "numeric[]", []string{"'{1.50,NaN}'", "'{Infinity,-Infinity}'"}},
	{"atz", "timestamptz[]", []string{`'{"2024-01-02 03:04:05+00",infinity,NULL}'`}},
	{"iv", "interval", []string{"'1 year 2 mons 3 days 04:05:06.789'", "'-178000000 years'", "'0'"}},
	{"ip", "inet", []string{"'192.168.0.1/24'", "'::1'", "'2001:db8::ff00:42:8329/128'"}},
	{"cn", "cidr", []string{"'10.0.0.0/8'", "'::/0'"}},
	{"mac", "macaddr", []string{"'08:00:2b:01:02:03'", "'FF:FF:FF:FF:FF:FF'"}},
	{"b", "bit(4)", []string{"B'0101'", "B'0000'"}},
	{"vb", "bit varying", []string{"B'1'", "B''", "B'0000000001'"}},
	{"tm", "time without time zone", []string{"'10:11:12.123456'", "'24:00:00'", "'00:00:00'"}},
	{"ttz", "time with time zone", []string{"'10:00:00+05:30'", "'23:59:59.999999-15:59'"}},
	{"mo", "money", []string{"'1234.56'", "'-92233720368547758.08'", "'0'"}},
	{"x", "xml", []string{`'<a b="1">ü</a>'`, "'text only'", "''"}},
	{"ir", "int4range", []string{"'[1,10)'", "'empty'", "'(,)'"}},
	{"tr", "tstzrange", []string{"'[2024-01-01 00:00:00+00,infinity)'", "'(,2024-07-01 12:00:00+00]'"}},
	{"dr", "daterange", []string{"'[2024-01-01,2024-02-01)'"}},
	{"pt", "point", []string{"'(1.5,-2)'", "'(1e300,-0)'"}},
	{"pg", "polygon", []string{"'((0,0),(1,1),(1,0))'"}},
	{"ci", "circle", []string{"'<(0,0),1.5>'"}},
	{"tv", "tsvector", []string{"'a fat cat sat on a mat'", "''"}},
	{"m", "mood", []string{"'happy'", "'sad ü'", "'1'"}},
	{"d", "posint", []string{"1", "2147483647"}},
}

// pgTypeTable creates, in a fresh database, the enum and domain the
// columns use and table t with a column per type and pgTypeRows rows.
// It returns the database's URL.
func pgTypeTable(t *testing.T) string {
	t.Helper()
	url := pgtest.NewDatabase(t)
	defs := []string{"id integer PRIMARY KEY"}
	for _, c := range pgTypeCols {
		defs = append(defs, fmt.Sprintf("%q %s", c.name, c.typ))
	}
	ddl := "CREATE TYPE mood AS ENUM ('happy', 'sad ü', '1'); CREATE DOMAIN posint AS integer CHECK (VALUE > 0); " +
		fmt.Sprintf("CREATE TABLE t (%s);", strings.Join(defs, ", "))
	pgExecSQL(t, url, ddl)
	return url
}

// pgTypeInsert is the INSERT of the type table's rows.
func pgTypeInsert() string {
	var rows []string
	for i := range pgTypeRows {
		vals := []string{fmt.Sprint(i + 1)}
		for _, c := range pgTypeCols {
			v := "NULL"
			if i > 0 && i-1 < len(c.vals) {
				v = c.vals[i-1]
			}
			vals = append(vals, v)
		}
		rows = append(rows, "("+strings.Join(vals, ", ")+")")
	}
	return "INSERT INTO t VALUES " + strings.Join(rows, ", ")
}

func pgExecSQL(t *testing.T, url, sql string) {
	t.Helper()
	c, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	if _, err := c.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// psqlNull stands for NULL in psql's output.
const psqlNull = "⟂NULL⟂"

// psqlRows runs query with `psql -At` (fields and records split by the
// ASCII unit and record separators) in a session whose TimeZone is
// pgSessionZone, and returns each row's values as psql prints them (NULL
// as nil): PostgreSQL's own text, computed without sluice.
func psqlRows(t *testing.T, psql, url, query string) [][]*string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-F", "\x1f", "-R", "\x1e", "-P", "null="+psqlNull, "-d", url, "-c", query)
	cmd.Env = append(os.Environ(), "PGTZ="+pgSessionZone)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("psql %s: %v\n%s", query, err, stderr.String())
	}
	var rows [][]*string
	for rec := range strings.SplitSeq(strings.TrimSuffix(string(out), "\n"), "\x1e") {
		var row []*string
		for f := range strings.SplitSeq(rec, "\x1f") {
			if f == psqlNull {
				row = append(row, nil)
			} else {
				row = append(row, &f)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// findPsql returns psql's path, or skips t saying why.
func findPsql(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("psql")
	if err != nil {
		t.Skipf("psql is not installed (the reference for PostgreSQL's text of values): %v", err)
	}
	return p
}

// parseCSVNull parses CSV as stdout.CSV and PostgreSQL's COPY write it,
// telling NULL (an empty unquoted field: nil) from the empty string (a
// quoted one). The header line is dropped.
func parseCSVNull(t *testing.T, out string) [][]*string {
	t.Helper()
	rows := parseCSVRecords(t, out)
	if len(rows) == 0 {
		t.Fatalf("no CSV header in %q", out)
	}
	return rows[1:]
}

// parseCSVRecords is parseCSVNull without dropping the header.
func parseCSVRecords(t *testing.T, out string) [][]*string {
	t.Helper()
	var rows [][]*string
	var row []*string
	s := out
	for len(s) > 0 {
		var field string
		quoted := false
		if s[0] == '"' {
			quoted = true
			i := 1
			var b strings.Builder
			for {
				if i >= len(s) {
					t.Fatalf("unterminated quote in CSV:\n%s", out)
				}
				if s[i] == '"' {
					if i+1 < len(s) && s[i+1] == '"' {
						b.WriteByte('"')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			field, s = b.String(), s[i:]
		} else {
			end := strings.IndexAny(s, ",\n")
			if end < 0 {
				end = len(s)
			}
			field, s = s[:end], s[end:]
		}
		if field == "" && !quoted {
			row = append(row, nil)
		} else {
			row = append(row, &field)
		}
		switch {
		case strings.HasPrefix(s, ","):
			s = s[1:]
		case strings.HasPrefix(s, "\n"), s == "":
			rows = append(rows, row)
			row = nil
			s = strings.TrimPrefix(s, "\n")
		default:
			t.Fatalf("CSV field %q is followed by %q", field, s[:min(len(s), 20)])
		}
	}
	return rows
}

// parseJSONLText parses JSON Lines into each row's values in column order
// (names), as text: null → nil, true/false → PostgreSQL's "t"/"f", a
// number → its literal, a string → itself.
func parseJSONLText(t *testing.T, out string, names []string) [][]*string {
	t.Helper()
	var rows [][]*string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			t.Fatalf("%v in JSON line %q", err, sc.Text())
		}
		if len(obj) != len(names) {
			t.Fatalf("JSON line %q has %d keys, want %q", sc.Text(), len(obj), names)
		}
		row := make([]*string, len(names))
		for i, n := range names {
			v, ok := obj[n]
			if !ok {
				t.Fatalf("JSON line %q has no key %q", sc.Text(), n)
			}
			var s string
			switch x := v.(type) {
			case nil:
				continue
			case bool:
				s = map[bool]string{true: "t", false: "f"}[x]
			case json.Number:
				s = string(x)
			case string:
				s = x
			default:
				t.Fatalf("JSON line %q: %s is %T, not a scalar", sc.Text(), n, v)
			}
			row[i] = &s
		}
		rows = append(rows, row)
	}
	return rows
}

// tableOf is the table `sluice sql --wide` prints for rows of text (nil:
// NULL) under names: the expected output, its cells psql's text.
func tableOf(t *testing.T, names []string, rows [][]*string) string {
	t.Helper()
	cols := make([]cdc.Column, len(names))
	for i, n := range names {
		cols[i] = cdc.Column{Name: n, Type: cdc.TypeString}
	}
	vals := make([][]any, len(rows))
	for r, row := range rows {
		vals[r] = make([]any, len(row))
		for i, v := range row {
			if v != nil {
				vals[r][i] = *v
			}
		}
	}
	var b bytes.Buffer
	if err := stdout.Table(&b, cols, vals); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// diffText reports the cells where got differs from want.
func diffText(t *testing.T, what string, names []string, got, want [][]*string) {
	t.Helper()
	show := func(p *string) string {
		if p == nil {
			return "NULL"
		}
		return strconv.Quote(*p)
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, psql has %d", what, len(got), len(want))
		return
	}
	for r := range want {
		if len(got[r]) != len(want[r]) {
			t.Errorf("%s: row %d has %d values, psql's %d", what, r+1, len(got[r]), len(want[r]))
			continue
		}
		for i := range want[r] {
			if show(got[r][i]) != show(want[r][i]) {
				t.Errorf("%s: row %d column %s: sluice prints %s, psql %s", what, r+1, names[i], show(got[r][i]), show(want[r][i]))
			}
		}
	}
}

// TestSQLPostgresTypes: `sluice sql` prints every PostgreSQL type of
// docs/types.md as psql prints it, in a session that is not in UTC, in
// each --format; the outputs are also kept as golden files
// (testdata/pgtypes/, -update). One script selects each column with id
// (a result set per type); psql reads all columns at once.
func TestSQLPostgresTypes(t *testing.T) {
	psql := findPsql(t)
	url := pgTypeTable(t)
	pgExecSQL(t, url, pgTypeInsert())
	conn := url + "&timezone=" + pgSessionZone
	all := psqlRows(t, psql, url, "SELECT * FROM t ORDER BY id")
	if len(all) != pgTypeRows {
		t.Fatalf("psql: %d rows, want %d", len(all), pgTypeRows)
	}
	// want[c] is psql's id and column c of every row.
	want := make([][][]*string, len(pgTypeCols))
	var script, tables strings.Builder
	for c, col := range pgTypeCols {
		fmt.Fprintf(&script, "SELECT id, `%s` FROM t ORDER BY id;\n", col.name) // sluice's dialect quotes names with ``
		for _, row := range all {
			want[c] = append(want[c], []*string{row[0], row[c+1]})
		}
		tables.WriteString(tableOf(t, []string{"id", col.name}, want[c]))
	}
	for _, format := range []string{"table", "jsonl", "csv"} {
		out := mustSluiceIn(t, script.String(), "sql", "--conn", conn, "--wide", "--format", format, "-f", "-").stdout
		checkGolden(t, filepath.Join("testdata", "pgtypes", "sql."+format+".golden"), out)
		var got [][][]*string // by column: its result set
		switch format {
		case "table":
			if out != tables.String() {
				t.Errorf("--format table differs from psql's values:\n%s\npsql's:\n%s", out, tables.String())
			}
			continue
		case "jsonl":
			got = jsonlResultSets(t, out)
		case "csv":
			got = csvResultSets(t, out)
		}
		if len(got) != len(pgTypeCols) {
			t.Fatalf("--format %s: %d result sets, want %d:\n%s", format, len(got), len(pgTypeCols), out)
		}
		for c, col := range pgTypeCols {
			diffText(t, fmt.Sprintf("%s (%s) --format %s", col.name, col.typ, format), []string{"id", col.name}, got[c], want[c])
		}
	}
}

// jsonlResultSets splits JSON Lines of result sets with columns id and one
// other, in order, by the other column's name, and parses each
// (parseJSONLText).
func jsonlResultSets(t *testing.T, out string) [][][]*string {
	t.Helper()
	var sets [][][]*string
	prev := ""
	for _, line := range strings.SplitAfter(out, "\n") {
		if line == "" {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &obj); err != nil || len(obj) != 2 {
			t.Fatalf("JSON line %q: %v, want an object of id and one column", line, err)
		}
		name := ""
		for k := range obj {
			if k != "id" {
				name = k
			}
		}
		if name != prev {
			sets, prev = append(sets, nil), name
		}
		sets[len(sets)-1] = append(sets[len(sets)-1], parseJSONLText(t, line, []string{"id", name})...)
	}
	return sets
}

// csvResultSets splits CSV of result sets, each under its header line
// (id,NAME), and parses each (parseCSVNull).
func csvResultSets(t *testing.T, out string) [][][]*string {
	t.Helper()
	var sets [][][]*string
	for _, rec := range parseCSVRecords(t, out) {
		if len(rec) == 2 && rec[0] != nil && *rec[0] == "id" {
			sets = append(sets, [][]*string{})
			continue
		}
		if len(sets) == 0 {
			t.Fatalf("CSV does not start with a header:\n%s", out)
		}
		sets[len(sets)-1] = append(sets[len(sets)-1], rec)
	}
	return sets
}

// TestPreviewPostgresTypes: `sluice preview` prints each pending change's
// values of every PostgreSQL type as psql prints the table's rows, in
// each --format.
func TestPreviewPostgresTypes(t *testing.T) {
	psql := findPsql(t)
	url := pgTypeTable(t)
	conn := url + "&timezone=" + pgSessionZone
	mustSluice(t, "sql", "--conn", conn, "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true')")
	mustSluice(t, "sql", "--conn", conn, "CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
	pgExecSQL(t, url, pgTypeInsert())
	names := []string{"id"}
	for _, c := range pgTypeCols {
		names = append(names, c.name)
	}
	want := psqlRows(t, psql, url, "SELECT * FROM t ORDER BY id")
	meta := []string{"__change_type", "__commit_version", "__commit_timestamp"}
	// byID orders preview rows (metadata, then the table's columns) by id.
	byID := func(rows [][]*string) [][]*string {
		slices.SortFunc(rows, func(a, b []*string) int {
			x, _ := strconv.Atoi(*a[len(meta)])
			y, _ := strconv.Atoi(*b[len(meta)])
			return x - y
		})
		return rows
	}
	csvRows := byID(parseCSVNull(t, mustSluice(t, "preview", "--conn", conn, "--format", "csv", "s").stdout))
	jsonRows := byID(parseJSONLText(t, mustSluice(t, "preview", "--conn", conn, "--format", "jsonl", "s").stdout, append(meta, names...)))
	for what, rows := range map[string][][]*string{"csv": csvRows, "jsonl": jsonRows} {
		var vals [][]*string
		for _, r := range rows {
			if len(r) < len(meta) {
				t.Fatalf("preview --format %s: a row of %d values", what, len(r))
			}
			vals = append(vals, r[len(meta):])
		}
		diffText(t, "preview --format "+what, names, vals, want)
	}
	// The table: the metadata as the CSV has it, the values as psql's.
	var exp [][]*string
	for i, r := range csvRows {
		exp = append(exp, append(slices.Clone(r[:len(meta)]), want[i]...))
	}
	tab := mustSluice(t, "preview", "--conn", conn, "--wide", "s").stdout
	tab = tab[:strings.LastIndex(strings.TrimSuffix(tab, "\n"), "\n")+1] // the table, not the footer line
	if w := tableOf(t, append(meta, names...), exp); !sameLines(tab, w) {
		t.Errorf("preview table:\n%s\npsql's values:\n%s", tab, w)
	}
}

// sameLines reports whether a and b hold the same lines, in any order
// (a preview lists the changes of one commit in no set order).
func sameLines(a, b string) bool {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
