package postgres

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// runScript parses src (dialect text) and executes every statement,
// returning the last result set.
func runScript(t *testing.T, b *Backend, src string) *runner.ResultSet {
	t.Helper()
	sts, err := dsl.ParseStatements("test.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	var last *runner.ResultSet
	for _, st := range sts {
		rs, err := b.Exec(context.Background(), st)
		if err != nil {
			t.Fatalf("%s: %v", st.SQL(), err)
		}
		if rs != nil && rs.Columns != nil {
			last = rs
		}
	}
	return last
}

func rsLines(rs *runner.ResultSet) []string {
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

func seedOrders(t *testing.T, b *Backend) {
	t.Helper()
	for _, p := range []string{"../../examples/orders/setup.sql", "../../examples/orders/changes.sql"} {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		runScript(t, b, string(src))
	}
}

func streamOffset(t *testing.T, b *Backend, name string) *runner.StreamInfo {
	t.Helper()
	s, err := b.Stream(context.Background(), plan.Source{Stream: name})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var seedStreamRows = []string{
	"INSERT 4 3000.00",
	"UPDATE_BEFORE 1 1000.00",
	"UPDATE_AFTER 1 1500.00",
	"DELETE 3 500.00",
}

func TestSelectStream(t *testing.T) {
	b, _ := openDB(t)
	seedOrders(t, b)
	before := streamOffset(t, b, "orders_stream").Offset

	const q = "SELECT __change_type, id, amount FROM orders_stream ORDER BY __commit_version, id, __change_type DESC"
	rs := runScript(t, b, q)
	check(t, "SELECT stream", rsLines(rs), seedStreamRows)
	if k := rs.Columns[2].Type; k != cdc.Decimal(10, 2) {
		t.Errorf("amount type %v, want DECIMAL(10,2)", k)
	}
	if d, ok := rs.Rows[2][2].(decimal.Decimal); !ok || d.StringFixed(2) != "1500.00" {
		t.Errorf("amount %T %v, want decimal 1500.00", rs.Rows[2][2], rs.Rows[2][2])
	}
	check(t, "SELECT stream (brief's ORDER BY)",
		sorted(rsLines(runScript(t, b, "SELECT __change_type, id, amount FROM orders_stream ORDER BY __commit_version, id"))), sorted(seedStreamRows))

	// The whole row, as preview shows it.
	rs = runScript(t, b, "SELECT * FROM orders_stream WHERE id = 4")
	var cols []string
	for _, c := range rs.Columns {
		cols = append(cols, c.Name)
	}
	check(t, "columns", cols, []string{"__change_type", "__commit_version", "__commit_timestamp", "id", "name", "amount", "status"})
	changes, _ := read(t, b, "orders_stream", false)
	if len(rs.Rows) != 1 || rs.Columns[1].Type != cdc.TypeBigInt || rs.Columns[2].Type != cdc.TypeTimestamp {
		t.Fatalf("SELECT *: %v %v", rs.Columns, rs.Rows)
	}
	if ts, ok := rs.Rows[0][2].(time.Time); !ok || !ts.Equal(changes[0].CommitTime) || rs.Rows[0][1] != changes[0].CommitVersion {
		t.Errorf("metadata %v %v, want %v %v", rs.Rows[0][1], rs.Rows[0][2], changes[0].CommitVersion, changes[0].CommitTime)
	}

	check(t, "WHERE __change_type", rsLines(runScript(t, b, "SELECT id, name FROM orders_stream WHERE __change_type = 'INSERT'")), []string{"4 Dave"})
	check(t, "upper-case name", rsLines(runScript(t, b, "SELECT id FROM `ORDERS_STREAM` WHERE __change_type = 'DELETE'")), []string{"3"})
	check(t, "GROUP BY", rsLines(runScript(t, b, "SELECT __change_type, count(*) AS n FROM orders_stream GROUP BY __change_type ORDER BY __change_type")),
		[]string{"DELETE 1", "INSERT 1", "UPDATE_AFTER 1", "UPDATE_BEFORE 1"})
	check(t, "join", rsLines(runScript(t, b, `SELECT s.__change_type, s.id, o.amount FROM orders_stream AS s JOIN orders AS o ON o.id = s.id
		WHERE s.__change_type <> 'UPDATE_BEFORE' ORDER BY s.__commit_version`)), []string{"INSERT 4 3000.00", "UPDATE_AFTER 1 1500.00"})
	check(t, "subquery", rsLines(runScript(t, b, `SELECT id FROM orders WHERE id NOT IN (SELECT id FROM orders_stream) ORDER BY id`)), []string{"2"})
	check(t, "two streams", rsLines(runScript(t, b, `SELECT count(*) FROM orders_stream AS a JOIN orders_merge_stream AS b ON a.id = b.id`)), []string{"3"})
	check(t, "union", rsLines(runScript(t, b, `SELECT id FROM orders_stream WHERE __change_type = 'INSERT' UNION ALL SELECT id FROM orders_merge_stream WHERE id = 2`)), []string{"4", "2"})

	if after := streamOffset(t, b, "orders_stream").Offset; !after.Equal(before) {
		t.Errorf("offset moved: %s → %s", before, after)
	}
	check(t, "second SELECT", rsLines(runScript(t, b, q)), seedStreamRows)

	check(t, "plain SELECT", rsLines(runScript(t, b, "SELECT id, amount FROM orders WHERE id = 1")), []string{"1 1500.00"})
	sts, _ := dsl.ParseStatements("t.sql", "SELECT * FROM nothing_here")
	if _, err := b.Exec(context.Background(), sts[0]); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing table: %v", err)
	}
}

// A SHOW_INITIAL_ROWS stream not yet consumed reads as preview shows it.
func TestSelectStreamInitialRows(t *testing.T) {
	b, _ := openDB(t)
	seedOrders(t, b)
	info := streamOffset(t, b, "orders_merge_stream")
	changes, _ := read(t, b, "orders_merge_stream", false)
	var want []string
	for _, c := range changes {
		want = append(want, c.Op.String()+" "+cdc.FormatValue(c.Row[0], cdc.TypeInt)+" "+cdc.FormatValue(c.Row[2], cdc.Decimal(10, 2)))
	}
	if len(want) != 3 {
		t.Fatalf("preview %v", want)
	}
	check(t, "initial rows", rsLines(runScript(t, b, "SELECT __change_type, id, amount FROM orders_merge_stream ORDER BY __commit_version, id")), want)
	if after := streamOffset(t, b, "orders_merge_stream").Offset; !after.Equal(info.Offset) {
		t.Errorf("offset moved: %s → %s", info.Offset, after)
	}
	read(t, b, "orders_merge_stream", true)
	check(t, "after consumption", rsLines(runScript(t, b, "SELECT __change_type, id FROM orders_merge_stream")), []string{})
	runScript(t, b, "UPDATE orders SET status = 'gone' WHERE id = 2")
	check(t, "after update", rsLines(runScript(t, b, "SELECT __change_type, id, status FROM orders_merge_stream ORDER BY __change_type DESC")),
		[]string{"UPDATE_BEFORE 2 active", "UPDATE_AFTER 2 gone"})
}

// Streams named with reserved words and unicode, on such a table; a table
// named like a stream keeps being the table.
func TestSelectStreamWeirdNames(t *testing.T) {
	b, _ := openDB(t)
	runScript(t, b, "CREATE TABLE `order` (id INT, `user` STRING, `金额` DECIMAL(38,10), PRIMARY KEY (id));"+
		"ALTER TABLE `order` SET PROPERTIES ('change_tracking' = 'true');"+
		"CREATE TABLE STREAM `select` ON TABLE `order` WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');"+
		"CREATE TABLE STREAM `订单流` ON TABLE `order` WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');"+
		"INSERT INTO `order` VALUES (1, 'ann', 1234567890123456789012345678.0123456789);")
	want := []string{"INSERT 1 ann 1234567890123456789012345678.0123456789"}
	for _, q := range []string{
		"SELECT __change_type, id, `user`, `金额` FROM `select`",
		"SELECT __change_type, id, `user`, `金额` FROM `订单流`",
		"SELECT __change_type, id, `user`, 金额 FROM 订单流",
	} {
		check(t, q, rsLines(runScript(t, b, q)), want)
	}
	runScript(t, b, "CREATE TABLE t (id INT, PRIMARY KEY (id));"+
		"ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');"+
		"CREATE TABLE STREAM t ON TABLE t;"+
		"INSERT INTO t VALUES (1), (2);")
	check(t, "table named like its stream", rsLines(runScript(t, b, "SELECT * FROM t ORDER BY id")), []string{"1", "2"})
}
