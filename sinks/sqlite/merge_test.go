package sqlite

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// The target of the merge cases starts with keys 1 and 3.
var mergeStart = []string{
	`CREATE TABLE t (id INT NOT NULL PRIMARY KEY, name TEXT, amount DECIMAL_TEXT(10,2), status TEXT)`,
	`INSERT INTO t VALUES (1, 'Alice', '1000.00', 'active'), (3, 'Carol', '500.00', 'active')`,
}

func TestMergeCollapse(t *testing.T) {
	const I, UB, UA, D = cdc.OpInsert, cdc.OpUpdateBefore, cdc.OpUpdateAfter, cdc.OpDelete
	tests := []struct {
		name    string
		batches [][]cdc.Change
		want    []string // rows after the merge, by id
		written map[cdc.Op]int64
	}{
		{name: "the seed's changes",
			batches: [][]cdc.Change{{
				ch(UB, 3, int64(1), "Alice", dec("1000"), "active"),
				ch(D, 3, int64(3), "Carol", dec("500"), "active"),
				ch(I, 4, int64(4), "Dave", dec("3000"), "active"),
				ch(UA, 5, int64(1), "Alice", dec("1500"), "active"),
			}},
			want:    []string{"1|Alice|1500.00|active", "4|Dave|3000.00|active"},
			written: map[cdc.Op]int64{I: 1, UA: 1, D: 1}},
		{name: "insert then update in one batch",
			batches: [][]cdc.Change{{ch(I, 4, int64(5), "Eve", dec("1"), "new"), ch(UA, 6, int64(5), "Eve", dec("2"), "paid")}},
			want:    []string{"1|Alice|1000.00|active", "3|Carol|500.00|active", "5|Eve|2.00|paid"},
			written: map[cdc.Op]int64{UA: 1}},
		{name: "update then delete",
			batches: [][]cdc.Change{{ch(UA, 4, int64(1), "Alice", dec("9"), "x"), ch(D, 5, int64(1), "Alice", dec("9"), "x")}},
			want:    []string{"3|Carol|500.00|active"},
			written: map[cdc.Op]int64{D: 1}},
		{name: "delete then re-insert",
			batches: [][]cdc.Change{{ch(D, 4, int64(3), "Carol", dec("500"), "active"), ch(I, 5, int64(3), "Carol2", dec("5"), "back")}},
			want:    []string{"1|Alice|1000.00|active", "3|Carol2|5.00|back"},
			written: map[cdc.Op]int64{I: 1}},
		{name: "delete of a missing key",
			batches: [][]cdc.Change{{ch(D, 4, int64(42), "Nobody", nil, nil)}},
			want:    []string{"1|Alice|1000.00|active", "3|Carol|500.00|active"},
			written: map[cdc.Op]int64{D: 1}},
		{name: "UPDATE_BEFORE alone is ignored",
			batches: [][]cdc.Change{{ch(UB, 4, int64(1), "Stale", dec("0"), "stale")}},
			want:    []string{"1|Alice|1000.00|active", "3|Carol|500.00|active"},
			written: map[cdc.Op]int64{}},
		{name: "UPDATE_BEFORE after UPDATE_AFTER in arrival order is ignored",
			batches: [][]cdc.Change{{ch(UA, 4, int64(1), "New", dec("2"), "a"), ch(UB, 4, int64(1), "Old", dec("1"), "a")}},
			want:    []string{"1|New|2.00|a", "3|Carol|500.00|active"},
			written: map[cdc.Op]int64{UA: 1}},
		{name: "commit order wins over arrival order",
			batches: [][]cdc.Change{{ch(UA, 9, int64(1), "Late", dec("9"), "a"), ch(UA, 7, int64(1), "Early", dec("7"), "a")}},
			want:    []string{"1|Late|9.00|a", "3|Carol|500.00|active"},
			written: map[cdc.Op]int64{UA: 1}},
		{name: "same version: arrival order decides, across batches",
			batches: [][]cdc.Change{{ch(UA, 7, int64(1), "First", dec("1"), "a")}, {ch(UA, 7, int64(1), "Second", dec("2"), "a")}},
			want:    []string{"1|Second|2.00|a", "3|Carol|500.00|active"},
			written: map[cdc.Op]int64{UA: 1}},
		{name: "partial row only sets carried columns",
			batches: [][]cdc.Change{{partial(UA, 4, "1010", int64(1), nil, dec("1234.5"), nil)}},
			want:    []string{"1|Alice|1234.50|active", "3|Carol|500.00|active"},
			written: map[cdc.Op]int64{UA: 1}},
		{name: "partial row carrying NULL sets NULL",
			batches: [][]cdc.Change{{partial(UA, 4, "1001", int64(3), nil, nil, nil)}},
			want:    []string{"1|Alice|1000.00|active", "3|Carol|500.00|NULL"},
			written: map[cdc.Op]int64{UA: 1}},
		{name: "partial row for a new key leaves the rest NULL",
			batches: [][]cdc.Change{{partial(UA, 4, "1100", int64(7), "Gus", nil, nil)}},
			want:    []string{"1|Alice|1000.00|active", "3|Carol|500.00|active", "7|Gus|NULL|NULL"},
			written: map[cdc.Op]int64{UA: 1}},
		{name: "two partial rows of one key both apply",
			batches: [][]cdc.Change{{partial(UA, 4, "1100", int64(1), "Al", nil, nil), partial(UA, 5, "1010", int64(1), nil, dec("2"), nil)}},
			want:    []string{"1|Al|2.00|active", "3|Carol|500.00|active"},
			written: map[cdc.Op]int64{UA: 1}},
		{name: "full row then partial row",
			batches: [][]cdc.Change{{ch(UA, 4, int64(1), "Full", dec("4"), "f"), partial(UA, 5, "1001", int64(1), nil, nil, "p")}},
			want:    []string{"1|Full|4.00|p", "3|Carol|500.00|active"},
			written: map[cdc.Op]int64{UA: 1}},
		{name: "delete then partial row re-creates with only carried columns",
			batches: [][]cdc.Change{{ch(D, 4, int64(1), "Alice", dec("1000"), "active"), partial(UA, 5, "1100", int64(1), "Re", nil, nil)}},
			want:    []string{"1|Re|NULL|NULL", "3|Carol|500.00|active"},
			written: map[cdc.Op]int64{UA: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			exec(t, db, mergeStart...)
			st := stage("t", plan.ModeMerge, []string{"id"}, orders)
			st.PartialRows = hasPartial(tc.batches)
			stats, err := runBatches(t, db, st, cpAt("9"), tc.batches...)
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, dump(t, db, "t", "id"), tc.want)
			for _, op := range []cdc.Op{cdc.OpInsert, cdc.OpUpdateBefore, cdc.OpUpdateAfter, cdc.OpDelete} {
				if stats.Written[op] != tc.written[op] {
					t.Errorf("written = %v, want %v", stats.Written, tc.written)
					break
				}
			}
			if off := storedOffset(t, db, "job1"); off != "9" {
				t.Errorf("checkpoint = %q", off)
			}
		})
	}
}

func TestMergeCompositeKeyAndIdentifiers(t *testing.T) {
	// Reserved words and unicode as table, key and value column names.
	s := cdc.Schema{Columns: []cdc.Column{
		{Name: "order", Type: cdc.TypeBigInt},
		{Name: "user", Type: cdc.TypeString},
		{Name: "金额", Type: cdc.Decimal(38, 10)},
	}}
	db := openDB(t)
	st := stage("select", plan.ModeMerge, []string{"order", "user"}, s)
	_, err := runBatches(t, db, st, cpAt("1"), []cdc.Change{
		ch(cdc.OpInsert, 1, int64(1), "bob", dec("12345678901234567890.1234567891")),
		ch(cdc.OpInsert, 1, int64(1), "amy", dec("0.0000000001")),
		ch(cdc.OpInsert, 2, int64(2), "bob", dec("-1")),
		ch(cdc.OpUpdateAfter, 3, int64(1), "bob", dec("27895614213455431238.0000000009")),
		ch(cdc.OpDelete, 3, int64(2), "bob", nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, dump(t, db, "select", `"order", "user"`), []string{
		"1|amy|0.0000000001",
		"1|bob|27895614213455431238.0000000009",
	})
	// Values decode back exactly.
	var txt string
	if err := db.QueryRow(`SELECT "金额" FROM "select" WHERE "user" = 'bob'`).Scan(&txt); err != nil {
		t.Fatal(err)
	}
	if !dec(txt).Equal(dec("27895614213455431238.0000000009")) {
		t.Errorf("decimal = %s", txt)
	}
}

func TestMergeNeedsUniqueKey(t *testing.T) {
	db := openDB(t)
	exec(t, db, `CREATE TABLE t (id INT, name TEXT, amount DECIMAL_TEXT(10,2), status TEXT)`)
	_, err := New(db, nil).PrepareSink(context.Background(), stage("t", plan.ModeMerge, []string{"id"}, orders))
	if err == nil || !strings.Contains(err.Error(), `needs a PRIMARY KEY or UNIQUE index on (id)`) {
		t.Fatalf("err = %v", err)
	}
	exec(t, db, `CREATE UNIQUE INDEX t_id ON t (id)`)
	if _, err := runBatches(t, db, stage("t", plan.ModeMerge, []string{"id"}, orders), cpAt("1"),
		[]cdc.Change{ch(cdc.OpInsert, 1, int64(1), "a", dec("1"), "s"), ch(cdc.OpUpdateAfter, 2, int64(1), "b", dec("2"), "s")}); err != nil {
		t.Fatal(err)
	}
	checkRows(t, dump(t, db, "t", "id"), []string{"1|b|2.00|s"})
}

func TestCheckpointCommitsWithRows(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	st := stage("t", plan.ModeMerge, []string{"id"}, orders)
	sp, err := New(db, nil).PrepareSink(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	// Rolled back: neither rows nor checkpoint, and the target created in
	// the transaction is gone too.
	tx, err := sp.Begin(ctx, "job1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := tx.Checkpoint(ctx); ok || err != nil {
		t.Fatalf("checkpoint before any run: %v %v", ok, err)
	}
	if err := tx.Write(ctx, []cdc.Change{ch(cdc.OpInsert, 1, int64(1), "a", dec("1"), "s")}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _ := tableExists(ctx, db, "t"); ok {
		t.Error("target exists after rollback")
	}
	if off := storedOffset(t, db, "job1"); off != "" {
		t.Errorf("checkpoint after rollback: %q", off)
	}
	// Committed: both, and the next transaction reads the checkpoint.
	if _, err := runBatches(t, db, st, cpAt("5"), []cdc.Change{ch(cdc.OpInsert, 1, int64(1), "a", dec("1"), "s")}); err != nil {
		t.Fatal(err)
	}
	tx, err = sp.Begin(ctx, "job1")
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	cp, ok, err := tx.Checkpoint(ctx)
	if err != nil || !ok || cp.Offset.String() != "5" || cp.StreamID != "sid-1" || cp.Stream != "orders_stream" || cp.Updated.IsZero() {
		t.Fatalf("checkpoint = %+v %v %v", cp, ok, err)
	}
	checkRows(t, dump(t, db, "t", "id"), []string{"1|a|1.00|s"})
}

func TestTwoRunsSerialize(t *testing.T) {
	// BEGIN IMMEDIATE takes the write lock up front: a second Begin waits
	// until the first commits, then sees its rows and checkpoint.
	ctx := context.Background()
	db := openDB(t)
	st := stage("t", plan.ModeMerge, []string{"id"}, orders)
	sp, err := New(db, nil).PrepareSink(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	tx1, err := sp.Begin(ctx, "job1")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	go func() {
		tx2, err := sp.Begin(ctx, "job1")
		if err != nil {
			done <- "begin: " + err.Error()
			return
		}
		defer tx2.Rollback(ctx)
		cp, ok, err := tx2.Checkpoint(ctx)
		if err != nil || !ok {
			done <- "no checkpoint seen"
			return
		}
		done <- cp.Offset.String()
	}()
	if err := tx1.Write(ctx, []cdc.Change{ch(cdc.OpInsert, 1, int64(1), "a", dec("1"), "s")}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx1.Commit(ctx, cpAt("11")); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got != "11" {
		t.Errorf("second run saw %q, want checkpoint 11", got)
	}
}

// hasPartial reports whether a change of batches is a partial row (the
// plan of such a source sets plan.SinkStage.PartialRows).
func hasPartial(batches [][]cdc.Change) bool {
	for _, b := range batches {
		for _, c := range b {
			if c.Present != nil {
				return true
			}
		}
	}
	return false
}

// TestPartialRowRefusedWithoutPartialRows: a plan whose source delivers
// full rows only compiles no partial-row statements (so the plan does not
// list them), and a partial row staged anyway is refused rather than
// written with NULL in the columns it does not carry.
func TestPartialRowRefusedWithoutPartialRows(t *testing.T) {
	db := openDB(t)
	exec(t, db, mergeStart...)
	st := stage("t", plan.ModeMerge, []string{"id"}, orders)
	sp, err := New(db, nil).PrepareSink(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range sp.Steps() {
		if strings.Contains(step.What, "partial rows") {
			t.Errorf("a full-rows plan lists a partial-row statement: %s", step.What)
		}
	}
	_, err = runBatches(t, db, st, cpAt("9"), []cdc.Change{partial(cdc.OpUpdateAfter, 4, "1010", int64(1), nil, dec("5"), nil)})
	if !errors.Is(err, ErrPartialRow) {
		t.Fatalf("want ErrPartialRow, got %v", err)
	}
	checkRows(t, dump(t, db, "t", "id"), []string{"1|Alice|1000.00|active", "3|Carol|500.00|active"})
}
