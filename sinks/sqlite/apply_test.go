package sqlite

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// A change relation as the sqlite source's pushdown would give it: a
// subquery with the contract columns, values encoded per the projected
// types (here DECIMAL(12,4) and BIGINT, while the target holds
// DECIMAL(10,2) and INT).
const changeLog = `CREATE TABLE log (op TEXT, ver INTEGER, id INTEGER, name TEXT, amount TEXT)`

var logRows = []string{
	`INSERT INTO log VALUES ('UPDATE_BEFORE', 3, 1, 'Alice', '1000.0000'), ('DELETE', 3, 3, 'Carol', '500.0000'),
	 ('INSERT', 4, 4, 'Dave', '3000.0049'), ('UPDATE_AFTER', 5, 1, 'Alice', '1500.0050')`,
}

const relation = `(SELECT op AS __op, ver AS __ver, rowid AS __ord, NULL AS __present, id AS "id", name AS "name", amount AS "amount" FROM log)`

var logSchema = cdc.Schema{Columns: []cdc.Column{
	{Name: "id", Type: cdc.TypeBigInt},
	{Name: "name", Type: cdc.TypeString},
	{Name: "amount", Type: cdc.Decimal(12, 4)},
}}

func TestCompileApplyOverRelation(t *testing.T) {
	tests := []struct {
		name    string
		mode    plan.Mode
		keys    []string
		want    []string
		written map[cdc.Op]int64
	}{
		{name: "merge", mode: plan.ModeMerge, keys: []string{"id"},
			want:    []string{"1|Alice|1500.01", "2|Bob|2000.00", "4|Dave|3000.00"},
			written: map[cdc.Op]int64{cdc.OpInsert: 1, cdc.OpUpdateAfter: 1, cdc.OpDelete: 1}},
		{name: "append", mode: plan.ModeAppend,
			want: []string{"1|Alice|1000.00", "1|Alice|1000.00", "1|Alice|1500.01", "2|Bob|2000.00",
				"3|Carol|500.00", "3|Carol|500.00", "4|Dave|3000.00"},
			written: map[cdc.Op]int64{cdc.OpInsert: 1, cdc.OpUpdateAfter: 1, cdc.OpDelete: 1, cdc.OpUpdateBefore: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := openDB(t)
			exec(t, db, changeLog)
			exec(t, db, logRows...)
			ddl := `CREATE TABLE t (id INT NOT NULL PRIMARY KEY, name TEXT, amount DECIMAL_TEXT(10,2))`
			if tc.mode == plan.ModeAppend {
				ddl = `CREATE TABLE t (id INT, name TEXT, amount DECIMAL_TEXT(10,2))`
			}
			exec(t, db, ddl, `INSERT INTO t VALUES (1, 'Alice', '1000.00'), (2, 'Bob', '2000.00'), (3, 'Carol', '500.00')`)
			target, _, err := New(db, nil).Target(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			a, err := CompileApply(stage("t", tc.mode, tc.keys, logSchema), target, relation)
			if err != nil {
				t.Fatal(err)
			}
			written, err := a.Exec(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, dump(t, db, "t", "id, rowid"), tc.want)
			if len(written) != len(tc.written) {
				t.Errorf("written = %v, want %v", written, tc.written)
			}
			for op, n := range tc.written {
				if written[op] != n {
					t.Errorf("written = %v, want %v", written, tc.written)
				}
			}
		})
	}
}

func TestCompileApplyValueErrorInSQL(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	exec(t, db, changeLog, `INSERT INTO log VALUES ('INSERT', 1, 8, 'Big', '123456789.0000')`,
		`CREATE TABLE t (id INT NOT NULL PRIMARY KEY, name TEXT, amount DECIMAL_TEXT(10,2))`)
	target, _, _ := New(db, nil).Target(ctx, "t")
	a, err := CompileApply(stage("t", plan.ModeMerge, []string{"id"}, logSchema), target, relation)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Exec(ctx, db)
	var ve *cdc.ValueError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a *cdc.ValueError", err)
	}
	for _, w := range []string{"id=8", `column "amount"`, "DECIMAL(10,2)"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

func TestStepsListExecutedSQL(t *testing.T) {
	// Every statement Commit runs is in Steps, in order.
	db := openDB(t)
	sp, err := New(db, nil).PrepareSink(context.Background(), stage("t", plan.ModeAppend, nil, orders))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sp.Steps() {
		got = append(got, strings.Fields(s.SQL + " ")[0])
	}
	want := "BEGIN CREATE CREATE INSERT INSERT COMMIT"
	if strings.Join(got, " ") != want {
		t.Errorf("steps %q, want %q", got, want)
	}
}

func TestAttachApplyRelation(t *testing.T) {
	// The pushdown path: the caller owns the transaction, the sink creates
	// the target, applies the relation and stores the checkpoint in it.
	ctx := context.Background()
	db := openDB(t)
	exec(t, db, changeLog)
	exec(t, db, logRows...)
	p, err := New(db, nil).Prepare(ctx, stage("t", plan.ModeMerge, []string{"id"}, logSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, commit := range []bool{false, true} {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		tx, err := p.Attach(ctx, conn, "job1")
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.ApplyRelation(ctx, relation); err != nil {
			t.Fatal(err)
		}
		stats, err := tx.Commit(ctx, cpAt("5"))
		if err != nil {
			t.Fatal(err)
		}
		if stats.Written[cdc.OpInsert] != 1 || stats.Written[cdc.OpUpdateAfter] != 1 || stats.Written[cdc.OpDelete] != 1 {
			t.Errorf("written = %v", stats.Written)
		}
		end := "ROLLBACK"
		if commit {
			end = "COMMIT"
		}
		if _, err := conn.ExecContext(ctx, end); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		if !commit {
			if ok, _ := tableExists(ctx, db, "t"); ok || storedOffset(t, db, "job1") != "" {
				t.Fatal("caller's ROLLBACK left the target or the checkpoint")
			}
		}
	}
	// Created from the projected schema: BIGINT id, DECIMAL(12,4) amount.
	checkRows(t, dump(t, db, "t", "id"), []string{"1|Alice|1500.0050", "4|Dave|3000.0049"})
	if off := storedOffset(t, db, "job1"); off != "5" {
		t.Errorf("checkpoint = %q", off)
	}
}
