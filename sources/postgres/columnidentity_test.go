package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/dsl"
)

// TestDDLColumnIdentity: sequences of DDL and writes on a tracked table
// with no read in between, where column names alone would mislead a
// read — a column added, written and renamed; a typed log row whose
// column is renamed after; a column dropped and added again under its
// name with another type; names swapped; a column renamed twice. The
// writes come from a plain connection; the read (Stream, which brings
// the log in line, then the read) must deliver, for every key, the row
// the table holds now (each key is inserted in the window, so its net
// change is an INSERT of its last image, and every later DDL left that
// image's values where the table has them: a column added after the
// last write is NULL in both).
func TestDDLColumnIdentity(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	conn := connect(ctx, t, u)
	cases := []struct {
		name  string
		steps []string // {t} is the case's table
		keys  []int
	}{
		{"add, insert, rename (JSON row)", []string{
			`ALTER TABLE {t} ADD COLUMN a int`, `INSERT INTO {t} VALUES (1, 10, 5)`, `ALTER TABLE {t} RENAME a TO b`}, []int{1}},
		{"typed row, then rename, then a JSON row", []string{
			`INSERT INTO {t} VALUES (1, 5)`, `ALTER TABLE {t} RENAME v TO w`, `INSERT INTO {t} VALUES (2, 6)`, `UPDATE {t} SET w = 7 WHERE id = 1`}, []int{1, 2}},
		{"typed row, then renamed twice", []string{
			`INSERT INTO {t} VALUES (1, 5)`, `ALTER TABLE {t} RENAME v TO x`, `INSERT INTO {t} VALUES (2, 6)`, `ALTER TABLE {t} RENAME x TO y`}, []int{1, 2}},
		{"typed row, column dropped and added again with another type", []string{
			`INSERT INTO {t} VALUES (1, 5)`, `ALTER TABLE {t} DROP COLUMN v`, `ALTER TABLE {t} ADD COLUMN v text`, `INSERT INTO {t} VALUES (2, 'x')`}, []int{1, 2}},
		{"JSON row, column dropped and added again with another type", []string{
			`ALTER TABLE {t} ADD COLUMN a int`, `INSERT INTO {t} VALUES (1, 10, 5)`, `ALTER TABLE {t} DROP COLUMN a`, `ALTER TABLE {t} ADD COLUMN a text`, `INSERT INTO {t} VALUES (2, 20, 'y')`}, []int{1, 2}},
		{"names swapped after typed and JSON rows", []string{
			`ALTER TABLE {t} ADD COLUMN w int`, `INSERT INTO {t} VALUES (1, 10, 11)`,
			`ALTER TABLE {t} RENAME v TO tmp`, `ALTER TABLE {t} RENAME w TO v`, `ALTER TABLE {t} RENAME tmp TO w`, `INSERT INTO {t} (id, v, w) VALUES (2, 21, 20)`}, []int{1, 2}},
		{"added, written, retyped and renamed", []string{
			`ALTER TABLE {t} ADD COLUMN a int`, `INSERT INTO {t} VALUES (1, 10, 5)`, `ALTER TABLE {t} ALTER COLUMN a TYPE bigint`, `ALTER TABLE {t} RENAME a TO b`, `INSERT INTO {t} VALUES (2, 20, 5000000000)`}, []int{1, 2}},
		{"added, written, dropped", []string{
			`ALTER TABLE {t} ADD COLUMN a int`, `INSERT INTO {t} VALUES (1, 10, 5)`, `ALTER TABLE {t} DROP COLUMN a`}, []int{1}},
		{"a column added under a dropped column's name while the first is renamed", []string{
			`INSERT INTO {t} VALUES (1, 5)`, `ALTER TABLE {t} RENAME v TO old_v`, `ALTER TABLE {t} ADD COLUMN v int`, `INSERT INTO {t} VALUES (2, 6, 7)`}, []int{1, 2}},
	}
	for i, c := range cases {
		tab := fmt.Sprintf("ci%d", i)
		sqlExec(t, b, `CREATE TABLE `+tab+` (id int PRIMARY KEY, v int)`)
		track(t, b, tab)
		mkStream(t, b, tab+"_s", tab, dsl.ModeStandard, false)
		for _, st := range c.steps {
			q := strings.ReplaceAll(st, "{t}", tab)
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: the application's %s failed: %v", c.name, q, err)
			}
		}
		var want []string
		for _, k := range c.keys {
			rows := tableRowsAll(t, b, fmt.Sprintf(`SELECT * FROM %s WHERE id = %d -- %s`, tab, k, c.name))
			want = append(want, "INSERT "+rows[0])
		}
		_, got := read(t, b, tab+"_s", true)
		check(t, c.name, sorted(got), sorted(want))
	}
}

// TestLegacyJSONRows: change-log rows an earlier sluice logged as JSON
// keyed by column names only (no __attnums). One whose names are all the
// table's is read by name; one with a value under a name the table no
// longer has (renamed or dropped: the two look alike) makes the read
// refuse, naming the column, reading nothing and leaving the offset; once
// that row is gone the read delivers the rest.
func TestLegacyJSONRows(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	conn := connect(ctx, t, u)
	sqlExec(t, b, `CREATE TABLE lg (id int PRIMARY KEY, v int)`)
	track(t, b, "lg")
	mkStream(t, b, "lg_s", "lg", dsl.ModeStandard, false)
	for _, q := range []string{
		`ALTER TABLE lg ADD COLUMN a int`, `INSERT INTO lg VALUES (1, 10, 5), (2, 20, 6)`, `ALTER TABLE lg RENAME a TO b`,
		// As an earlier capture function logged them: a to_json object,
		// names only.
		`UPDATE sluice.log_lg SET __attnums = NULL, __attnames = NULL, __extra = '{"id":1,"v":10,"a":5}' WHERE __extra #>> '{}' = '(1,10,5)'`,
		`UPDATE sluice.log_lg SET __attnums = NULL, __attnames = NULL, __extra = '{"id":2,"v":20,"b":6}' WHERE __extra #>> '{}' = '(2,20,6)'`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	err := readErr(t, b, "lg_s")
	if !errors.Is(err, ErrTableChanged) || !strings.Contains(err.Error(), "column(s) a,") {
		t.Fatalf("read with a legacy JSON row under a gone name: %v, want ErrTableChanged naming a", err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM sluice.log_lg WHERE __extra->>'id' = '1'`); err != nil {
		t.Fatal(err)
	}
	_, got := read(t, b, "lg_s", true)
	check(t, "legacy row with the table's names", got, []string{"INSERT " + tableRowsAll(t, b, `SELECT * FROM lg WHERE id = 2 -- legacy`)[0]})
}

// TestObjectJSONRows: change-log rows the previous capture function
// logged as a to_json object with the attnums and names of its values
// (before rows were logged as their record text, rowtext.go) are read as
// before, next to rows of the same shape logged as record text and rows
// of a later shape: a column added, written, then renamed, with rows of
// both forms before the rename and record-text rows after it.
func TestObjectJSONRows(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	conn := connect(ctx, t, u)
	sqlExec(t, b, `CREATE TABLE ob (id int PRIMARY KEY, v int)`)
	track(t, b, "ob")
	mkStream(t, b, "ob_s", "ob", dsl.ModeStandard, false)
	for _, q := range []string{
		`ALTER TABLE ob ADD COLUMN a int`, `INSERT INTO ob VALUES (1, 10, 5), (2, 20, NULL)`,
		// As the previous capture function logged them: the row's to_json.
		`UPDATE sluice.log_ob SET __extra = to_json((__extra #>> '{}')::ob) WHERE __extra #>> '{}' IN ('(1,10,5)', '(2,20,)')`,
		`INSERT INTO ob VALUES (3, 30, 7)`, `ALTER TABLE ob RENAME a TO b`, `INSERT INTO ob VALUES (4, 40, 8)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var forms string
	if err := conn.QueryRow(ctx, `SELECT string_agg(json_typeof(__extra), ' ' ORDER BY __seq) FROM sluice.log_ob`).Scan(&forms); err != nil || forms != "object object string string" {
		t.Fatalf("log rows' forms: %q, %v; want two objects, then two strings", forms, err)
	}
	var want []string
	for k := 1; k <= 4; k++ {
		want = append(want, "INSERT "+tableRowsAll(t, b, fmt.Sprintf(`SELECT * FROM ob WHERE id = %d -- object rows`, k))[0])
	}
	_, got := read(t, b, "ob_s", true)
	check(t, "object and record-text rows", sorted(got), sorted(want))
}
