package sqlite

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// TestAppendMultiRow writes batches larger than one multi-row INSERT
// (rowsPerInsert) and of every size around it; every row arrives once,
// in full, with NULLs; a value refused by the target names its row even
// in the middle of a multi-row statement, and nothing is stored.
func TestAppendMultiRow(t *testing.T) {
	per := rowsPerInsert(len(orders.Columns))
	if per < 2 {
		t.Fatalf("rowsPerInsert(%d) = %d, want several rows per statement", len(orders.Columns), per)
	}
	rows := func(from, n int) []cdc.Change {
		var b []cdc.Change
		for i := from; i < from+n; i++ {
			var status any = fmt.Sprintf("s%d", i)
			if i%5 == 0 {
				status = nil
			}
			b = append(b, ch(cdc.OpInsert, 1, int64(i), fmt.Sprintf("n'%d", i), dec(fmt.Sprintf("%d.5", i)), status))
		}
		return b
	}
	want := func(n int) []string {
		var w []string
		for i := 0; i < n; i++ {
			status := fmt.Sprintf("s%d", i)
			if i%5 == 0 {
				status = "NULL"
			}
			w = append(w, fmt.Sprintf("%d|n'%d|%d.50|%s", i, i, i, status))
		}
		return w
	}
	for _, n := range []int{1, per - 1, per, per + 1, 2*per + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			db := openDB(t)
			// two Write calls: a batch's tail and the next batch's start
			st := stage("t", plan.ModeAppend, nil, orders)
			stats, err := runBatches(t, db, st, cpAt("1"), rows(0, n/2), rows(n/2, n-n/2))
			if err != nil {
				t.Fatal(err)
			}
			if stats.Written[cdc.OpInsert] != int64(n) {
				t.Errorf("written = %v, want %d inserts", stats.Written, n)
			}
			checkRows(t, dump(t, db, "t", "id"), want(n))
		})
	}
	t.Run("refused value names its row", func(t *testing.T) {
		db := openDB(t)
		exec(t, db, `CREATE TABLE t (id INT, name TEXT, amount DECIMAL_TEXT(10,2), status TEXT NOT NULL)`)
		b := rows(1, 2*per)
		bad := per + per/2 // inside the second statement; its id is bad+1
		b[bad].Row[3] = nil
		for i := range b {
			if b[i].Row[3] == nil && i != bad {
				b[i].Row[3] = "ok"
			}
		}
		_, err := runBatches(t, db, stage("t", plan.ModeAppend, []string{"id"}, orders), cpAt("1"), b)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("id=%d", bad+1)) || !strings.Contains(err.Error(), "NOT NULL") {
			t.Fatalf("err = %v, want a NOT NULL error naming id=%d", err, bad+1)
		}
		if got := dump(t, db, "t", "id"); len(got) != 0 {
			t.Errorf("target holds %d rows after the failed run, want none", len(got))
		}
	})
}
