package sqlite_test

import (
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
)

// script runs dialect text through dsl.ParseStatements and Exec, returning
// the last result set.
func (f *fixture) script(src string) *[]any {
	f.t.Helper()
	sts, err := dsl.ParseStatements("test.sql", src)
	if err != nil {
		f.t.Fatal(err)
	}
	var last *[]any
	for _, st := range sts {
		rs, err := f.b.Exec(f.t.Context(), st)
		if err != nil {
			f.t.Fatalf("%s: %v", st.SQL(), err)
		}
		if rs != nil && rs.Columns != nil {
			rows := make([]any, 0, len(rs.Rows))
			for _, r := range rs.Rows {
				var s []string
				for i, v := range r {
					s = append(s, cdc.FormatValue(v, rs.Columns[i].Type))
				}
				rows = append(rows, s)
			}
			last = &rows
		}
	}
	return last
}

// The seed walkthrough, as dialect text.
func TestSeedScript(t *testing.T) {
	f := newFixture(t, "")
	f.script(`
CREATE TABLE IF NOT EXISTS orders (id INT, name STRING, amount DECIMAL(10,2), status STRING, PRIMARY KEY (id));
ALTER TABLE orders SET PROPERTIES ('change_tracking' = 'true');
INSERT INTO orders VALUES (1, 'Alice', 1000.00, 'active'), (2, 'Bob', 2000.00, 'active'), (3, 'Carol', 500.00, 'active');
CREATE TABLE STREAM orders_stream ON TABLE orders WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
INSERT INTO orders VALUES (4, 'Dave', 3000.00, 'active');
UPDATE orders SET amount = 1500.00 WHERE id = 1;
DELETE FROM orders WHERE id = 3;
`)
	got, _ := f.read(f.info("orders_stream"))
	var lines []string
	for _, c := range got {
		line := c.Op.String()
		for i, v := range c.Row {
			line += " " + cdc.FormatValue(v, f.info("orders_stream").TableSchema.Columns[i].Type)
		}
		lines = append(lines, line)
	}
	want := []string{
		"INSERT 4 Dave 3000.00 active",
		"UPDATE_BEFORE 1 Alice 1000.00 active",
		"UPDATE_AFTER 1 Alice 1500.00 active",
		"DELETE 3 Carol 500.00 active",
	}
	if !equal(lines, want) {
		t.Errorf("stream:\n%q\nwant\n%q", lines, want)
	}
	rows := f.script(`SELECT id, amount, amount + 1 AS more, name FROM orders WHERE amount > 1000.5 ORDER BY id`)
	if rows == nil || len(*rows) != 3 {
		t.Fatalf("SELECT: %v", rows)
	}
	if r := (*rows)[0].([]string); r[1] != "1500.00" || r[0] != "1" {
		t.Errorf("SELECT row %v", r)
	}
	rows = f.script("SHOW TABLE STREAMS")
	if rows == nil || len(*rows) != 1 {
		t.Errorf("SHOW TABLE STREAMS: %v", rows)
	}
	f.script("DROP TABLE STREAM orders_stream; ALTER TABLE orders SET PROPERTIES ('change_tracking' = 'false'); DROP TABLE orders;")
}

// Reserved-word and unicode identifiers through dialect text.
func TestWeirdIdentifiersScript(t *testing.T) {
	f := newFixture(t, "")
	f.script("CREATE TABLE `order` (id INT, `user` STRING, `金额` DECIMAL(38,10), PRIMARY KEY (id));" +
		"ALTER TABLE `order` SET PROPERTIES ('change_tracking' = 'true');" +
		"CREATE TABLE STREAM s ON TABLE `order` WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');" +
		"INSERT INTO `order` VALUES (1, 'ann', 1234567890123456789012345678.0123456789);")
	got, _ := f.read(f.info("s"))
	if len(got) != 1 || cdc.FormatValue(got[0].Row[2], cdc.Decimal(38, 10)) != "1234567890123456789012345678.0123456789" {
		t.Errorf("changes %v", got)
	}
}
