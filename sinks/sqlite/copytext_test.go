package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// TestCopyFromChecks: a copy into a target whose only CHECKs are sluice's
// DECIMAL checks skips them (its reader checked the text), one into a
// target with a CHECK of its own keeps every CHECK, and either way the
// connection is back to enforcing CHECKs afterwards, committed or failed
// (one pooled connection: the next statement runs on it).
func TestCopyFromChecks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		create  string // the target, "" for sluice's
		text    string // COPY text of id, name, amount, status
		skip    bool   // the copy skips the CHECKs
		wantErr error  // nil: the copy succeeds
		want    []string
	}{
		{name: "sluice's target", text: "1\ta\\tb\t-12.50\t\\N\n2\t\\N\t0.00\tok\n", skip: true,
			want: []string{"1|a\tb|-12.50|NULL", "2|NULL|0.00|ok"}},
		{name: "a NaN goes through sluice", create: sqlitex.CreateTableSQL("t", orders, false), text: "1\ta\tNaN\tok\n", skip: true, wantErr: ErrCopyValue},
		{name: "a CHECK of the target's own", create: `CREATE TABLE t (id INT, name TEXT, amount DECIMAL_TEXT(10,2) ` +
			`CONSTRAINT "amount is a number" CHECK ("amount" IS NULL OR ("amount" NOT GLOB '*[^0-9.eE+-]*' AND "amount" GLOB '*[0-9]*') OR "amount" IN ('NaN', 'Infinity', '-Infinity')), ` +
			`status TEXT CHECK (status <> 'bad'))`,
			text: "1\ta\t1.00\tbad\n", wantErr: errAny},
		{name: "a CHECK of the target's own, kept", create: `CREATE TABLE t (id INT CHECK (id < 10), name TEXT, amount DECIMAL_TEXT(10,2), status TEXT)`,
			text: "3\ta\t1.00\tok\n", want: []string{"3|a|1.00|ok"}},
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
			ok, why, err := tx.AcceptCopy(ctx, "postgres", []string{"integer", "text", "numeric(10,2)", "text"}, false)
			if err != nil || !ok {
				t.Fatalf("AcceptCopy = %t, %q, %v", ok, why, err)
			}
			if tx.copy.skipChecks != tc.skip {
				t.Errorf("skip CHECKs %t, want %t", tx.copy.skipChecks, tc.skip)
			}
			n, err := tx.CopyFrom(ctx, strings.NewReader(tc.text))
			switch {
			case tc.wantErr == errAny && err == nil, tc.wantErr == nil && err != nil,
				tc.wantErr != nil && tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Fatalf("CopyFrom = %d, %v; want error %v", n, err, tc.wantErr)
			}
			if err != nil {
				tx.Rollback(ctx)
			} else if _, err := tx.Commit(ctx, runner.Checkpoint{Stream: "s", StreamID: "i", Offset: cdc.SingleOffset("1")}); err != nil {
				t.Fatal(err)
			}
			var ignored int
			if err := db.QueryRow("PRAGMA ignore_check_constraints").Scan(&ignored); err != nil || ignored != 0 {
				t.Fatalf("after the copy the connection ignores CHECKs: %d (%v)", ignored, err)
			}
			bad := "INSERT INTO t (id, amount) VALUES (5, 'abc')"
			if strings.Contains(tc.name, "own") {
				bad = "INSERT INTO t (id, status) VALUES (50, 'bad')"
			}
			if _, err := db.Exec(bad); err == nil || !strings.Contains(err.Error(), "CHECK") {
				t.Errorf("%s after the copy: %v, want a CHECK failure", bad, err)
			}
			if tc.want != nil {
				checkRows(t, dump(t, db, "t", "id"), tc.want)
			}
		})
	}
}

// errAny stands for any error in a table of cases.
var errAny = errors.New("any error")

// TestCopyFromManyRows: a copy of more rows than one INSERT takes and more
// text than the reader's buffer holds stores every value as its line
// had it (the texts share the bytes of lines kept until their INSERT).
func TestCopyFromManyRows(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	sp, err := New(db, nil).PrepareSink(ctx, stage("t", plan.ModeAppend, nil, orders))
	if err != nil {
		t.Fatal(err)
	}
	stx, err := sp.Begin(ctx, "job1")
	if err != nil {
		t.Fatal(err)
	}
	tx := stx.(*Tx)
	if ok, why, err := tx.AcceptCopy(ctx, "postgres", []string{"integer", "text", "numeric(10,2)", "text"}, false); err != nil || !ok {
		t.Fatalf("AcceptCopy = %t, %q, %v", ok, why, err)
	}
	const n = 3000 // about 12 INSERTs, 1.2 MB of text
	var text strings.Builder
	want := make([]string, n)
	for i := range n {
		name := fmt.Sprintf("name %d %s", i, strings.Repeat(string(rune('a'+i%26)), 400))
		amount := fmt.Sprintf("%d.%02d", i, i%100)
		status := fmt.Sprintf("s%d", i*7)
		fmt.Fprintf(&text, "%d\t%s\t%s\t%s\n", i, name, amount, status)
		want[i] = fmt.Sprintf("%d|%s|%s|%s", i, name, amount, status)
	}
	if got, err := tx.CopyFrom(ctx, strings.NewReader(text.String())); err != nil || got != n {
		t.Fatalf("CopyFrom = %d, %v; want %d rows", got, err, n)
	}
	if _, err := tx.Commit(ctx, runner.Checkpoint{Stream: "s", StreamID: "i", Offset: cdc.SingleOffset("1")}); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT id || '|' || name || '|' || amount || '|' || status FROM t ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for ; rows.Next(); i++ {
		var got string
		if err := rows.Scan(&got); err != nil {
			t.Fatal(err)
		}
		if i < n && got != want[i] {
			t.Fatalf("row %d = %.60q…, want %.60q…", i, got, want[i])
		}
	}
	if err := rows.Err(); err != nil || i != n {
		t.Fatalf("%d rows (%v), want %d", i, err, n)
	}
}
