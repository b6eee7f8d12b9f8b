package sqlite

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// TestNotNullNamesKey: a merge that writes NULL into a NOT NULL column of
// the target fails naming the row's key and the column, and stores
// nothing; a NULL that a later change of the same key replaces is not
// blamed, and one whose key is deleted later is no error. The expected key
// is the one row whose last change leaves NULL in "name".
func TestNotNullNamesKey(t *testing.T) {
	s := cdc.Schema{Columns: []cdc.Column{{Name: "id", Type: cdc.TypeBigInt}, {Name: "name", Type: cdc.TypeString}}}
	for _, tc := range []struct {
		name    string
		batches [][]cdc.Change
		wantKey string // "" = success
		rows    []string
	}{
		{"a NULL insert", [][]cdc.Change{{ch(cdc.OpInsert, 1, int64(1), "a"), ch(cdc.OpInsert, 2, int64(2), nil)}}, "id=2", nil},
		{"replaced later, the next one blamed", [][]cdc.Change{
			{ch(cdc.OpInsert, 1, int64(1), nil), ch(cdc.OpInsert, 2, int64(3), nil)},
			{ch(cdc.OpUpdateAfter, 3, int64(1), "a")},
		}, "id=3", nil},
		{"deleted later: no error", [][]cdc.Change{
			{ch(cdc.OpInsert, 1, int64(4), nil), ch(cdc.OpInsert, 2, int64(5), "e")},
			{ch(cdc.OpDelete, 3, int64(4), nil)},
		}, "", []string{"5|e", "9|keep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			exec(t, db, `CREATE TABLE tgt (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`, `INSERT INTO tgt VALUES (9, 'keep')`)
			_, err := runBatches(t, db, stage("tgt", plan.ModeMerge, []string{"id"}, s), cpAt("p1"), tc.batches...)
			if tc.wantKey == "" {
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, dump(t, db, "tgt", "id"), tc.rows)
				return
			}
			var ve *cdc.ValueError
			if !errors.As(err, &ve) || ve.Column != "name" || len(ve.Key) != 1 || ve.Key[0].(interface{ String() string }).String() != tc.wantKey {
				t.Fatalf("want a value error naming %s and column name, got %v", tc.wantKey, err)
			}
			if !strings.Contains(err.Error(), "NOT NULL") {
				t.Errorf("the error should say NOT NULL: %v", err)
			}
			checkRows(t, dump(t, db, "tgt", "id"), []string{"9|keep"})
			if got := storedOffset(t, db, "job1"); got != "" {
				t.Errorf("checkpoint stored despite the error: %q", got)
			}
		})
	}
}

// TestAppendNotNullNamesRow: an append whose row writes NULL into a NOT
// NULL column of a target without a key names the row by its change and
// commit version (never by its values: errors are logged and stored) and
// the column.
func TestAppendNotNullNamesRow(t *testing.T) {
	s := cdc.Schema{Columns: []cdc.Column{{Name: "id", Type: cdc.TypeBigInt}, {Name: "name", Type: cdc.TypeString}}}
	db := openDB(t)
	exec(t, db, `CREATE TABLE tgt (id INTEGER, name TEXT NOT NULL)`)
	_, err := runBatches(t, db, stage("tgt", plan.ModeAppend, nil, s), cpAt("p1"), []cdc.Change{ch(cdc.OpInsert, 1, int64(1), "a"), ch(cdc.OpInsert, 2, int64(11), nil)})
	if err == nil || !strings.Contains(err.Error(), "row (INSERT of commit version 2)") || strings.Contains(err.Error(), "id=11") || !strings.Contains(err.Error(), "tgt.name") {
		t.Fatalf("want an error naming the row (INSERT of commit version 2) and tgt.name, not its values, got %v", err)
	}
	checkRows(t, dump(t, db, "tgt", "id"), nil)
}
