package dsl

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/pos"
	"github.com/xwb1989/sqlparser"
)

func TestParseStatement(t *testing.T) {
	decimal := cdc.Decimal
	tests := []struct {
		src  string
		want Statement // Base is filled in by the test
	}{
		{
			"CREATE TABLE IF NOT EXISTS orders ( id INT, name STRING, amount DECIMAL(10,2), status STRING )",
			&CreateTable{Table: "orders", IfNotExists: true, Schema: cdc.Schema{Columns: []cdc.Column{
				{Name: "id", Type: cdc.TypeInt}, {Name: "name", Type: cdc.TypeString},
				{Name: "amount", Type: decimal(10, 2)}, {Name: "status", Type: cdc.TypeString}}}},
		},
		{
			"create table T (Id bigint primary key, v varchar(20) not null comment 'x') comment 'table'",
			&CreateTable{Table: "T", Schema: cdc.Schema{Columns: []cdc.Column{
				{Name: "Id", Type: cdc.TypeBigInt, NotNull: true},
				{Name: "v", Type: cdc.Type{Kind: cdc.KindVarchar, Length: 20}, NotNull: true}}, Key: []string{"Id"}}},
		},
		{
			"CREATE TABLE `user` (`order` INT, 名前 STRING, d DOUBLE PRECISION, PRIMARY KEY (名前, `ORDER`))",
			&CreateTable{Table: "user", Schema: cdc.Schema{Columns: []cdc.Column{
				{Name: "order", Type: cdc.TypeInt, NotNull: true}, {Name: "名前", Type: cdc.TypeString, NotNull: true},
				{Name: "d", Type: cdc.TypeDouble}}, Key: []string{"名前", "order"}}},
		},
		{"ALTER TABLE orders SET PROPERTIES ('change_tracking' = 'true')", &SetChangeTracking{Table: "orders", Enabled: true}},
		{"alter table orders set tblproperties (change_tracking = false)", &SetChangeTracking{Table: "orders"}},
		{
			"CREATE TABLE STREAM orders_stream ON TABLE orders WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')",
			&CreateStream{Stream: "orders_stream", Table: "orders", Mode: ModeStandard},
		},
		{
			"CREATE OR REPLACE TABLE STREAM s ON TABLE t COMMENT = 'c' WITH PROPERTIES ('table_stream_mode' = 'append_only', 'SHOW_INITIAL_ROWS' = 'TRUE')",
			&CreateStream{Stream: "s", Table: "t", OrReplace: true, Mode: ModeAppendOnly, ShowInitialRows: true, Comment: "c"},
		},
		{"CREATE TABLE STREAM IF NOT EXISTS s ON TABLE t", &CreateStream{Stream: "s", Table: "t", IfNotExists: true, Mode: ModeStandard}},
		{"CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('STALE_AFTER' = '3d')", &CreateStream{Stream: "s", Table: "t", Mode: ModeStandard, StaleAfter: 72 * time.Hour}},
		{"CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('stale_after' = '90m')", &CreateStream{Stream: "s", Table: "t", Mode: ModeStandard, StaleAfter: 90 * time.Minute}},
		{"DROP TABLE STREAM IF EXISTS s", &DropStream{Stream: "s", IfExists: true}},
		{"DROP TABLE STREAM s;", &DropStream{Stream: "s"}},
		{"DROP TABLE IF EXISTS t", &DropTable{Table: "t", IfExists: true}},
		{"DROP TABLE stream", &DropTable{Table: "stream"}},
		{"SHOW TABLE STREAMS", &ShowStreams{}},
		{"DESCRIBE TABLE STREAM s", &DescribeStream{Stream: "s"}},
		{"DESC TABLE STREAM `my stream`", &DescribeStream{Stream: "my stream"}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := ParseStatement("", tt.src)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.TrimSuffix(tt.src, ";")
			reflect.ValueOf(tt.want).Elem().FieldByName("Base").Set(reflect.ValueOf(Base{Text: text, Pos: pos.Pos{Line: 1, Col: 1}}))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestParseDML(t *testing.T) {
	tests := []struct{ src, kind, rendered string }{
		{"INSERT INTO orders VALUES (1, 'Alice', 1000.00, 'active')", "INSERT", "insert into orders values (1, 'Alice', 1000.00, 'active')"},
		{"UPDATE orders SET amount = 1500.00 WHERE id = 1", "UPDATE", "update orders set amount = 1500.00 where id = 1"},
		{"DELETE FROM orders WHERE id = 3", "DELETE", "delete from orders where id = 3"},
		{"SELECT * FROM orders_stream WHERE `__change_type` = 'INSERT'", "SELECT", "select * from orders_stream where __change_type = 'INSERT'"},
		{"select 名字, `order` from 表", "SELECT", "select `名字`, `order` from `表`"},
		{"(SELECT a FROM t) UNION (SELECT a FROM u)", "SELECT", "(select a from t) union (select a from u)"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			st, err := ParseStatement("", tt.src)
			if err != nil {
				t.Fatal(err)
			}
			d, ok := st.(*DML)
			if !ok {
				t.Fatalf("got %T", st)
			}
			if d.Kind != tt.kind || d.Text != tt.src {
				t.Errorf("kind %s text %q", d.Kind, d.Text)
			}
			if got := sqlparser.String(d.AST); got != tt.rendered {
				t.Errorf("AST renders as %q, want %q", got, tt.rendered)
			}
		})
	}
}

func TestStatementErrors(t *testing.T) {
	tests := []struct {
		src  string
		want string
		is   error
	}{
		{"CREATE TABLE t (id INT, x STRIN)", `f.sql:1:27: unknown type "STRIN" (known: TINYINT, SMALLINT, INT, BIGINT, BOOLEAN, FLOAT, DOUBLE, DECIMAL(p,s), STRING, VARCHAR(n), CHAR(n), DATE, TIMESTAMP, TIMESTAMP_NTZ, BINARY, JSON, UUID)`, cdc.ErrUnknownType},
		{"CREATE TABLE t (d DECIMAL(50,2))", `f.sql:1:19: bad type: "DECIMAL(50,2)": need 1 <= precision <= 38 and scale <= precision`, cdc.ErrBadType},
		{"CREATE TABLE t (id INT,)", `f.sql:1:24: expected column name or PRIMARY KEY, found ')'`, ErrSyntax},
		{"CREATE TABLE t (select INT)", "f.sql:1:17: expected column name or PRIMARY KEY, found keyword SELECT (quote it as `select` to use it as a name)", ErrSyntax},
		{"CREATE TABLE t (a INT DEFAULT 1)", `f.sql:1:23: column option DEFAULT is not supported`, ErrNotSupported},
		{"CREATE TABLE db.t (a INT)", `f.sql:1:16: qualified table names are not supported; write the bare table name`, ErrNotSupported},
		{"CREATE TABLE STREAM s ON TABLE t TIMESTAMP AS OF '2024-01-01 00:00:00'", `f.sql:1:34: TIMESTAMP AS OF is not supported yet; the stream starts at the table's current version`, ErrNotSupported},
		{"CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('MODE' = 'STANDARD')", `f.sql:1:51: unknown stream property "MODE" (known: TABLE_STREAM_MODE, SHOW_INITIAL_ROWS, STALE_AFTER)`, ErrUnknownKey},
		{"CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('STALE_AFTER' = 'forever')", `f.sql:1:67: STALE_AFTER: "forever" is neither days ('14d') nor a duration ('36h')`, ErrBadValue},
		{"CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('STALE_AFTER' = '0d')", `f.sql:1:67: STALE_AFTER: "0d" is not a number of days such as '14d'`, ErrBadValue},
		{"CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('STALE_AFTER' = '10ms')", `f.sql:1:67: STALE_AFTER: "10ms" is shorter than a second`, ErrBadValue},
		{"CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'DELTA')", `f.sql:1:73: TABLE_STREAM_MODE must be 'STANDARD' or 'APPEND_ONLY', not "DELTA"`, ErrBadValue},
		{"CREATE OR REPLACE TABLE STREAM IF NOT EXISTS s ON TABLE t", `f.sql:1:32: OR REPLACE and IF NOT EXISTS cannot be used together`, ErrBadValue},
		{"CREATE TABLE STREAM s ON t", `f.sql:1:26: expected TABLE, found 't'`, ErrSyntax},
		{"ALTER TABLE t SET PROPERTIES ('retention' = '1')", `f.sql:1:31: unknown table property "retention" (known: change_tracking)`, ErrUnknownKey},
		{"ALTER TABLE t SET PROPERTIES ('change_tracking' = 'yes')", `f.sql:1:51: property change_tracking must be 'true' or 'false', not "yes"`, ErrBadValue},
		{"SHOW TABLE STREAMS LIKE 'x'", `f.sql:1:20: unexpected 'LIKE' after the end of the statement`, ErrSyntax},
		{"SELECT 名字 FROM t WHERE x = = 1", `f.sql:1:32: syntax error near '='`, ErrSyntax},
		{"SELECT a FROM t WHERE", `f.sql:1:22: syntax error: unexpected end of statement`, ErrSyntax},
		{"SELECT a || b FROM t", `f.sql:1:10: '||' is not supported (the SQL parser would read it as OR); use CONCAT(a, b) for string concatenation`, ErrNotSupported},
		{"REPLACE INTO t VALUES (1)", `f.sql:1:1: unsupported statement starting with 'REPLACE'; supported: CREATE TABLE, ALTER TABLE … SET PROPERTIES, CREATE TABLE STREAM, DROP TABLE STREAM, SHOW TABLE STREAMS, DESCRIBE TABLE STREAM, DROP TABLE, INSERT, UPDATE, DELETE, SELECT`, ErrNotSupported},
		{"SELECT 'abc", `f.sql:1:8: unterminated string`, ErrSyntax},
		{"SELECT `", `f.sql:1:8: unterminated quoted identifier`, ErrSyntax},
		{"", `f.sql:1:1: no statement`, ErrSyntax},
		{"SHOW TABLE STREAMS; SHOW TABLE STREAMS", `f.sql:1:21: expected one statement, found 2`, ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := ParseStatement("f.sql", tt.src)
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tt.want {
				t.Errorf("error\n  %s\nwant\n  %s", err, tt.want)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error does not wrap %v", tt.is)
			}
		})
	}
}

// TestParseStatementsAllErrors checks that every failing statement of a
// script is reported, and that a ';' in strings, quoted identifiers and
// comments does not split.
func TestParseStatementsAllErrors(t *testing.T) {
	src := "SELECT ';' FROM `a;b`; -- ; comment\nCREATE TABLE t (a FOO);\nDROP TABLE;\n/* ; */ SHOW TABLE STREAMS"
	_, err := ParseStatements("s.sql", src)
	want := "s.sql:2:19: unknown type \"FOO\" (known: TINYINT, SMALLINT, INT, BIGINT, BOOLEAN, FLOAT, DOUBLE, DECIMAL(p,s), STRING, VARCHAR(n), CHAR(n), DATE, TIMESTAMP, TIMESTAMP_NTZ, BINARY, JSON, UUID)\n" +
		"s.sql:3:11: expected table name, found end of statement"
	if err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
	sts, err := ParseStatements("s.sql", "SELECT ';' FROM `a;b`; -- ; comment\n/* ; */ SHOW TABLE STREAMS;;")
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 2 || sts[0].SQL() != "SELECT ';' FROM `a;b`" || sts[1].Position().String() != "s.sql:2:9" {
		t.Errorf("got %d statements: %q at %s", len(sts), sts[0].SQL(), sts[len(sts)-1].Position())
	}
}

// TestParseStatementsAt checks positions of text taken from inside a file
// (a job's setup statement).
func TestParseStatementsAt(t *testing.T) {
	job, err := ParseSQL("job.sql", []byte("-- name: j\n  CREATE TABLE t (\n  id INT);\nINSERT INTO t SELECT * FROM s"))
	if err != nil {
		t.Fatal(err)
	}
	st := job.Setup[0]
	if st.Pos.String() != "job.sql:2:3" {
		t.Fatalf("setup at %s", st.Pos)
	}
	sts, err := ParseStatementsAt(st.Pos, st.Text)
	if err != nil || len(sts) != 1 || sts[0].Position() != st.Pos {
		t.Fatalf("%v %v", sts, err)
	}
	_, err = ParseStatementsAt(st.Pos, "CREATE TABLE t (\n  id INTEGR)")
	if err == nil || !strings.HasPrefix(err.Error(), `job.sql:3:6: unknown type "INTEGR"`) {
		t.Errorf("error %v", err)
	}
	_, err = ParseStatementsAt(st.Pos, "CREATE TABLE t (id INTEGR)")
	if err == nil || !strings.HasPrefix(err.Error(), `job.sql:2:22: unknown type "INTEGR"`) {
		t.Errorf("error %v", err)
	}
}
