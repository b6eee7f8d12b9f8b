package sqlite

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

func TestAppendModes(t *testing.T) {
	seedBatch := []cdc.Change{
		ch(cdc.OpInsert, 4, int64(4), "Dave", dec("3000"), "active"),
		ch(cdc.OpUpdateAfter, 5, int64(1), "Alice", dec("1500"), "active"),
	}
	const existing = `CREATE TABLE orders_target (id INT, name TEXT, amount DECIMAL_TEXT(10,2), status TEXT)`
	const oldRow = `INSERT INTO orders_target VALUES (9, 'Old', '1.00', 'x')`
	tests := []struct {
		name    string
		mode    plan.Mode
		setup   []string
		want    []string // rows after the run, ordered by id
		wantErr error
		wantOff string // stored checkpoint offset; "" for none
	}{
		{name: "append creates missing target", mode: plan.ModeAppend,
			want: []string{"1|Alice|1500.00|active", "4|Dave|3000.00|active"}, wantOff: "7"},
		{name: "append adds to existing rows", mode: plan.ModeAppend, setup: []string{existing, oldRow},
			want: []string{"1|Alice|1500.00|active", "4|Dave|3000.00|active", "9|Old|1.00|x"}, wantOff: "7"},
		{name: "overwrite replaces rows", mode: plan.ModeOverwrite, setup: []string{existing, oldRow},
			want: []string{"1|Alice|1500.00|active", "4|Dave|3000.00|active"}, wantOff: "7"},
		{name: "overwrite creates missing target", mode: plan.ModeOverwrite,
			want: []string{"1|Alice|1500.00|active", "4|Dave|3000.00|active"}, wantOff: "7"},
		{name: "errorifexists creates missing target", mode: plan.ModeErrorIfExists,
			want: []string{"1|Alice|1500.00|active", "4|Dave|3000.00|active"}, wantOff: "7"},
		{name: "errorifexists fails on existing target", mode: plan.ModeErrorIfExists, setup: []string{existing, oldRow},
			want: []string{"9|Old|1.00|x"}, wantErr: runner.ErrTargetExists},
		{name: "ignore creates missing target", mode: plan.ModeIgnore,
			want: []string{"1|Alice|1500.00|active", "4|Dave|3000.00|active"}, wantOff: "7"},
		{name: "ignore leaves existing target and consumes nothing", mode: plan.ModeIgnore, setup: []string{existing, oldRow},
			want: []string{"9|Old|1.00|x"}, wantErr: ErrIgnored},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			exec(t, db, tc.setup...)
			st := stage("orders_target", tc.mode, nil, orders)
			stats, err := runBatches(t, db, st, cpAt("7"), seedBatch)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if tc.mode == plan.ModeIgnore && !errors.Is(err, runner.ErrTargetExists) {
					t.Errorf("ignore error %v does not match runner.ErrTargetExists", err)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if stats.Written[cdc.OpInsert] != 1 || stats.Written[cdc.OpUpdateAfter] != 1 {
				t.Errorf("written = %v", stats.Written)
			}
			checkRows(t, dump(t, db, "orders_target", "id"), tc.want)
			if got := storedOffset(t, db, "job1"); got != tc.wantOff {
				t.Errorf("checkpoint offset = %q, want %q", got, tc.wantOff)
			}
		})
	}
}

func TestCreatedTargetDeclaredTypes(t *testing.T) {
	db := openDB(t)
	st := stage("t", plan.ModeMerge, []string{"id"}, orders)
	if _, err := runBatches(t, db, st, cpAt("1")); err != nil {
		t.Fatal(err)
	}
	var sql string
	if err := db.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 't'`).Scan(&sql); err != nil {
		t.Fatal(err)
	}
	want := `CREATE TABLE "t" ("id" INT NOT NULL, "name" TEXT, "amount" DECIMAL_TEXT(10,2) CONSTRAINT "amount is a number" CHECK ("amount" IS NULL OR ("amount" NOT GLOB '*[^0-9.eE+-]*' AND "amount" GLOB '*[0-9]*') OR "amount" IN ('NaN', 'Infinity', '-Infinity')), "status" TEXT, PRIMARY KEY ("id"))`
	if sql != want {
		t.Errorf("created\n %s\nwant\n %s", sql, want)
	}
	s, ok, err := New(db, nil).Target(context.Background(), "t")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	for i, c := range s.Columns {
		if c.Type != orders.Columns[i].Type {
			t.Errorf("column %s reads back as %s, want %s", c.Name, c.Type, orders.Columns[i].Type)
		}
	}
}

func TestAppendWritesDeleteRows(t *testing.T) {
	// An append target receives every change the filter let through, a
	// DELETE included, as a row (with the values the change carries).
	db := openDB(t)
	st := stage("t", plan.ModeAppend, nil, orders)
	stats, err := runBatches(t, db, st, cpAt("3"), []cdc.Change{
		ch(cdc.OpDelete, 3, int64(3), "Carol", dec("500"), "active"),
		partial(cdc.OpUpdateAfter, 4, "1100", int64(1), "Al", dec("7"), "ignored"),
	})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, dump(t, db, "t", "id"), []string{"1|Al|NULL|NULL", "3|Carol|500.00|active"})
	if stats.Written[cdc.OpDelete] != 1 {
		t.Errorf("written = %v", stats.Written)
	}
}

func TestIncompatibleTarget(t *testing.T) {
	tests := []struct {
		name, ddl, want string
	}{
		{"missing column", `CREATE TABLE t (id INT, name TEXT, amount DECIMAL_TEXT(10,2))`, `target table "t" has no column "status"`},
		{"incompatible type", `CREATE TABLE t (id INT, name TEXT, amount DATE, status TEXT)`, `target table "t" column "amount" is DATE, which cannot hold the projected DECIMAL(10,2)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			exec(t, db, tc.ddl)
			_, err := New(db, nil).PrepareSink(context.Background(), stage("t", plan.ModeAppend, nil, orders))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestValueMismatchNamesKeyAndColumnAndCommitsNothing(t *testing.T) {
	tests := []struct {
		name  string
		mode  plan.Mode
		keys  []string
		ddl   string
		batch []cdc.Change
		want  []string // substrings of the error
	}{
		{name: "text into INT column of existing target", mode: plan.ModeAppend,
			ddl: `CREATE TABLE t (id INT PRIMARY KEY, name INT, amount DECIMAL_TEXT(10,2), status TEXT)`,
			batch: []cdc.Change{ch(cdc.OpInsert, 1, int64(1), "42", dec("1"), "s"),
				ch(cdc.OpInsert, 2, int64(2), "Bob", dec("2"), "s")},
			want: []string{"id=2", `column "name"`, `"Bob"`}},
		{name: "fraction into INT column of existing target", mode: plan.ModeAppend,
			ddl: `CREATE TABLE t (id INT PRIMARY KEY, name TEXT, amount INT, status TEXT)`,
			batch: []cdc.Change{ch(cdc.OpInsert, 1, int64(1), "a", dec("1"), "s"),
				ch(cdc.OpInsert, 2, int64(2), "b", dec("2.5"), "s")},
			want: []string{"id=2", `column "amount"`}},
		{name: "decimal overflow in merge", mode: plan.ModeMerge, keys: []string{"id"},
			batch: []cdc.Change{ch(cdc.OpInsert, 1, int64(1), "a", dec("1"), "s"),
				ch(cdc.OpInsert, 2, int64(7), "b", dec("123456789.5"), "s")},
			want: []string{"id=7", `column "amount"`, "DECIMAL(10,2)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			if tc.ddl != "" {
				exec(t, db, tc.ddl)
			}
			s := orders
			if tc.ddl != "" {
				s = cdc.Schema{Columns: []cdc.Column{orders.Columns[0], orders.Columns[1], {Name: "amount", Type: cdc.Decimal(10, 2)}, orders.Columns[3]}}
			}
			_, err := runBatches(t, db, stage("t", tc.mode, tc.keys, s), cpAt("2"), tc.batch)
			var ve *cdc.ValueError
			if !errors.As(err, &ve) || !errors.Is(err, cdc.ErrBadValue) {
				t.Fatalf("err = %v, want a *cdc.ValueError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tc.ddl != "" {
				checkRows(t, dump(t, db, "t", "id"), nil)
			} else if ok, _ := tableExists(context.Background(), db, "t"); ok {
				t.Errorf("target was created although nothing committed")
			}
			if off := storedOffset(t, db, "job1"); off != "" {
				t.Errorf("checkpoint stored: %q", off)
			}
		})
	}
}

func TestDecimalsExact(t *testing.T) {
	s := cdc.Schema{Columns: []cdc.Column{
		{Name: "id", Type: cdc.TypeBigInt},
		{Name: "d10", Type: cdc.Decimal(10, 2)},
		{Name: "d38", Type: cdc.Decimal(38, 10)},
	}}
	vals := [][2]string{
		{"12345678.91", "1234567890123456789012345678.0123456789"},
		{"0.10", "0.0000000001"},
		{"-99999999.99", "-9999999999999999999999999999.9999999999"},
		{"1500", "0.30000000000000004"}, // scale fills up; more digits round half away from zero
	}
	want := []string{
		"0|12345678.91|1234567890123456789012345678.0123456789",
		"1|0.10|0.0000000001",
		"2|-99999999.99|-9999999999999999999999999999.9999999999",
		"3|1500.00|0.3000000000",
	}
	for _, mode := range []plan.Mode{plan.ModeAppend, plan.ModeMerge} {
		t.Run(string(mode), func(t *testing.T) {
			db := openDB(t)
			var batch []cdc.Change
			for i, v := range vals {
				batch = append(batch, ch(cdc.OpInsert, 1, int64(i), dec(v[0]), dec(v[1])))
			}
			var keys []string
			if mode == plan.ModeMerge {
				keys = []string{"id"}
			}
			if _, err := runBatches(t, db, stage("t", mode, keys, s), cpAt("1"), batch); err != nil {
				t.Fatal(err)
			}
			checkRows(t, dump(t, db, "t", "id"), want)
			// And they decode back to the same numbers.
			rows, err := db.Query(`SELECT d10, d38 FROM t ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for i := 0; rows.Next(); i++ {
				var a, b any
				rows.Scan(&a, &b)
				da, _ := sqlitex.Decode(a, s.Columns[1].Type)
				db38, _ := sqlitex.Decode(b, s.Columns[2].Type)
				if !da.(decimal.Decimal).Equal(dec(strings.Split(want[i], "|")[1])) || !db38.(decimal.Decimal).Equal(dec(strings.Split(want[i], "|")[2])) {
					t.Errorf("row %d decodes to %v, %v", i, da, db38)
				}
			}
		})
	}
}
