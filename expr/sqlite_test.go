package expr

import (
	"bytes"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/pos"
	"modernc.org/sqlite"
)

var registerOnce sync.Once

// openSQLite opens an in-memory database on a private driver that has
// SQLiteFunctions registered, as the sqlite backend does.
func openSQLite(t *testing.T) *sql.DB {
	t.Helper()
	registerOnce.Do(func() {
		d := &sqlite.Driver{}
		for _, f := range SQLiteFunctions {
			f := f
			if err := d.RegisterDeterministicScalarFunction(f.Name, int32(f.NArgs), func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
				return f.Func(args)
			}); err != nil {
				panic(err)
			}
		}
		sql.Register("sqlite_expr_test", d)
	})
	db, err := sql.Open("sqlite_expr_test", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// testSchema is the table of the differential test; declared SQLite types
// follow docs/architecture.md.
var testSchema = cdc.Schema{Columns: []cdc.Column{
	{Name: "__change_type", Type: cdc.TypeString},
	{Name: "id", Type: cdc.TypeBigInt},
	{Name: "name", Type: cdc.TypeString},
	{Name: "amount", Type: cdc.Decimal(10, 2)},
	{Name: "big", Type: cdc.Decimal(38, 10)},
	{Name: "qty", Type: cdc.TypeInt},
	{Name: "price", Type: cdc.TypeDouble},
	{Name: "flag", Type: cdc.TypeBoolean},
	{Name: "ts", Type: cdc.TypeTimestamp},
	{Name: "day", Type: cdc.TypeDate},
	{Name: "order", Type: cdc.TypeInt},
	{Name: "user", Type: cdc.TypeString},
	{Name: "金额", Type: cdc.Decimal(10, 2)},
	{Name: "prénom", Type: cdc.TypeString},
	{Name: "data", Type: cdc.TypeBinary},
}}

func sqliteDecl(t cdc.Type) string {
	switch t.Kind {
	case cdc.KindDecimal:
		return fmt.Sprintf("DECIMAL_TEXT(%d,%d)", t.Precision, t.Scale)
	case cdc.KindString:
		return "TEXT"
	}
	return t.String()
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func ts(s string) time.Time {
	t, err := cdc.ParseTimestamp(s)
	if err != nil {
		panic(err)
	}
	return t
}

var testRows = [][]any{
	{"INSERT", int64(1), "Alice", dec("1500.00"), dec("1234567890123456789012345678.0123456789"), int64(3), 2.5, true,
		ts("2024-03-01 10:00:00+08:00"), ts("2024-03-01"), int64(7), "root", dec("9.90"), "Zoë", []byte{1, 2}},
	{"UPDATE_AFTER", int64(2), "bob_x%", dec("-0.05"), dec("0.0000000001"), int64(-4), -1.25, false,
		ts("2024-03-01 02:30:00Z"), ts("2023-12-31"), int64(0), "o'neil", dec("10.10"), "prénom", []byte{}},
	{"DELETE", int64(3), "", dec("99999999.99"), dec("-1500"), int64(0), 0.0, true,
		ts("2024-02-29 23:59:59.123456-05:00"), ts("2024-02-29"), int64(-2), "", dec("0.00"), "", []byte("x")},
	{"UPDATE_BEFORE", int64(4), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
}

// diffExprs are evaluated with Eval and with SQLite; results must agree.
var diffExprs = []string{
	"`__change_type` IN ('INSERT', 'UPDATE_AFTER')",
	"`__change_type` NOT IN ('DELETE')",
	"amount = 1500", "amount = '1500'", "amount = 1500.000", "amount > 1000", "amount < 10.1",
	"9.90 < 10.1", "金额 < 10.1", "金额 = 9.9", "big = 1234567890123456789012345678.0123456789",
	"big > 1234567890123456789012345678.01234567", "big", "amount", "amount + 0.005", "amount * qty",
	"amount / 3", "amount % 7", "amount - big", "-amount", "big * 2", "amount + qty", "amount / 0",
	"qty + 1", "qty * id - 3", "qty / 2", "qty % 3", "qty % 0", "-qty", "price * 2", "price / 0", "qty + price",
	"price > 1", "price = amount", "name || '-' || id", "name || 1 + 2", "concat(name, `user`)",
	"upper(name)", "lower(prénom)", "upper(prénom)", "length(prénom)", "length(data)", "substring(name, 2)",
	"substring(name, 2, 3)", "substr(name, -2)", "substring(name, 0, 2)", "substring(name, 2, -1)",
	"name LIKE 'A%'", "name LIKE '%\\_x\\%'", "name NOT LIKE '_o%'", "name LIKE 'b%x!%' ESCAPE '!'", "name LIKE 'alice'",
	"flag", "NOT flag", "flag AND id > 1", "flag OR id > 1", "flag IS TRUE", "flag IS NOT FALSE",
	"name IS NULL", "amount IS NOT NULL", "id BETWEEN 2 AND 3", "amount NOT BETWEEN 0 AND 100",
	"ts > '2024-03-01 03:00:00+01:00'", "ts = '2024-03-01 02:00:00Z'", "ts", "day", "day >= '2024-01-01'", "day < ts",
	"CASE WHEN amount > 1000 THEN 'big' WHEN amount < 0 THEN 'neg' ELSE 'small' END",
	"CASE id WHEN 1 THEN amount WHEN 2 THEN 0 END", "CASE WHEN flag THEN 1.5 ELSE qty END",
	"coalesce(name, 'none')", "coalesce(amount, 0)", "coalesce(amount, big)", "nullif(amount, 1500)", "nullif(qty, 0)",
	"abs(amount)", "abs(qty)", "abs(price)", "round(amount, 1)", "round(amount)", "round(price, 1)", "round(qty, -1)",
	"trim('  a b  ')", "ltrim('  a')", "rtrim(name)", "replace(name, 'l', 'L')", "replace(name, '', 'x')",
	"CAST(amount AS INT)", "CAST(amount AS STRING)", "CAST(amount AS DECIMAL(12,1))", "CAST(price AS DECIMAL(10,2))",
	"CAST(qty AS DOUBLE)", "CAST(qty AS BOOLEAN)", "CAST(flag AS INT)", "CAST(flag AS STRING)", "CAST(ts AS DATE)",
	"CAST(day AS TIMESTAMP)", "CAST(ts AS STRING)", "CAST(id AS STRING) || 'x'", "CAST('12.7' AS INT)",
	"CAST(price AS BIGINT)", "CAST(data AS STRING)", "CAST(name AS BINARY)", "CAST('2024-01-02' AS DATE)",
	"`order` + 1", "`user` = 'root'", "prénom = 'Zoë'", "id = 1 AND (name = 'Alice' OR qty IS NULL)",
	"NULL", "NULL = 1", "amount + NULL", "1000.00", "-5 - -3", "TRUE", "X'0102' = data",
}

func TestDifferentialSQLite(t *testing.T) {
	db := openSQLite(t)
	var cols, marks []string
	for _, c := range testSchema.Columns {
		cols = append(cols, QuoteIdent(c.Name)+" "+sqliteDecl(c.Type))
		marks = append(marks, "?")
	}
	if _, err := db.Exec("CREATE TABLE t (" + strings.Join(cols, ", ") + ")"); err != nil {
		t.Fatal(err)
	}
	for _, r := range testRows {
		args := make([]any, len(r))
		for i, v := range r {
			args[i] = toStorage(v, testSchema.Columns[i].Type)
		}
		if _, err := db.Exec("INSERT INTO t VALUES ("+strings.Join(marks, ", ")+")", args...); err != nil {
			t.Fatal(err)
		}
	}
	scope := Scope{{Alias: "t", Schema: testSchema}}
	colSQL := func(_, i int) string { return QuoteIdent(testSchema.Columns[i].Name) }
	for _, text := range diffExprs {
		e, err := Parse(text, pos.Pos{Line: 1, Col: 1})
		if err != nil {
			t.Errorf("%s: parse: %v", text, err)
			continue
		}
		b, err := e.Bind(scope)
		if err != nil {
			t.Errorf("%s: bind: %v", text, err)
			continue
		}
		q, err := b.SQL(SQLite, colSQL)
		if err != nil {
			t.Errorf("%s: sql: %v", text, err)
			continue
		}
		rows, err := db.Query("SELECT " + q + " FROM t ORDER BY rowid")
		if err != nil {
			t.Errorf("%s: SQLite %s: %v", text, q, err)
			continue
		}
		i := 0
		for rows.Next() {
			var got any
			if err := rows.Scan(&got); err != nil {
				t.Fatal(err)
			}
			want, err := b.Eval(Values(testRows[i]))
			if err != nil {
				t.Errorf("%s row %d: eval: %v", text, i, err)
			} else if !sameStored(got, want, b.Type()) {
				t.Errorf("%s row %d:\n  SQLite %s = %#v\n  Eval = %#v (storage %#v)", text, i, q, got, want, toStorage(want, b.Type()))
			}
			i++
		}
		if i != len(testRows) && err == nil {
			t.Errorf("%s: %d rows, want %d", text, i, len(testRows))
		}
		if err := rows.Err(); err != nil {
			t.Errorf("%s: SQLite %s: %v", text, q, err)
		}
		rows.Close()
	}
}

// sameStored reports whether SQLite's result equals Eval's value in
// storage form (DECIMAL as fixed-scale text: the exact text must match).
func sameStored(got, want any, t cdc.Type) bool {
	w := toStorage(want, t)
	if tm, ok := got.(time.Time); ok {
		got = storageText(tm, t)
	}
	switch x := w.(type) {
	case nil:
		return got == nil
	case float64:
		g, ok := got.(float64)
		return ok && (g == x || math.IsNaN(g) && math.IsNaN(x))
	case []byte:
		g, ok := got.([]byte)
		return ok && bytes.Equal(g, x) || (len(x) == 0 && got != nil && fmt.Sprint(got) == "[]")
	case string:
		if g, ok := got.([]byte); ok {
			return string(g) == x
		}
	}
	return got == w
}

// TestSQLiteErrorsMatchEval: a value that does not convert is an error on
// both sides.
func TestSQLiteErrorsMatchEval(t *testing.T) {
	db := openSQLite(t)
	sch := cdc.Schema{Columns: []cdc.Column{{Name: "s", Type: cdc.TypeString}, {Name: "n", Type: cdc.TypeBigInt}}}
	for _, c := range []struct {
		text string
		row  []any
	}{
		{"CAST(s AS INT)", []any{"abc", int64(0)}},
		{"n * 10", []any{"", int64(math.MaxInt64)}},
		{"CAST(s AS DECIMAL(3,1))", []any{"123.4", int64(0)}},
	} {
		e, err := Parse(c.text, pos.Pos{Line: 1, Col: 1})
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.Bind(Scope{{Schema: sch}})
		if err != nil {
			t.Fatal(err)
		}
		_, evalErr := b.Eval(Values(c.row))
		if !errors.Is(evalErr, ErrEval) {
			t.Errorf("%s: Eval error = %v, want ErrEval", c.text, evalErr)
		}
		q, _ := b.SQL(SQLite, func(_, i int) string { return "?" + fmt.Sprint(i+1) })
		var got any
		err = db.QueryRow("SELECT "+q, c.row...).Scan(&got)
		if err == nil {
			t.Errorf("%s: SQLite %s = %v, want an error", c.text, q, got)
		}
	}
}
