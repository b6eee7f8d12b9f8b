package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// TestInsertRelationChecked: an INSERT … SELECT whose DECIMAL column is
// declared checked skips the target's CHECKs when they are only sluice's
// DECIMAL checks on checked columns — a text that is no number, which the
// CHECK refuses, then goes in, showing the CHECK did not run — and keeps
// them otherwise (no column checked, a CHECK of the target's own, the
// check of a column not declared checked); either way the connection
// enforces CHECKs again afterwards (one pooled connection).
func TestInsertRelationChecked(t *testing.T) {
	const rel = `(SELECT 1 AS "id", 'a' AS "name", 'abc' AS "amount", 'ok' AS "status")`
	for _, tc := range []struct {
		name    string
		create  string // the target, "" for sluice's
		checked []string
		skip    bool // the INSERT skips the CHECKs (and takes 'abc')
	}{
		{name: "sluice's target, amount checked", checked: []string{"amount"}, skip: true},
		{name: "sluice's target, nothing checked", create: sqlitex.CreateTableSQL("t", orders, false)},
		{name: "sluice's target, another column named", checked: []string{"status"}, create: sqlitex.CreateTableSQL("t", orders, false)},
		{name: "a CHECK of the target's own", checked: []string{"amount"}, create: `CREATE TABLE t (id INT, name TEXT, amount DECIMAL_TEXT(10,2) ` +
			`CONSTRAINT "amount is a number" CHECK ("amount" IS NULL OR ("amount" NOT GLOB '*[^0-9.eE+-]*' AND "amount" GLOB '*[0-9]*') OR "amount" IN ('NaN', 'Infinity', '-Infinity')), ` +
			`status TEXT CHECK (status <> 'bad'))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := openDB(t)
			db.SetMaxOpenConns(1)
			if tc.create != "" {
				exec(t, db, tc.create)
			}
			sp, err := New(db, nil).PrepareSink(ctx, stage("t", plan.ModeAppend, nil, orders))
			if err != nil {
				t.Fatal(err)
			}
			stx, err := sp.Begin(ctx, "job1")
			if err != nil {
				t.Fatal(err)
			}
			tx := stx.(*Tx)
			n, err := tx.InsertRelationChecked(ctx, rel, tc.checked)
			if tc.skip {
				if err != nil || n != 1 {
					t.Fatalf("InsertRelationChecked = %d, %v; want the row in, the CHECK skipped", n, err)
				}
				if _, err := tx.Commit(ctx, runner.Checkpoint{Stream: "s", StreamID: "i", Offset: cdc.SingleOffset("1")}); err != nil {
					t.Fatal(err)
				}
				checkRows(t, dump(t, db, "t", "id"), []string{"1|a|abc|ok"})
			} else {
				if err == nil || !strings.Contains(err.Error(), "CHECK") {
					t.Fatalf("InsertRelationChecked = %d, %v; want a CHECK failure", n, err)
				}
				tx.Rollback(ctx)
			}
			var ignored int
			if err := db.QueryRow("PRAGMA ignore_check_constraints").Scan(&ignored); err != nil || ignored != 0 {
				t.Fatalf("after the insert the connection ignores CHECKs: %d (%v)", ignored, err)
			}
			if _, err := db.Exec("INSERT INTO t (id, amount) VALUES (5, 'xyz')"); err == nil || !strings.Contains(err.Error(), "CHECK") {
				t.Errorf("a bad amount after the insert: %v, want a CHECK failure", err)
			}
		})
	}
}
