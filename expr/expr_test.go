package expr

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/pos"
)

var at = pos.Pos{File: "job.yaml", Line: 3, Col: 9}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		text, want string // want: "line:col: substring"
		sentinel   error
	}{
		{"a ||", "3:13: unexpected end", ErrSyntax},
		{"a = ", "3:13: unexpected end", ErrSyntax},
		{"a = = 1", "3:13: syntax error near '='", ErrSyntax},
		{"order = 1", "3:9: unexpected ORDER", ErrSyntax},
		{"x IN (select 1)", "3:15: subqueries", ErrUnsupported},
		{"a | b", "3:11: bitwise |", ErrUnsupported},
		{"a REGEXP 'x'", "3:11: REGEXP", ErrUnsupported},
		{"foo(1) + 1", "3:9: unknown function foo()", ErrUnknownFunction},
		{"1 + bar(2)", "3:13: unknown function bar()", ErrUnknownFunction},
		{"sum(x)", "3:9: aggregate function sum()", ErrUnsupported},
		{"CAST(a AS WHATEVER)", "3:19: CAST: unknown type", ErrUnsupported},
		{"a, b", "3:10: expected one expression", ErrSyntax},
		{"a AS b", "3:11: alias", ErrSyntax},
		{"'abc", "3:9: unterminated string", ErrSyntax},
		{"a = 1;", "3:14: ';'", ErrUnsupported},
		{"a::int", "3:10: :: casts", ErrUnsupported},
		{"row_number() OVER (ORDER BY a)", "3:22: window functions", ErrUnsupported},
		{"", "3:9: empty expression", ErrSyntax},
		{"a\n  AND = 2", "4:7: syntax error near '='", ErrSyntax},
	} {
		_, err := Parse(c.text, at)
		var pe *pos.Error
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v is not a *pos.Error", c.text, err)
			continue
		}
		got := fmt.Sprintf("%d:%d: %s", pe.Pos.Line, pe.Pos.Col, pe.Msg)
		if !strings.HasPrefix(got, c.want[:strings.Index(c.want, " ")]) || !strings.Contains(got, c.want[strings.Index(c.want, " ")+1:]) {
			t.Errorf("%q: got %q, want %q", c.text, got, c.want)
		}
		if !errors.Is(err, c.sentinel) {
			t.Errorf("%q: %v does not wrap %v", c.text, err, c.sentinel)
		}
		if pe.Pos.File != "job.yaml" {
			t.Errorf("%q: file %q", c.text, pe.Pos.File)
		}
	}
}

func TestBindErrors(t *testing.T) {
	scope := Scope{{Alias: "s", Schema: testSchema}}
	for _, c := range []struct {
		text, want string
		sentinel   error
	}{
		{"nope = 1", "3:9: unknown column nope (columns: __change_type, id, name", ErrUnknownColumn},
		{"id = 1 AND `nope` > 2", "3:20: unknown column nope", ErrUnknownColumn},
		{"x.id = 1", "3:9: unknown relation \"x\"", ErrUnknownRelation},
		{"s.nope", "3:9: unknown column s.nope", ErrUnknownColumn},
		{"name = TRUE", "3:14: cannot compare STRING with BOOLEAN", ErrType},
		{"amount = 'abc'", "3:18: cannot compare DECIMAL(10,2)", ErrType},
		{"name + 1", "3:14: operator + needs numbers, got STRING (use || or CONCAT", ErrType},
		{"id LIKE 'a%'", "3:12: LIKE needs text", ErrType},
		{"id AND flag", "3:12: AND needs BOOLEAN", ErrType},
		{"CAST(ts AS INT)", "3:9: cannot CAST TIMESTAMP to INT", ErrType},
		{"CASE WHEN flag THEN 1 ELSE 'x' END", "3:36: CASE branches mix", ErrType},
		{"upper(id)", "3:9: UPPER() argument 1 must be text", ErrType},
		{"price % 2", "3:15: % needs integer or DECIMAL", ErrType},
	} {
		e, err := Parse(c.text, at)
		if err != nil {
			t.Errorf("%q: parse: %v", c.text, err)
			continue
		}
		_, err = e.Bind(scope)
		var pe *pos.Error
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v is not a *pos.Error", c.text, err)
			continue
		}
		got := fmt.Sprintf("%d:%d: %s", pe.Pos.Line, pe.Pos.Col, pe.Msg)
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%q:\n got  %q\n want %q…", c.text, got, c.want)
		}
		if !errors.Is(err, c.sentinel) {
			t.Errorf("%q: %v does not wrap %v", c.text, err, c.sentinel)
		}
	}
}

func TestParseSelectItem(t *testing.T) {
	for _, c := range []struct{ in, name, err string }{
		{"upper(name) AS name_u", "name_u", ""},
		{"id", "id", ""},
		{"`order`", "order", ""},
		{"s.id", "id", ""},
		{"金额", "金额", ""},
		{"amount * 2 AS `double amount`", "double amount", ""},
		{"amount * 2 doubled", "doubled", ""},
		{"amount * 2", "", "3:9: projection \"amount * 2\" needs a name: write amount * 2 AS name"},
	} {
		_, name, err := ParseSelectItem(c.in, at)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrNeedAlias) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || name != c.name {
			t.Errorf("%q: got %q, %v; want %q", c.in, name, err, c.name)
		}
	}
}

// TestEval checks values computed by hand, on the first test row
// (Alice, amount 1500.00, qty 3, price 2.5, flag true) and the NULL row.
func TestEval(t *testing.T) {
	scope := Scope{{Schema: testSchema}}
	alice, nulls := Values(testRows[0]), Values(testRows[3])
	for _, c := range []struct {
		text      string
		want      any // on alice
		wantNulls any // on the row of NULLs
		typ       string
	}{
		{"amount = 1500", true, nil, "BOOLEAN"},
		{"amount = '1500.000'", true, nil, "BOOLEAN"},
		{"9.90 < 10.1", true, true, "BOOLEAN"},
		{"amount + 0.005", "1500.005", nil, "DECIMAL(12,3)"},
		{"amount * qty", "4500.00", nil, "DECIMAL(21,2)"},
		{"amount / 7", "214.285714", nil, "DECIMAL(14,6)"},
		{"big + 1", "1234567890123456789012345679.012345679", nil, "DECIMAL(38,9)"},
		{"big = 1234567890123456789012345678.0123456789", true, nil, "BOOLEAN"},
		{"qty / 2", 1.5, nil, "DOUBLE"},
		{"qty / 0", nil, nil, "DOUBLE"},
		{"amount / 0", nil, nil, "DECIMAL(14,6)"},
		{"qty % 0", nil, nil, "BIGINT"},
		{"-7 % 3", int64(-1), int64(-1), "BIGINT"},
		{"name || '-' || id", "Alice-1", nil, "STRING"},
		{"'a' || 1 + 2", "a3", "a3", "STRING"},
		{"'a' || 'b' = 'ab'", true, true, "BOOLEAN"},
		{"concat(name, NULL)", nil, nil, "STRING"},
		{"NULL AND FALSE", false, false, "BOOLEAN"},
		{"NULL OR TRUE", true, true, "BOOLEAN"},
		{"flag AND qty > 5", false, nil, "BOOLEAN"},
		{"qty IN (1, 2, NULL)", nil, nil, "BOOLEAN"},
		{"qty IN (3, NULL)", true, nil, "BOOLEAN"},
		{"qty NOT IN (1, 2)", true, nil, "BOOLEAN"},
		{"name IS NULL", false, true, "BOOLEAN"},
		{"flag IS NOT TRUE", false, true, "BOOLEAN"},
		{"qty BETWEEN 3 AND 4", true, nil, "BOOLEAN"},
		{"name LIKE 'A_i%'", true, nil, "BOOLEAN"},
		{"name LIKE 'a%'", false, nil, "BOOLEAN"},
		{"'50%' LIKE '50\\%'", true, true, "BOOLEAN"},
		{"'a_b' LIKE 'a#_b' ESCAPE '#'", true, true, "BOOLEAN"},
		{"CASE WHEN amount > 1000 THEN 'big' ELSE 'small' END", "big", "small", "STRING"},
		{"CASE qty WHEN 3 THEN 'three' END", "three", nil, "STRING"},
		{"coalesce(name, 'none')", "Alice", "none", "STRING"},
		{"nullif(qty, 3)", nil, nil, "INT"},
		{"upper(prénom)", "ZOË", nil, "STRING"},
		{"substring(name, 2, 3)", "lic", nil, "STRING"},
		{"substr(name, -3)", "ice", nil, "STRING"},
		{"length(prénom)", int64(3), nil, "BIGINT"},
		{"abs(-amount)", "1500.00", nil, "DECIMAL(10,2)"},
		{"round(2.345, 2)", "2.35", "2.35", "DECIMAL(4,2)"},
		{"round(-2.345, 2)", "-2.35", "-2.35", "DECIMAL(4,2)"},
		{"CAST(amount AS INT)", int64(1500), nil, "INT"},
		{"CAST(-1.9 AS INT)", int64(-1), int64(-1), "INT"},
		{"CAST(amount AS STRING)", "1500.00", nil, "STRING"},
		{"CAST('12.345' AS DECIMAL(10,2))", "12.35", "12.35", "DECIMAL(10,2)"},
		{"CAST(flag AS STRING)", "true", nil, "STRING"},
		{"`order` + 1", int64(8), nil, "BIGINT"},
		{"金额 * 10", "99.00", nil, "DECIMAL(13,2)"},
		{"1000.00", "1000.00", "1000.00", "DECIMAL(6,2)"},
	} {
		b := bindText(t, c.text, scope)
		if got := b.Type().String(); got != c.typ {
			t.Errorf("%s: type %s, want %s", c.text, got, c.typ)
		}
		for i, row := range []Values{alice, nulls} {
			want := []any{c.want, c.wantNulls}[i]
			got, err := b.Eval(row)
			if err != nil {
				t.Errorf("%s: %v", c.text, err)
				continue
			}
			if d, ok := got.(decimal.Decimal); ok {
				got = d.StringFixed(int32(b.Type().Scale))
			}
			if got != want {
				t.Errorf("%s on row %d = %#v, want %#v", c.text, i, got, want)
			}
		}
	}
}

func TestEvalErrors(t *testing.T) {
	sch := cdc.Schema{Columns: []cdc.Column{{Name: "s", Type: cdc.TypeString}, {Name: "d", Type: cdc.Decimal(38, 0)}}}
	for _, c := range []struct {
		text string
		row  Values
		want string
	}{
		{"CAST(s AS INT)", Values{"abc", nil}, `1:1: cannot CAST "abc" to INT: not an integer`},
		{"d * d", Values{"", dec("99999999999999999999999999999999999999")}, "1:3: decimal overflow"},
		{"9223372036854775807 + 1", Values{"", nil}, "1:21: BIGINT overflow"},
	} {
		_, err := bindText(t, c.text, Scope{{Schema: sch}}).Eval(c.row)
		if err == nil || !errors.Is(err, ErrEval) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.text, err, c.want)
		}
	}
}

func TestPossibleOps(t *testing.T) {
	scope := Scope{{Schema: testSchema}}
	all := []cdc.Op{cdc.OpInsert, cdc.OpUpdateBefore, cdc.OpUpdateAfter, cdc.OpDelete}
	for _, c := range []struct {
		text string
		want []cdc.Op
	}{
		{"`__change_type` IN ('INSERT', 'UPDATE_AFTER')", []cdc.Op{cdc.OpInsert, cdc.OpUpdateAfter}},
		{"`__change_type` = 'DELETE' OR amount > 0", all},
		{"`__change_type` <> 'DELETE' AND amount > 0", []cdc.Op{cdc.OpInsert, cdc.OpUpdateBefore, cdc.OpUpdateAfter}},
		{"NOT (`__change_type` LIKE 'UPDATE%')", []cdc.Op{cdc.OpInsert, cdc.OpDelete}},
		{"amount > 0", all},
		{"CASE WHEN `__change_type` = 'INSERT' THEN TRUE ELSE FALSE END", []cdc.Op{cdc.OpInsert}},
		{"`__change_type` = 'insert'", nil},
		{"coalesce(name, `__change_type`) = 'DELETE'", all},
	} {
		b := bindText(t, c.text, scope)
		if got := PossibleOps(b, 0, 0); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.text, got, c.want)
		}
	}
}

func TestColumns(t *testing.T) {
	b := bindText(t, "amount > 1 AND name = upper(name) OR `order` = id", Scope{{Schema: testSchema}})
	want := []ColumnRef{{0, 3}, {0, 2}, {0, 10}, {0, 1}}
	if got := b.Columns(); !slices.Equal(got, want) {
		t.Errorf("Columns = %v, want %v", got, want)
	}
}

func TestTwoRelations(t *testing.T) {
	tgt := cdc.Schema{Columns: []cdc.Column{{Name: "id", Type: cdc.TypeBigInt}, {Name: "total", Type: cdc.Decimal(12, 2)}}}
	scope := Scope{{Alias: "t", Schema: tgt}, {Alias: "s", Schema: testSchema}}
	b := bindText(t, "t.total + s.amount", scope)
	v, err := b.Eval(Rows{{int64(1), dec("1.10")}, testRows[0]})
	if err != nil || v.(decimal.Decimal).StringFixed(2) != "1501.10" {
		t.Errorf("got %v %v", v, err)
	}
	q, _ := b.SQL(SQLite, func(rel, i int) string { return Column(scope[rel].Alias, scope[rel].Schema.Columns[i].Name) })
	if want := `sluice_dec_add("t"."total", "s"."amount", 'DECIMAL(13,2)')`; q != want {
		t.Errorf("SQL %s, want %s", q, want)
	}
	// unqualified id resolves in the first relation
	if b := bindText(t, "id", scope); b.Columns()[0] != (ColumnRef{0, 0}) {
		t.Errorf("id resolved to %v", b.Columns())
	}
}

func TestTranslateDML(t *testing.T) {
	for _, c := range []struct{ in, sqlite, pg string }{
		{"INSERT INTO orders (id, name, amount) VALUES (1, 'O''Brien', 1000.00), (2, 'a\\'b', -5.5)",
			`insert into "orders"("id", "name", "amount") values (1, 'O''Brien', '1000.00'), (2, 'a''b', '-5.5')`,
			`insert into "orders"("id", "name", "amount") values (1, 'O''Brien', 1000.00), (2, 'a''b', -5.5)`},
		{"UPDATE `order` SET amount = 1500.00, `user` = 'x' WHERE id = 1 AND flag = true",
			`update "order" set "amount" = '1500.00', "user" = 'x' where "id" = 1 and "flag" = 1`,
			`update "order" set "amount" = 1500.00, "user" = 'x' where "id" = 1 and "flag" = true`},
		{"DELETE FROM t WHERE 金额 < 10", `delete from "t" where "金额" < 10`, `delete from "t" where "金额" < 10`},
		{"SELECT id, name || '!' AS n FROM t ORDER BY id LIMIT 10, 5",
			`select "id", ("name" || '!') as "n" from "t" order by "id" asc limit 5 offset 10`,
			`select "id", ("name" || '!') as "n" from "t" order by "id" asc limit 5 offset 10`},
		{"SELECT upper(name), count(*) FROM t GROUP BY upper(name)",
			`select upper("name"), count(*) from "t" group by upper("name")`,
			`select upper("name"), count(*) from "t" group by upper("name")`},
		{"SELECT 1", `select 1`, `select 1`},
	} {
		stmt, err := ParseDML(c.in, at)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		for i, d := range []Dialect{SQLite, Postgres} {
			got, err := TranslateDML(stmt, d)
			want := []string{c.sqlite, c.pg}[i]
			if err != nil || got != want {
				t.Errorf("%s (%s):\n got  %s %v\n want %s", c.in, d.Name(), got, err, want)
			}
		}
	}
	for _, in := range []string{"INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 1", "SELECT a | b FROM t", "SELECT CAST(a AS CHAR) FROM t", "SHOW TABLES"} {
		stmt, err := ParseDML(in, at)
		if err == nil {
			_, err = TranslateDML(stmt, Postgres)
		}
		if err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range diffExprs {
		f.Add(s)
	}
	f.Add("CAST(CAST(a AS INT) AS DECIMAL(10,2)) || `x` AS y")
	f.Add("a\n|| b -- c")
	// Hostile shapes: deep nesting, long chains, invalid UTF-8.
	f.Add(strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300))
	f.Add(strings.Repeat("abs(", 150) + "id" + strings.Repeat(")", 150))
	f.Add(strings.Repeat("id = 1 OR ", 6000) + "id = 2")
	f.Add(strings.Repeat("NOT ", 3000) + "flag")
	f.Add(strings.Repeat("- ", 3000) + "1")
	f.Add("name = 'a\xc3' OR `b\xff` = 1")
	scope := Scope{{Schema: testSchema}}
	f.Fuzz(func(t *testing.T, s string) {
		for _, item := range []bool{false, true} {
			var e *Expr
			var err error
			if item {
				e, _, err = ParseSelectItem(s, at)
			} else {
				e, err = Parse(s, at)
			}
			if err != nil {
				var pe *pos.Error
				if !errors.As(err, &pe) || !pe.Pos.IsValid() {
					t.Fatalf("%q: error without position: %v", s, err)
				}
				continue
			}
			b, err := e.Bind(scope)
			if err != nil {
				var pe *pos.Error
				if !errors.As(err, &pe) || !pe.Pos.IsValid() {
					t.Fatalf("%q: bind error without position: %v", s, err)
				}
				continue
			}
			for _, r := range testRows {
				_, _ = b.Eval(Values(r))
			}
			col := func(_, i int) string { return QuoteIdent(testSchema.Columns[i].Name) }
			if _, err := b.SQL(SQLite, col); err != nil {
				t.Fatalf("%q: SQLite: %v", s, err)
			}
			if _, err := b.SQL(Postgres, col); err != nil {
				t.Fatalf("%q: Postgres: %v", s, err)
			}
			_ = PossibleOps(b, 0, 0)
		}
	})
}
