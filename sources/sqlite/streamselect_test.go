package sqlite_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
)

// run parses src (dialect text) and executes every statement, returning
// the last result set.
func (f *fixture) run(src string) *runner.ResultSet {
	f.t.Helper()
	sts, err := dsl.ParseStatements("test.sql", src)
	if err != nil {
		f.t.Fatal(err)
	}
	var last *runner.ResultSet
	for _, st := range sts {
		rs, err := f.b.Exec(f.t.Context(), st)
		if err != nil {
			f.t.Fatalf("%s: %v", st.SQL(), err)
		}
		if rs != nil && rs.Columns != nil {
			last = rs
		}
	}
	return last
}

// lines renders a result set's rows as "v1 v2 …".
func lines(rs *runner.ResultSet) []string {
	out := []string{}
	for _, r := range rs.Rows {
		var parts []string
		for i, v := range r {
			parts = append(parts, cdc.FormatValue(v, rs.Columns[i].Type))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func (f *fixture) seedOrders() {
	f.t.Helper()
	for _, p := range []string{"../../examples/orders/setup.sql", "../../examples/orders/changes.sql"} {
		src, err := os.ReadFile(p)
		if err != nil {
			f.t.Fatal(err)
		}
		f.run(string(src))
	}
}

var seedStreamRows = []string{
	"INSERT 4 3000.00",
	"UPDATE_BEFORE 1 1000.00",
	"UPDATE_AFTER 1 1500.00",
	"DELETE 3 500.00",
}

func TestSelectStream(t *testing.T) {
	f := newFixture(t, "")
	f.seedOrders()
	before := f.info("orders_stream").Offset

	// The brief's query; UPDATE_BEFORE and UPDATE_AFTER share version and
	// id, so the tie is broken explicitly as well.
	const q = "SELECT __change_type, id, amount FROM orders_stream ORDER BY __commit_version, id, __change_type DESC"
	rs := f.run(q)
	if got := lines(rs); !equal(got, seedStreamRows) {
		t.Errorf("SELECT stream:\n%q\nwant\n%q", got, seedStreamRows)
	}
	if k := rs.Columns[2].Type; k != cdc.Decimal(10, 2) {
		t.Errorf("amount type %v, want DECIMAL(10,2)", k)
	}
	if d, ok := rs.Rows[2][2].(decimal.Decimal); !ok || d.StringFixed(2) != "1500.00" {
		t.Errorf("amount %T %v, want decimal 1500.00", rs.Rows[2][2], rs.Rows[2][2])
	}
	if got := lines(f.run("SELECT __change_type, id, amount FROM orders_stream ORDER BY __commit_version, id")); !equal(sortedCopy(got), sortedCopy(seedStreamRows)) {
		t.Errorf("SELECT stream (brief's ORDER BY): %q", got)
	}

	// The whole row, as preview shows it: metadata first, with their types.
	rs = f.run("SELECT * FROM orders_stream WHERE id = 4")
	wantCols := []string{"__change_type", "__commit_version", "__commit_timestamp", "id", "name", "amount", "status"}
	var cols []string
	for _, c := range rs.Columns {
		cols = append(cols, c.Name)
	}
	if !equal(cols, wantCols) {
		t.Errorf("columns %v, want %v", cols, wantCols)
	}
	changes, _ := f.read(f.info("orders_stream"))
	if len(rs.Rows) != 1 || rs.Columns[1].Type != cdc.TypeBigInt || rs.Columns[2].Type != cdc.TypeTimestamp {
		t.Fatalf("SELECT *: %v %v", rs.Columns, rs.Rows)
	}
	if ts, ok := rs.Rows[0][2].(time.Time); !ok || !ts.Equal(changes[0].CommitTime) || rs.Rows[0][1] != changes[0].CommitVersion {
		t.Errorf("metadata %v %v, want %v %v", rs.Rows[0][1], rs.Rows[0][2], changes[0].CommitVersion, changes[0].CommitTime)
	}

	// WHERE on the change type, with a backquoted / upper-case name.
	if got := lines(f.run("SELECT id, name FROM `ORDERS_STREAM` WHERE __change_type = 'INSERT'")); !equal(got, []string{"4 Dave"}) {
		t.Errorf("WHERE __change_type: %q", got)
	}
	// Computed columns and aggregates over the stream.
	if got := lines(f.run("SELECT __change_type, count(*) AS n FROM orders_stream GROUP BY __change_type ORDER BY __change_type")); !equal(got, []string{"DELETE 1", "INSERT 1", "UPDATE_AFTER 1", "UPDATE_BEFORE 1"}) {
		t.Errorf("GROUP BY: %q", got)
	}
	// A join of the stream with its table, and a subquery.
	got := lines(f.run(`SELECT s.__change_type, s.id, o.amount FROM orders_stream AS s JOIN orders AS o ON o.id = s.id
		WHERE s.__change_type <> 'UPDATE_BEFORE' ORDER BY s.__commit_version`))
	if !equal(got, []string{"INSERT 4 3000.00", "UPDATE_AFTER 1 1500.00"}) {
		t.Errorf("join: %q", got)
	}
	got = lines(f.run(`SELECT id FROM orders WHERE id NOT IN (SELECT id FROM orders_stream) ORDER BY id`))
	if !equal(got, []string{"2"}) {
		t.Errorf("subquery: %q", got)
	}
	// Two streams in one SELECT.
	got = lines(f.run(`SELECT count(*) FROM orders_stream AS a JOIN orders_merge_stream AS b ON a.id = b.id`))
	if !equal(got, []string{"3"}) { // ids 4, 1, 1 against initial rows 1, 2, 4
		t.Errorf("two streams: %q", got)
	}

	// Nothing moved, and a second SELECT returns the same rows.
	if after := f.info("orders_stream").Offset; !after.Equal(before) {
		t.Errorf("offset moved: %s → %s", before, after)
	}
	if got := lines(f.run(q)); !equal(got, seedStreamRows) {
		t.Errorf("second SELECT: %q", got)
	}
	// No temp object survives on any pooled connection.
	rs = f.run("SELECT * FROM orders ORDER BY id")
	if len(rs.Rows) != 3 {
		t.Errorf("orders: %v", rs.Rows)
	}
	var n int
	if err := f.b.DB().QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_temp_master`).Scan(&n); err != nil || n != 0 {
		t.Errorf("temp objects left: %d %v", n, err)
	}

	// A SELECT that names no stream is unchanged; a missing table still
	// fails as before.
	if got := lines(f.run("SELECT id, amount FROM orders WHERE id = 1")); !equal(got, []string{"1 1500.00"}) {
		t.Errorf("plain SELECT: %q", got)
	}
	sts, _ := dsl.ParseStatements("t.sql", "SELECT * FROM nothing_here")
	if _, err := f.b.Exec(t.Context(), sts[0]); err == nil || !strings.Contains(err.Error(), "no such table") {
		t.Errorf("missing table: %v", err)
	}
}

// A SHOW_INITIAL_ROWS stream not yet consumed reads as preview shows it:
// the initial rows.
func TestSelectStreamInitialRows(t *testing.T) {
	f := newFixture(t, "")
	f.seedOrders()
	info := f.info("orders_merge_stream")
	changes, _ := f.read(info)
	var want []string
	for _, c := range changes {
		want = append(want, c.Op.String()+" "+cdc.FormatValue(c.Row[0], cdc.TypeInt)+" "+cdc.FormatValue(c.Row[2], cdc.Decimal(10, 2)))
	}
	if len(want) != 3 {
		t.Fatalf("preview %v", want)
	}
	got := lines(f.run("SELECT __change_type, id, amount FROM orders_merge_stream"))
	if !equal(got, want) {
		t.Errorf("initial rows:\n%q\nwant\n%q", got, want)
	}
	if after := f.info("orders_merge_stream").Offset; !after.Equal(info.Offset) {
		t.Errorf("offset moved: %s → %s", info.Offset, after)
	}
	// After a consumption the stream reads what is new since.
	_, rp := f.read(info)
	if err := f.b.Advance(t.Context(), info, info.Offset, rp); err != nil {
		t.Fatal(err)
	}
	if got := lines(f.run("SELECT __change_type, id FROM orders_merge_stream")); len(got) != 0 {
		t.Errorf("after consumption: %q", got)
	}
	f.run("UPDATE orders SET status = 'gone' WHERE id = 2")
	if got := lines(f.run("SELECT __change_type, id, status FROM orders_merge_stream")); !equal(got, []string{"UPDATE_BEFORE 2 active", "UPDATE_AFTER 2 gone"}) {
		t.Errorf("after update: %q", got)
	}
}

// Streams named with reserved words and unicode, on such a table.
func TestSelectStreamWeirdNames(t *testing.T) {
	f := newFixture(t, "")
	f.run("CREATE TABLE `order` (id INT, `user` STRING, `金额` DECIMAL(38,10), PRIMARY KEY (id));" +
		"ALTER TABLE `order` SET PROPERTIES ('change_tracking' = 'true');" +
		"CREATE TABLE STREAM `select` ON TABLE `order` WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');" +
		"CREATE TABLE STREAM `订单流` ON TABLE `order` WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');" +
		"INSERT INTO `order` VALUES (1, 'ann', 1234567890123456789012345678.0123456789);")
	want := []string{"INSERT 1 ann 1234567890123456789012345678.0123456789"}
	for _, q := range []string{
		"SELECT __change_type, id, `user`, `金额` FROM `select`",
		"SELECT __change_type, id, `user`, `金额` FROM `订单流`",
		"SELECT __change_type, id, `user`, 金额 FROM 订单流",
	} {
		if got := lines(f.run(q)); !equal(got, want) {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
}

// A table with a stream's name keeps being the table.
func TestSelectStreamShadowedByTable(t *testing.T) {
	f := newFixture(t, "")
	f.run("CREATE TABLE t (id INT, PRIMARY KEY (id));" +
		"ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');" +
		"CREATE TABLE STREAM t ON TABLE t;" +
		"INSERT INTO t VALUES (1), (2);")
	if got := lines(f.run("SELECT * FROM t ORDER BY id")); !equal(got, []string{"1", "2"}) {
		t.Errorf("table: %q", got)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// On one pooled connection (no other to hide behind): a failing SELECT
// leaves no temp object and the next statements read the real tables.
func TestSelectStreamErrorCleansUp(t *testing.T) {
	f := newFixture(t, "")
	f.seedOrders()
	f.b.DB().SetReaders(1)
	for _, q := range []string{
		"SELECT no_such_column FROM orders_stream",
		"SELECT * FROM orders_stream JOIN no_such_table ON 1 = 1",
	} {
		sts, err := dsl.ParseStatements("t.sql", q)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.b.Exec(t.Context(), sts[0]); err == nil {
			t.Errorf("%s: no error", q)
		}
		var n int
		if err := f.b.DB().QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_temp_master`).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s: temp objects left: %d %v", q, n, err)
		}
	}
	if got := lines(f.run("SELECT __change_type FROM orders_stream WHERE id = 4")); !equal(got, []string{"INSERT"}) {
		t.Errorf("after errors: %q", got)
	}
	// A cancelled context fails the SELECT and still cleans up.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	sts, _ := dsl.ParseStatements("t.sql", "SELECT * FROM orders_stream")
	if _, err := f.b.Exec(ctx, sts[0]); err == nil {
		t.Error("cancelled: no error")
	}
	var n int
	if err := f.b.DB().QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_temp_master`).Scan(&n); err != nil || n != 0 {
		t.Errorf("cancelled: temp objects left: %d %v", n, err)
	}
}
