package runner_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/runner"
)

// TestBackfillSQLiteToPostgresPassThrough: a backfill from SQLite into
// PostgreSQL streams its chunks as COPY text written from the stored
// values. Every column of every row arrives as PostgreSQL reads the same
// values written as its own literals (text of each row, in key order):
// integers of three widths, booleans, doubles, DECIMAL(12,2), text with
// tabs, newlines, backslashes, quotes and non-ASCII, VARCHAR(n), DATE,
// TIMESTAMP in several zones with and without fractions, TIMESTAMP_NTZ,
// BINARY, and NULL in every nullable column. A chunk holding a value not
// in sluice's storage form (a DECIMAL stored as '2', a TIMESTAMP with a
// 'T' and 'Z') goes through sluice instead, which converts it as a run
// does; the other chunks still pass through.
func TestBackfillSQLiteToPostgresPassThrough(t *testing.T) {
	const n = 23
	type row struct {
		stored []any  // the values as the application stores them in SQLite
		pg     string // the same row as PostgreSQL literals
	}
	rows := make([]row, 0, n)
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("n%d\t\"tab\"\nline\\back'q ✓", i)
		var amount, at, local, day, vc, raw, d, b any = fmt.Sprintf("%d.%02d", i*1000, i), fmt.Sprintf("2024-03-10 01:59:%02d.%s+05:30", i, strings.Repeat("1", i%7)), fmt.Sprintf("1999-12-31 23:59:%02d", i),
			fmt.Sprintf("2024-02-%02d", i), fmt.Sprintf("v%d", i), []byte{byte(i), 0, 0x5c, 0xff}, float64(i) / 10, int64(i % 2)
		if i%7 == 0 {
			at = fmt.Sprintf("2024-03-10 01:59:%02d-08:00", i)
		}
		pg := func(v any, cast string) string {
			switch x := v.(type) {
			case nil:
				return "NULL::" + cast
			case string:
				return "'" + strings.ReplaceAll(x, "'", "''") + "'::" + cast
			case []byte:
				return fmt.Sprintf("'\\x%x'::bytea", x)
			case float64:
				return fmt.Sprintf("'%v'::float8", x)
			case int64:
				if cast == "boolean" {
					return fmt.Sprintf("%v", x == 1)
				}
				return fmt.Sprintf("%d::%s", x, cast)
			}
			t.Fatalf("no literal for %T", v)
			return ""
		}
		stored := []any{int64(i), int64(-i * 1000), int64(i), b, d, amount, name, vc, day, at, local, raw}
		if i%5 == 0 { // NULL in every nullable column
			for k := 1; k < len(stored); k++ {
				stored[k] = nil
			}
		}
		casts := []string{"bigint", "integer", "smallint", "boolean", "float8", "numeric(12,2)", "text", "varchar(10)", "date", "timestamptz", "timestamp", "bytea"}
		lits := make([]string, len(stored))
		for k, v := range stored {
			lits[k] = pg(v, casts[k])
		}
		rows = append(rows, row{stored, "(" + strings.Join(lits, ", ") + ")"})
	}
	for _, tc := range []struct {
		name string
		odd  map[int][2]any // row index → column, stored value (PostgreSQL literal in the row's pg text is unchanged)
	}{
		{name: "canonical"},
		{name: "odd values", odd: map[int][2]any{8: {5, "2"}, 17: {9, "2024-01-02T03:04:05Z"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pgURL := pgtest.NewDatabase(t)
			e := newEnv(t)
			e.sql("", `CREATE TABLE src (id BIGINT, i INT, s SMALLINT, b BOOLEAN, d DOUBLE, amount DECIMAL(12,2), name STRING, vc VARCHAR(10), day DATE, at TIMESTAMP, local TIMESTAMP_NTZ, raw BINARY, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM src_s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');`)
			db, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(e.r.Conn, "sqlite:"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			want := make([]string, len(rows))
			for k, r := range rows {
				vals := append([]any(nil), r.stored...)
				want[k] = r.pg
				if o, ok := tc.odd[k]; ok {
					vals[o[0].(int)] = o[1]
					// the literal of that value as PostgreSQL reads it
					lits := strings.Split(strings.Trim(r.pg, "()"), ", ")
					cast := lits[o[0].(int)][strings.LastIndex(lits[o[0].(int)], "::"):]
					lits[o[0].(int)] = "'" + o[1].(string) + "'" + cast
					want[k] = "(" + strings.Join(lits, ", ") + ")"
				}
				if _, err := db.Exec("INSERT INTO src VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", vals...); err != nil {
					t.Fatal(err)
				}
			}
			j := e.job("to_pg.yaml", "source: src_s\nsink: {table: tgt, mode: append, connection: '"+pgURL+"'}\n")
			res, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 5})
			if err != nil {
				t.Fatal(err)
			}
			if res.Rows != n {
				t.Errorf("copied %d rows, want %d", res.Rows, n)
			}
			switch {
			case tc.odd == nil && res.PassThrough != res.Chunks:
				t.Errorf("%d of %d chunks passed through, want all", res.PassThrough, res.Chunks)
			case tc.odd != nil && (res.PassThrough != res.Chunks-len(tc.odd) || res.PassThrough == 0):
				t.Errorf("%d of %d chunks passed through, want all but the %d with an odd value", res.PassThrough, res.Chunks, len(tc.odd))
			}
			c, err := pgx.Connect(context.Background(), pgURL)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			var got, exp string
			cols := "id, i, s, b, d, amount, name, vc, day, at, local, raw"
			q := `SELECT count(*) || ' ' || string_agg(r::text, E'\n' ORDER BY r.id) FROM (SELECT ` + cols + ` FROM %s) r`
			if err := c.QueryRow(context.Background(), fmt.Sprintf(q, "tgt")).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if err := c.QueryRow(context.Background(), fmt.Sprintf(q, "(VALUES "+strings.Join(want, ", ")+") v("+cols+")")).Scan(&exp); err != nil {
				t.Fatal(err)
			}
			if got != exp {
				t.Errorf("target:\n%s\nwant:\n%s", got, exp)
			}
			var types string
			if err := c.QueryRow(context.Background(), `SELECT string_agg(format_type(atttypid, atttypmod), ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'tgt'::regclass AND attnum > 0`).Scan(&types); err != nil {
				t.Fatal(err)
			}
			if types != "bigint, integer, smallint, boolean, double precision, numeric(12,2), text, character varying(10), date, timestamp with time zone, timestamp without time zone, bytea" {
				t.Errorf("target types %s", types)
			}
		})
	}
}
