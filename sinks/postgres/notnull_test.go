package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// TestNotNullNamesKey: a merge that writes NULL into a NOT NULL column of
// the target fails naming the row's key and the column, and stores
// nothing; a NULL that a later change of the same key replaces or deletes
// is not blamed, and a partial row that does not carry the column writes
// nothing there. The expected key of each case is the one row whose last
// change leaves NULL in "user".
func TestNotNullNamesKey(t *testing.T) {
	for _, tc := range []struct {
		name    string
		batches [][]cdc.Change
		wantKey string // "" = success
		rows    []string
	}{
		{"a NULL insert", [][]cdc.Change{{
			ch(cdc.OpInsert, 1, int64(1), "a", dec("1")),
			ch(cdc.OpInsert, 2, int64(2), nil, dec("2")),
			ch(cdc.OpInsert, 3, int64(3), "c", dec("3")),
		}}, "id=2", nil},
		{"replaced later, the next one blamed", [][]cdc.Change{{
			ch(cdc.OpInsert, 1, int64(1), nil, dec("1")),
			ch(cdc.OpInsert, 2, int64(3), nil, dec("3")),
		}, {
			ch(cdc.OpUpdateBefore, 3, int64(1), nil, dec("1")),
			ch(cdc.OpUpdateAfter, 3, int64(1), "a", dec("1")),
		}}, "id=3", nil},
		{"deleted later: no error", [][]cdc.Change{{
			ch(cdc.OpInsert, 1, int64(4), nil, dec("4")),
			ch(cdc.OpInsert, 2, int64(5), "e", dec("5")),
		}, {
			ch(cdc.OpDelete, 3, int64(4), nil, dec("4")),
		}}, "", []string{"5|e|5", "9|keep|9"}},
		{"a partial row not carrying the column", [][]cdc.Change{{
			partial(cdc.OpUpdateAfter, 1, "101", int64(9), nil, dec("10")),
		}}, "", []string{"9|keep|10"}},
		{"a partial row carrying NULL", [][]cdc.Change{{
			partial(cdc.OpUpdateAfter, 1, "110", int64(9), nil, nil),
		}}, "id=9", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := openPool(t)
			sk := New(p, 150000, nil)
			exec(t, p, `CREATE TABLE tgt (id bigint PRIMARY KEY, "user" text NOT NULL, amount numeric(38,0))`,
				`INSERT INTO tgt VALUES (9, 'keep', 9)`)
			st := stage("tgt", plan.ModeMerge, []string{"id"}, ordersSchema)
			for _, b := range tc.batches {
				for _, c := range b {
					st.PartialRows = st.PartialRows || c.Present != nil
				}
			}
			_, err := runBatches(t, sk, st, cpAt("p1"), tc.batches...)
			if tc.wantKey == "" {
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, "target", dump(t, p, "tgt", "id"), tc.rows)
				return
			}
			var ve *cdc.ValueError
			if !errors.As(err, &ve) || ve.Column != "user" || len(ve.Key) != 1 || ve.Key[0].(interface{ String() string }).String() != tc.wantKey {
				t.Fatalf("want a value error naming %s and column user, got %v", tc.wantKey, err)
			}
			if !strings.Contains(err.Error(), "NOT NULL") || !strings.Contains(err.Error(), "23502") {
				t.Errorf("the error should say NOT NULL and keep PostgreSQL's: %v", err)
			}
			checkRows(t, "nothing stored", dump(t, p, "tgt", "id"), []string{"9|keep|9"})
			if _, ok, _ := ReadCheckpoint(context.Background(), p, "job1"); ok {
				t.Error("checkpoint stored despite the error")
			}
		})
	}
}

// TestPartialRowRefusedWithoutPartialRows: a plan whose source delivers
// full rows only compiles no partial-row statements (so the plan does not
// list them), and a partial row staged anyway is refused rather than
// written with NULL in the columns it does not carry.
func TestPartialRowRefusedWithoutPartialRows(t *testing.T) {
	p := openPool(t)
	sk := New(p, 150000, nil)
	exec(t, p, `CREATE TABLE tgt (id bigint PRIMARY KEY, "user" text, amount numeric(38,0))`, `INSERT INTO tgt VALUES (9, 'keep', 9)`)
	st := stage("tgt", plan.ModeMerge, []string{"id"}, ordersSchema)
	sp, err := sk.Prepare(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range sp.Steps() {
		if strings.Contains(step.What, "partial rows") {
			t.Errorf("a full-rows plan lists a partial-row statement: %s", step.What)
		}
	}
	_, err = runBatches(t, sk, st, cpAt("p1"), []cdc.Change{partial(cdc.OpUpdateAfter, 1, "101", int64(9), nil, dec("10"))})
	if !errors.Is(err, ErrPartialRow) {
		t.Fatalf("want ErrPartialRow, got %v", err)
	}
	checkRows(t, "target unchanged", dump(t, p, "tgt", "id"), []string{"9|keep|9"})
}

// TestAppendNotNullNamesRow: an append whose row writes NULL into a NOT
// NULL column names the row (by its key, or by its change and commit
// version when the target has no key, never by its other values) and the
// column.
func TestAppendNotNullNamesRow(t *testing.T) {
	for _, tc := range []struct{ name, ddl, want string }{
		{"with a key", `CREATE TABLE tgt (id bigint PRIMARY KEY, "user" text NOT NULL, amount numeric(38,0))`, `row with key (id=2), column user`},
		{"without a key", `CREATE TABLE tgt (id bigint, "user" text NOT NULL, amount numeric(38,0))`, `row (INSERT of commit version 2), column user`},
		// a jsonb column is staged as text and cast by an INSERT … SELECT,
		// whose 23502 names no line: the row is named from the staged rows
		{"staged for a cast, with a key", `CREATE TABLE tgt (id bigint PRIMARY KEY, "user" jsonb NOT NULL, amount numeric(38,0))`, `row with key (id=2), column "user"`},
		{"staged for a cast, without a key", `CREATE TABLE tgt (id bigint, "user" jsonb NOT NULL, amount numeric(38,0))`, `row (INSERT of commit version 2): column "user"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := openPool(t)
			sk := New(p, 150000, nil)
			exec(t, p, tc.ddl)
			st := stage("tgt", plan.ModeAppend, nil, ordersSchema)
			if strings.Contains(tc.ddl, "PRIMARY KEY") {
				st.Schema.Key = []string{"id"}
			}
			_, err := runBatches(t, sk, st, cpAt("p1"), []cdc.Change{ch(cdc.OpInsert, 1, int64(1), `"a"`, dec("1")), ch(cdc.OpInsert, 2, int64(2), nil, dec("7"))})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error naming %q, got %v", tc.want, err)
			}
			checkRows(t, "nothing stored", dump(t, p, "tgt", "id"), nil)
		})
	}
}
