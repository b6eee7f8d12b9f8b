package expr

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/pos"
)

func bindText(t *testing.T, text string, s Scope) *Bound {
	t.Helper()
	e, err := Parse(text, pos.Pos{Line: 1, Col: 1})
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	b, err := e.Bind(s)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return b
}

func TestPostgresGolden(t *testing.T) {
	scope := Scope{{Alias: "s", Schema: testSchema}}
	col := func(_, i int) string { return Column("s", testSchema.Columns[i].Name) }
	for _, c := range []struct{ in, want string }{
		{"`__change_type` IN ('INSERT', 'UPDATE_AFTER')", `(("s"."__change_type" = 'INSERT' COLLATE "C") OR ("s"."__change_type" = 'UPDATE_AFTER' COLLATE "C"))`},
		{"amount = 1500", `("s"."amount" = 1500)`},
		{"amount > '1000.5'", `("s"."amount" > 1000.5)`},
		{"amount * qty", `CAST(("s"."amount" * "s"."qty") AS numeric(21,2))`},
		{"amount / 3", `CAST(round(div(("s"."amount") * 10000000, NULLIF(3, 0)) * 0.0000001, 6) AS numeric(14,6))`},
		{"qty + 1", `(CAST("s"."qty" AS bigint) + CAST(1 AS bigint))`},
		{"qty / 2", `(CAST("s"."qty" AS double precision) / NULLIF(CAST(2 AS double precision), 0))`},
		{"name || '-' || id", `(("s"."name" || '-') || CAST("s"."id" AS text))`},
		{"concat(name, `user`)", `("s"."name" || "s"."user")`},
		{"CAST(amount AS DECIMAL(12,1))", `CAST("s"."amount" AS numeric(12,1))`},
		{"CAST(amount AS INT)", `CAST(trunc("s"."amount") AS integer)`},
		{"CAST(name AS STRING)", `"s"."name"`},
		{"CAST(price AS DOUBLE)", `"s"."price"`},
		{"CAST(ts AS TIMESTAMP)", `"s"."ts"`},
		{"CAST(data AS BINARY)", `"s"."data"`},
		{"CAST(qty AS TINYINT)", `CAST("s"."qty" AS smallint)`},
		{"name LIKE 'a%'", `("s"."name" LIKE 'a%' ESCAPE '\')`},
		{"name NOT LIKE 'it''s'", `("s"."name" NOT LIKE 'it''s' ESCAPE '\')`},
		{"substring(name, 2, 3)", `substr("s"."name", CASE WHEN 2 > 0 THEN 2 WHEN 2 < 0 THEN char_length("s"."name") + 2 + 1 ELSE 1 END, GREATEST(3, 0))`},
		{"flag IS NOT TRUE", `("s"."flag" IS NOT TRUE)`},
		{"1000.00", `1000.00`},
		{"`order` + 1 > 2", `((CAST("s"."order" AS bigint) + CAST(1 AS bigint)) > 2)`},
		{"金额 <> 0", `("s"."金额" <> 0)`},
	} {
		q, err := bindText(t, c.in, scope).SQL(Postgres, col)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
		} else if q != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.in, q, c.want)
		}
	}
}

// pgDiffSkip lists expressions whose PostgreSQL result is documented to
// differ (PostgreSQL keeps no timestamp zone).
var pgDiffSkip = map[string]bool{"CAST(ts AS DATE)": true, "CAST(ts AS STRING)": true}

// TestDifferentialPostgres runs diffExprs on a live PostgreSQL (127.0.0.1:5432,
// user postgres, or $SLUICE_TEST_PG) and compares with Eval.
func TestDifferentialPostgres(t *testing.T) {
	url := os.Getenv("SLUICE_TEST_PG")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable&connect_timeout=2"
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Skipf("no PostgreSQL: %v", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Skipf("PostgreSQL at %s unreachable: %v", url, err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string, args ...any) {
		if _, err := conn.ExecContext(context.Background(), q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("SET TimeZone = 'UTC'")
	var cols, marks []string
	for i, c := range testSchema.Columns {
		cols = append(cols, QuoteIdent(c.Name)+" "+PGType(c.Type))
		marks = append(marks, fmt.Sprintf("$%d", i+1))
	}
	exec("CREATE TEMP TABLE t (rowno serial, " + strings.Join(cols, ", ") + ")")
	names := make([]string, len(testSchema.Columns))
	for i, c := range testSchema.Columns {
		names[i] = QuoteIdent(c.Name)
	}
	for _, r := range testRows {
		args := make([]any, len(r))
		for i, v := range r {
			if d, ok := v.(decimal.Decimal); ok {
				v = d.String()
			}
			args[i] = v
		}
		exec("INSERT INTO t ("+strings.Join(names, ", ")+") VALUES ("+strings.Join(marks, ", ")+")", args...)
	}
	scope := Scope{{Schema: testSchema}}
	colSQL := func(_, i int) string { return QuoteIdent(testSchema.Columns[i].Name) }
	for _, text := range diffExprs {
		if pgDiffSkip[text] {
			continue
		}
		b := bindText(t, text, scope)
		q, err := b.SQL(Postgres, colSQL)
		if err != nil {
			t.Errorf("%s: %v", text, err)
			continue
		}
		rows, err := conn.QueryContext(context.Background(), "SELECT "+q+" FROM t ORDER BY rowno")
		if err != nil {
			t.Errorf("%s: PostgreSQL %s: %v", text, q, err)
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
			} else if !samePG(got, want, b.Type()) {
				t.Errorf("%s row %d:\n  PostgreSQL %s = %#v\n  Eval = %#v", text, i, q, got, want)
			}
			i++
		}
		if i != len(testRows) && err == nil {
			t.Errorf("%s: %d rows, want %d", text, i, len(testRows))
		}
		if err := rows.Err(); err != nil {
			t.Errorf("%s: PostgreSQL %s: %v", text, q, err)
		}
		rows.Close()
	}
}

func samePG(got, want any, t cdc.Type) bool {
	if want == nil || got == nil {
		return want == nil && got == nil
	}
	switch w := want.(type) {
	case decimal.Decimal:
		// The exact text: numeric(p,s) prints s decimals, as Eval formats.
		return fmt.Sprint(got) == w.StringFixed(int32(t.Scale))
	case time.Time:
		g, ok := got.(time.Time)
		return ok && g.Equal(w)
	case []byte:
		g, ok := got.([]byte)
		return ok && bytes.Equal(g, w)
	case float64:
		g, ok := got.(float64)
		if !ok {
			g32, ok32 := got.(float32)
			return ok32 && float64(g32) == w
		}
		return g == w
	}
	return got == want
}
