package tablestore

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"
	"github.com/shopspring/decimal"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
)

func mustDecimal(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// TestSeedFlow follows the seed (ListStream → DescribeStream →
// GetShardIterator → GetStreamRecord) through the source: the stream found
// by ListStream, its schema, and every record mapped in order.
func TestSeedFlow(t *testing.T) {
	w := newWorld(t, 1)
	w.put(1, map[string]any{"name": "apple", "qty": int64(3), "price": "1.25", "paid": false, "score": 0.5})
	w.clk.Advance(time.Millisecond)
	w.put(2, map[string]any{"name": "pear", "qty": int64(1)})
	w.update(1, map[string]any{"paid": true, "qty": int64(4)})
	w.clk.Advance(time.Millisecond)
	w.delete(2)

	s := w.open()
	info := w.info(s)
	ls, err := w.c.ListStream(&tablestore.ListStreamRequest{TableName: &w.table})
	if err != nil {
		t.Fatal(err)
	}
	if info.ID != string(*ls.Streams[0].Id) || info.Table != table || info.Mode != ModeChangeFeed || !info.Offset.IsZero() {
		t.Errorf("info = %+v, want stream %s", info, *ls.Streams[0].Id)
	}
	wantSchema := cdc.Schema{Columns: []cdc.Column{{Name: "id", Type: cdc.TypeBigInt, NotNull: true},
		{Name: "name", Type: cdc.TypeString}, {Name: "qty", Type: cdc.TypeBigInt}, {Name: "price", Type: cdc.Decimal(10, 2)},
		{Name: "paid", Type: cdc.TypeBoolean}, {Name: "score", Type: cdc.TypeDouble}}, Key: []string{"id"}}
	if !slices.Equal(info.TableSchema.Columns, wantSchema.Columns) || !slices.Equal(info.TableSchema.Key, wantSchema.Key) {
		t.Errorf("schema = %+v\nwant %+v", info.TableSchema, wantSchema)
	}

	got, rp := readAll(t, s, info, cdc.Offset{}, 10)
	want := make([]string, len(w.ops))
	for i, o := range w.ops {
		want[i] = render(expected(o))
	}
	var gotR []string
	for _, c := range got {
		gotR = append(gotR, render(c))
	}
	if !slices.Equal(gotR, want) {
		t.Errorf("changes:\n got %q\nwant %q", gotR, want)
	}
	for _, op := range []string{"ListStream", "DescribeStream", "GetShardIterator", "GetStreamRecord"} {
		if w.srv.Requests(op) == 0 {
			t.Errorf("no %s request", op)
		}
	}
	// Nothing new: the next read from the read point is empty and keeps it.
	again, rp2 := readAll(t, s, info, rp, 10)
	if len(again) != 0 || !rp2.Equal(rp) {
		t.Errorf("second read: %d changes, read point %v (was %v)", len(again), rp2, rp)
	}
	if err := s.Advance(context.Background(), info, cdc.Offset{}, rp); err != nil {
		t.Errorf("Advance: %v", err)
	}
}

// TestRecordShape checks the row shapes: a PutRow is a full row (absent
// columns NULL), an UpdateRow a partial row with deleted columns present
// and NULL, a DeleteRow the key only; undeclared columns are ignored; the
// values have their canonical Go types.
func TestRecordShape(t *testing.T) {
	w := newWorld(t, 1)
	w.put(7, map[string]any{"name": "x", "price": "10.50", "extra": "ignored"})
	w.update(7, map[string]any{"qty": int64(2), "other": int64(1)}, "name", "score")
	w.delete(7)
	// A DeleteOneVersion cell is NULL too.
	upd := &tablestore.UpdateRowChange{TableName: table, PrimaryKey: pkOf(8)}
	upd.DeleteColumnWithTimestamp("price", w.clk.Now().UnixMilli())
	upd.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	if _, err := w.c.UpdateRow(&tablestore.UpdateRowRequest{UpdateRowChange: upd}); err != nil {
		t.Fatal(err)
	}

	s := w.open()
	got, _ := readAll(t, s, w.info(s), cdc.Offset{}, 100)
	if len(got) != 4 {
		t.Fatalf("got %d changes", len(got))
	}
	put, upd1, del, upd2 := got[0], got[1], got[2], got[3]
	if put.Op != cdc.OpInsert || put.Present != nil {
		t.Errorf("put: op %v present %v", put.Op, put.Present)
	}
	if d, ok := put.Row[3].(decimal.Decimal); !ok || d.StringFixed(2) != "10.50" {
		t.Errorf("put price = %#v", put.Row[3])
	}
	if put.Row[0] != int64(7) || put.Row[1] != "x" || put.Row[2] != nil || put.Row[4] != nil || put.Row[5] != nil {
		t.Errorf("put row = %v", put.Row)
	}
	if upd1.Op != cdc.OpUpdateAfter || !slices.Equal(upd1.Present, []bool{true, true, true, false, false, true}) {
		t.Errorf("update: op %v present %v", upd1.Op, upd1.Present)
	}
	if upd1.Row[1] != nil || upd1.Row[2] != int64(2) || upd1.Row[5] != nil {
		t.Errorf("update row = %v", upd1.Row)
	}
	if del.Op != cdc.OpDelete || !slices.Equal(del.Present, []bool{true, false, false, false, false, false}) || del.Row[0] != int64(7) {
		t.Errorf("delete = %+v", del)
	}
	if !slices.Equal(upd2.Present, []bool{true, false, false, true, false, false}) || upd2.Row[3] != nil {
		t.Errorf("delete-one-version update = %+v", upd2)
	}
	for _, c := range got {
		if c.CommitTime != t0 || c.CommitTime.Location() != time.UTC {
			t.Errorf("commit time %v, want %v UTC", c.CommitTime, t0)
		}
	}
	if !(got[0].CommitVersion < got[1].CommitVersion && got[1].CommitVersion < got[2].CommitVersion) {
		t.Errorf("versions not increasing: %d %d %d", got[0].CommitVersion, got[1].CommitVersion, got[2].CommitVersion)
	}
	if got[0].CommitVersion != t0.UnixMicro()*1000 {
		t.Errorf("first version %d, want %d", got[0].CommitVersion, t0.UnixMicro()*1000)
	}
}

// interleave writes n ops over keys 1..keys in w, mixing puts, updates,
// deletes, single writes and batches, advancing the clock now and then.
func interleave(w *world, n, keys int, seed int) {
	exists := map[int64]bool{}
	i := 0
	for i < n {
		if (i+seed)%7 == 0 {
			w.clk.Advance(time.Millisecond)
		}
		if (i+seed)%5 == 0 { // a batch of distinct keys
			var ops []op
			for k := 0; k < 6 && i < n; k++ {
				id := int64((i*7+k*13+seed)%keys + 1)
				if slices.ContainsFunc(ops, func(o op) bool { return o.id == id }) {
					continue
				}
				ops = append(ops, nextOp(exists, id, i))
				i++
			}
			w.batch(ops)
			continue
		}
		id := int64((i*31+seed)%keys + 1)
		o := nextOp(exists, id, i)
		switch o.kind {
		case cdc.OpInsert:
			w.put(id, o.put)
		case cdc.OpUpdateAfter:
			w.update(id, o.put, o.del...)
		case cdc.OpDelete:
			w.delete(id)
		}
		i++
	}
}

func nextOp(exists map[int64]bool, id int64, i int) op {
	o := op{id: id}
	switch {
	case !exists[id]:
		o.kind, o.put = cdc.OpInsert, map[string]any{"name": "n" + itoa(i), "qty": int64(i), "price": itoa(i) + ".25"}
		exists[id] = true
	case i%4 == 0:
		o.kind = cdc.OpDelete
		exists[id] = false
	case i%4 == 1:
		o.kind, o.put, o.del = cdc.OpUpdateAfter, map[string]any{"qty": int64(-i)}, []string{"name"}
	default:
		o.kind, o.put = cdc.OpUpdateAfter, map[string]any{"score": float64(i) / 4, "paid": i%2 == 0}
	}
	return o
}

func itoa(i int) string { return decimal.NewFromInt(int64(i)).String() }

// TestManyShards: interleaved writes to many keys over 4 shards are each
// returned exactly once, in order per key.
func TestManyShards(t *testing.T) {
	w := newWorld(t, 4)
	interleave(w, 1500, 150, 0)
	used := map[string]bool{}
	for _, o := range w.ops {
		used[o.shard] = true
	}
	if len(used) != 4 {
		t.Fatalf("writes used %d shards, want 4", len(used))
	}
	s := w.open(WithPageSize(50))
	got, rp := readAll(t, s, w.info(s), cdc.Offset{}, 37)
	checkExactlyOnce(t, w, got)
	if len(rp.Positions) != 4 {
		t.Errorf("read point has %d shards: %v", len(rp.Positions), rp)
	}
}

// shardOrder checks that in got (in read order) every child shard's first
// change comes after the last change of each of its parents.
func shardOrder(t *testing.T, w *world, got []cdc.Change) {
	t.Helper()
	shards, err := w.srv.Shards(w.table)
	if err != nil {
		t.Fatal(err)
	}
	// the shard of every change: the n-th change of a key is its n-th op.
	perKey := map[int64][]string{}
	for _, o := range w.ops {
		perKey[o.id] = append(perKey[o.id], o.shard)
	}
	first, last := map[string]int{}, map[string]int{}
	seen := map[int64]int{}
	for i, c := range got {
		id := c.Row[0].(int64)
		sh := perKey[id][seen[id]]
		seen[id]++
		if _, ok := first[sh]; !ok {
			first[sh] = i
		}
		last[sh] = i
	}
	for _, sh := range shards {
		f, ok := first[sh.ID]
		if !ok {
			continue
		}
		for _, p := range []string{sh.ParentID, sh.ParentSiblingID} {
			if l, ok := last[p]; p != "" && ok && l > f {
				t.Errorf("shard %s read (change %d) before its parent %s was done (change %d)", sh.ID, f, p, l)
			}
		}
	}
}

// TestSplitMergeWithinRead: a split and a merge that happened before the
// read; children are read after their parents within the same read.
func TestSplitMergeWithinRead(t *testing.T) {
	w := newWorld(t, 2)
	interleave(w, 300, 60, 1)
	l, r, err := w.srv.SplitShard(table, "shard-0001")
	if err != nil {
		t.Fatal(err)
	}
	interleave(w, 300, 60, 2)
	if _, err := w.srv.MergeShards(table, r, "shard-0002"); err != nil {
		t.Fatal(err)
	}
	interleave(w, 300, 60, 3)
	_ = l
	s := w.open(WithPageSize(40))
	got, rp := readAll(t, s, w.info(s), cdc.Offset{}, 25)
	checkExactlyOnce(t, w, got)
	shardOrder(t, w, got)
	if n := w.srv.Requests("DescribeStream"); n < 2 {
		t.Errorf("DescribeStream called %d times; want a re-describe after a shard ended", n)
	}
	for _, id := range []string{"shard-0001", "shard-0002", r} {
		p, _ := DecodePosition(rp.Positions[id])
		if !p.Done {
			t.Errorf("parent %s not done in read point: %v", id, rp.Positions[id])
		}
	}
}

// TestSplitMergeDuringRun: the stream splits and merges while a reader is
// open and between reads; every change arrives once, in order per key, and
// children after parents.
func TestSplitMergeDuringRun(t *testing.T) {
	w := newWorld(t, 2)
	interleave(w, 200, 50, 1)
	s := w.open(WithPageSize(30), WithDescribeInterval(time.Hour))
	info := w.info(s)
	ctx := context.Background()
	var got []cdc.Change

	rd, err := s.Changes(ctx, info, cdc.Offset{}, runner.ReadOptions{BatchSize: 20})
	if err != nil {
		t.Fatal(err)
	}
	b, err := rd.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, b...)
	// Split while the reader is open (same clock instant: within the read's cutoff).
	if _, _, err := w.srv.SplitShard(table, "shard-0001"); err != nil {
		t.Fatal(err)
	}
	interleave(w, 150, 50, 4)
	for {
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b...)
	}
	rp := rd.ReadPoint()
	rd.Close()

	// Between runs: merge two open shards, write more, later split again.
	shards, _ := w.srv.Shards(table)
	var open []string
	for _, sh := range shards {
		if !sh.Closed {
			open = append(open, sh.ID)
		}
	}
	w.clk.Advance(time.Second)
	if _, err := w.srv.MergeShards(table, open[0], open[1]); err != nil {
		// shard-0002 (upper half) and shard-0004 (upper child of 0001) are not adjacent; try the others
		if _, err := w.srv.MergeShards(table, open[0], open[2]); err != nil {
			t.Fatalf("merge: %v", err)
		}
	}
	interleave(w, 200, 50, 5)
	more, rp := readAll(t, s, info, rp, 17)
	got = append(got, more...)
	w.clk.Advance(time.Second)
	shards, _ = w.srv.Shards(table)
	if _, _, err := w.srv.SplitShard(table, shards[len(shards)-1].ID); err != nil {
		t.Fatal(err)
	}
	interleave(w, 200, 50, 6)
	more, _ = readAll(t, s, info, rp, 17)
	got = append(got, more...)

	checkExactlyOnce(t, w, got)
	shardOrder(t, w, got)
}

// TestRestartEveryBoundary reads in batches of one, persisting the read
// point after each batch and reopening the source, across a split and a
// merge; the union equals one uninterrupted read.
func TestRestartEveryBoundary(t *testing.T) {
	w := newWorld(t, 3)
	interleave(w, 60, 20, 1)
	if _, _, err := w.srv.SplitShard(table, "shard-0002"); err != nil {
		t.Fatal(err)
	}
	interleave(w, 40, 20, 2)
	if _, err := w.srv.MergeShards(table, "shard-0001", "shard-0004"); err != nil {
		t.Fatal(err)
	}
	interleave(w, 40, 20, 3)

	whole, _ := readAll(t, w.open(WithPageSize(7)), w.info(w.open()), cdc.Offset{}, 1000)
	checkExactlyOnce(t, w, whole)

	ctx := context.Background()
	var got []cdc.Change
	stored := "" // the checkpoint as a sink would store it
	for i := 0; ; i++ {
		if i > 2*len(w.ops) {
			t.Fatal("too many restarts")
		}
		s := w.open(WithPageSize(7))
		from, err := cdc.DecodeOffset(stored)
		if err != nil {
			t.Fatal(err)
		}
		rd, err := s.Changes(ctx, w.info(s), from, runner.ReadOptions{BatchSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			rd.Close()
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b...)
		stored = rd.ReadPoint().Encode()
		rd.Close()
		_ = s.Close()
	}
	if len(got) != len(whole) {
		t.Fatalf("restarted read returned %d changes, uninterrupted %d", len(got), len(whole))
	}
	checkExactlyOnce(t, w, got)
	type key struct {
		v int64
		r string
	}
	ws, gs := make([]key, len(whole)), make([]key, len(got))
	for i := range whole {
		ws[i] = key{whole[i].CommitVersion, render(whole[i])}
		gs[i] = key{got[i].CommitVersion, render(got[i])}
	}
	cmp := func(a, b key) int {
		if a.v != b.v {
			return int(a.v - b.v)
		}
		return strings.Compare(a.r, b.r)
	}
	slices.SortFunc(ws, cmp)
	slices.SortFunc(gs, cmp)
	if !slices.Equal(ws, gs) {
		t.Errorf("restarted read differs from the uninterrupted one (versions or rows)")
	}
}

// TestCutoff: a read returns the records committed up to the moment it
// started; later ones come with the next read.
func TestCutoff(t *testing.T) {
	w := newWorld(t, 2)
	interleave(w, 50, 10, 1)
	n := len(w.ops)
	s := w.open()
	info := w.info(s)
	rd, err := s.Changes(context.Background(), info, cdc.Offset{}, runner.ReadOptions{BatchSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	w.clk.Advance(time.Second) // writes after the read started
	interleave(w, 50, 10, 2)
	var got []cdc.Change
	for {
		b, err := rd.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b...)
	}
	if len(got) != n {
		t.Fatalf("first read returned %d changes, want the %d committed before it", len(got), n)
	}
	more, _ := readAll(t, s, info, rd.ReadPoint(), 5)
	checkExactlyOnce(t, w, append(got, more...))
}

// TestTrimmed: a checkpoint behind the retention fails with ErrDataLost
// (never skipping), while a trim of records already read is recovered.
func TestTrimmed(t *testing.T) {
	w := newWorld(t, 1)
	for i := 0; i < 20; i++ {
		w.put(int64(i), map[string]any{"qty": int64(i)})
		w.clk.Advance(time.Millisecond)
	}
	s := w.open(WithPageSize(10))
	info := w.info(s)
	ctx := context.Background()
	rd, _ := s.Changes(ctx, info, cdc.Offset{}, runner.ReadOptions{BatchSize: 4})
	first, err := rd.Next(ctx)
	if err != nil || len(first) != 4 {
		t.Fatalf("Next: %d, %v", len(first), err)
	}
	cp := rd.ReadPoint() // mid-page: iterator of the page at record 0, last = record 3
	rd.Close()

	// Trimming records 0..2 (all read) is recovered: resume after record 3.
	if _, err := w.srv.TrimShard(table, "shard-0001", 3); err != nil {
		t.Fatal(err)
	}
	rest, _ := readAll(t, w.open(WithPageSize(10)), info, cp, 100)
	checkExactlyOnce(t, w, append(first, rest...))

	// Trimming past the checkpoint loses records 4..: ErrDataLost.
	if _, err := w.srv.TrimShard(table, "shard-0001", 5); err != nil {
		t.Fatal(err)
	}
	rd, err = w.open().Changes(ctx, info, cp, runner.ReadOptions{BatchSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rd.Next(ctx)
	if !errors.Is(err, ErrDataLost) || !strings.Contains(err.Error(), "sluice backfill") || !strings.Contains(err.Error(), "OTSTrimmedDataAccess") {
		t.Fatalf("err = %v, want ErrDataLost with a backfill hint", err)
	}
	// A checkpoint whose shard expired altogether is data loss too.
	bogus := cdc.Offset{}.With("shard-9999", Position{Iterator: "x", Last: Sequence{Timestamp: 1}}.Encode())
	if _, err := w.open().Changes(ctx, info, bogus, runner.ReadOptions{}); !errors.Is(err, ErrDataLost) {
		t.Errorf("expired shard: err = %v, want ErrDataLost", err)
	}
	// A done shard that expired is dropped silently.
	gone := cdc.Offset{}.With("shard-9999", Position{Done: true, Version: 5}.Encode())
	if _, rp := readAll(t, w.open(), info, gone, 100); rp.Positions["shard-9999"] != "" {
		t.Errorf("expired done shard kept: %v", rp)
	}
}
