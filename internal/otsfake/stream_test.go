package otsfake

import (
	"reflect"
	"testing"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"
)

// wantCol is the expected decoding of one record column.
type wantCol struct {
	name  string
	typ   tablestore.RecordColumnType
	value any    // for RCT_Put
	ts    *int64 // nil for RCT_DeleteAllVersions
}

type wantRecord struct {
	typ  tablestore.ActionType
	id   string
	n    int64
	cols []wantCol
	seq  tablestore.RecordSequenceInfo
}

func i64(v int64) *int64 { return &v }

func checkRecords(t *testing.T, got []*tablestore.StreamRecord, want []wantRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Type != w.typ {
			t.Errorf("record %d: type %v, want %v", i, g.Type, w.typ)
		}
		pks := g.PrimaryKey.PrimaryKeys
		if len(pks) != 2 || pks[0].ColumnName != "id" || pks[0].Value != w.id || pks[1].ColumnName != "n" || pks[1].Value != w.n {
			t.Errorf("record %d: primary key %v, want id=%s n=%d", i, g.PrimaryKey, w.id, w.n)
		}
		if *g.Info != w.seq {
			t.Errorf("record %d: sequence %+v, want %+v", i, *g.Info, w.seq)
		}
		if len(g.Columns) != len(w.cols) {
			t.Fatalf("record %d: %d columns, want %d: %v", i, len(g.Columns), len(w.cols), g.Columns)
		}
		for j, wc := range w.cols {
			gc := g.Columns[j]
			if *gc.Name != wc.name || gc.Type != wc.typ || !reflect.DeepEqual(gc.Value, wc.value) {
				t.Errorf("record %d col %d: got %v, want %+v", i, j, gc, wc)
			}
			if (gc.Timestamp == nil) != (wc.ts == nil) || (wc.ts != nil && *gc.Timestamp != *wc.ts) {
				t.Errorf("record %d col %d %s: timestamp %v, want %v", i, j, wc.name, gc.Timestamp, wc.ts)
			}
		}
	}
}

// TestStreamRecordsRoundTrip follows the consumer flow (ListStream →
// DescribeStream → GetShardIterator → GetStreamRecord) and checks that every
// kind of change decodes, through the real SDK, to the right record type,
// primary key, columns and sequence info.
func TestStreamRecordsRoundTrip(t *testing.T) {
	srv, clk := start(t)
	c := client(srv)
	createTable(t, c, "orders", true)

	// 1: PutRow at t0 with all value types; cells get the clock in ms.
	putRow(t, c, "orders", pk("a", 1), map[string]any{
		"b": true, "bin": []byte{0, 1, 2}, "f": 2.5, "i": int64(-7), "s": "héllo",
	})
	ms0 := t0.UnixMilli()
	us0 := t0.UnixMicro()

	// 2: UpdateRow at the same instant: put with explicit ts, delete one
	// version, delete all versions.
	upd := &tablestore.UpdateRowChange{TableName: "orders", PrimaryKey: pk("a", 1)}
	upd.PutColumnWithTimestamp("s", "bye", 42)
	upd.DeleteColumnWithTimestamp("i", ms0)
	upd.DeleteColumn("f")
	upd.SetCondition(tablestore.RowExistenceExpectation_EXPECT_EXIST)
	if _, err := c.UpdateRow(&tablestore.UpdateRowRequest{UpdateRowChange: upd}); err != nil {
		t.Fatalf("UpdateRow: %v", err)
	}

	// 3: DeleteRow 1 ms later.
	clk.Advance(time.Millisecond)
	del := &tablestore.DeleteRowChange{TableName: "orders", PrimaryKey: pk("a", 1)}
	del.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	if _, err := c.DeleteRow(&tablestore.DeleteRowRequest{DeleteRowChange: del}); err != nil {
		t.Fatalf("DeleteRow: %v", err)
	}

	// 4, 5: BatchWriteRow (put + update) 1 ms later: same timestamp, row
	// index 0 and 1.
	clk.Advance(time.Millisecond)
	batch := &tablestore.BatchWriteRowRequest{}
	p := &tablestore.PutRowChange{TableName: "orders", PrimaryKey: pk("a", 2)}
	p.AddColumn("s", "x")
	p.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	u := &tablestore.UpdateRowChange{TableName: "orders", PrimaryKey: pk("a", 3)}
	u.PutColumn("i", int64(9))
	u.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	batch.AddRowChange(p)
	batch.AddRowChange(u)
	bresp, err := c.BatchWriteRow(batch)
	if err != nil {
		t.Fatalf("BatchWriteRow: %v", err)
	}
	for _, r := range bresp.TableToRowsResult["orders"] {
		if !r.IsSucceed {
			t.Fatalf("BatchWriteRow row %d failed: %+v", r.Index, r.Error)
		}
	}

	sid := streamOf(t, c, "orders")
	desc, err := c.DescribeStream(&tablestore.DescribeStreamRequest{StreamId: sid})
	if err != nil {
		t.Fatalf("DescribeStream: %v", err)
	}
	if *desc.TableName != "orders" || desc.Status != tablestore.SS_Active || desc.ExpirationTime != 24 || len(desc.Shards) != 1 {
		t.Fatalf("DescribeStream = %+v", desc)
	}
	if desc.Shards[0].FatherShard != nil || desc.Shards[0].MotherShard != nil {
		t.Errorf("initial shard has parents: %+v", desc.Shards[0])
	}
	recs, ended := drain(t, c, sid, desc.Shards[0].SelfShard, 2)
	if ended {
		t.Error("open shard reported as ended")
	}
	ms2 := ms0 + 2
	us1, us2 := us0+1000, us0+2000
	checkRecords(t, recs, []wantRecord{
		{typ: tablestore.AT_Put, id: "a", n: 1, seq: tablestore.RecordSequenceInfo{Timestamp: us0}, cols: []wantCol{
			{"b", tablestore.RCT_Put, true, &ms0},
			{"bin", tablestore.RCT_Put, []byte{0, 1, 2}, &ms0},
			{"f", tablestore.RCT_Put, 2.5, &ms0},
			{"i", tablestore.RCT_Put, int64(-7), &ms0},
			{"s", tablestore.RCT_Put, "héllo", &ms0},
		}},
		{typ: tablestore.AT_Update, id: "a", n: 1, seq: tablestore.RecordSequenceInfo{Timestamp: us0, RowIndex: 1}, cols: []wantCol{
			{"s", tablestore.RCT_Put, "bye", i64(42)},
			{"i", tablestore.RCT_DeleteOneVersion, nil, &ms0},
			{"f", tablestore.RCT_DeleteAllVersions, nil, nil},
		}},
		{typ: tablestore.AT_Delete, id: "a", n: 1, seq: tablestore.RecordSequenceInfo{Timestamp: us1}},
		{typ: tablestore.AT_Put, id: "a", n: 2, seq: tablestore.RecordSequenceInfo{Timestamp: us2}, cols: []wantCol{
			{"s", tablestore.RCT_Put, "x", &ms2},
		}},
		{typ: tablestore.AT_Update, id: "a", n: 3, seq: tablestore.RecordSequenceInfo{Timestamp: us2, RowIndex: 1}, cols: []wantCol{
			{"i", tablestore.RCT_Put, int64(9), &ms2},
		}},
	})
}

// TestShardsPagingAndRouting checks DescribeStream paging over several
// shards and that every row's records land in exactly one, stable shard.
func TestShardsPagingAndRouting(t *testing.T) {
	srv, _ := start(t, WithShards(5))
	c := client(srv)
	createTable(t, c, "t", true)
	sid := streamOf(t, c, "t")

	for _, page := range []int32{0, 1, 2, 3, 5, 7} {
		shards := allShards(t, c, sid, page)
		if len(shards) != 5 {
			t.Fatalf("page %d: %d shards, want 5", page, len(shards))
		}
		seen := map[tablestore.ShardId]bool{}
		for _, sh := range shards {
			if seen[*sh.SelfShard] {
				t.Errorf("page %d: shard %s listed twice", page, *sh.SelfShard)
			}
			seen[*sh.SelfShard] = true
		}
	}

	ids := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"}
	for round := int64(0); round < 2; round++ {
		for _, id := range ids {
			putRow(t, c, "t", pk(id, round), map[string]any{"v": round})
		}
	}
	perShard := map[string][]string{}
	for _, sh := range allShards(t, c, sid, 2) {
		recs, _ := drain(t, c, sid, sh.SelfShard, 3)
		for _, r := range recs {
			perShard[string(*sh.SelfShard)] = append(perShard[string(*sh.SelfShard)], r.PrimaryKey.PrimaryKeys[0].Value.(string))
		}
	}
	total := 0
	for shard, keys := range perShard {
		total += len(keys)
		for _, k := range keys {
			want, err := srv.ShardFor("t", k)
			if err != nil || want != shard {
				t.Errorf("key %s read from %s, ShardFor says %s (%v)", k, shard, want, err)
			}
		}
	}
	if total != 2*len(ids) {
		t.Errorf("read %d records, want %d", total, 2*len(ids))
	}
	if len(perShard) < 2 {
		t.Errorf("all keys went to %d shard(s); hashing does not spread", len(perShard))
	}
}

// TestSplitAndMerge checks that split and merge are visible in
// DescribeStream with parent ids, that closed parents end with a nil
// iterator after their remaining records, and that new writes go to the
// children.
func TestSplitAndMerge(t *testing.T) {
	srv, _ := start(t)
	c := client(srv)
	createTable(t, c, "t", true)
	sid := streamOf(t, c, "t")
	root := allShards(t, c, sid, 0)[0].SelfShard

	for i := int64(0); i < 6; i++ {
		putRow(t, c, "t", pk("k", i), map[string]any{"v": i})
	}
	left, right, err := srv.SplitShard("t", string(*root))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := srv.SplitShard("t", string(*root)); err == nil {
		t.Error("splitting a closed shard succeeded")
	}
	// Parent: 6 remaining records, then a nil iterator.
	recs, ended := drain(t, c, sid, root, 4)
	if len(recs) != 6 || !ended {
		t.Fatalf("parent after split: %d records, ended=%v; want 6, true", len(recs), ended)
	}
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, k := range keys {
		putRow(t, c, "t", pk(k, 0), map[string]any{"v": int64(1)})
	}
	shards := allShards(t, c, sid, 1)
	if len(shards) != 3 {
		t.Fatalf("after split: %d shards, want 3", len(shards))
	}
	for _, sh := range shards[1:] {
		if sh.FatherShard == nil || *sh.FatherShard != *root || sh.MotherShard != nil {
			t.Errorf("child %s: parent %v sibling %v, want %s, nil", *sh.SelfShard, sh.FatherShard, sh.MotherShard, *root)
		}
	}
	if string(*shards[1].SelfShard) != left || string(*shards[2].SelfShard) != right {
		t.Errorf("children = %s, %s; want %s, %s", *shards[1].SelfShard, *shards[2].SelfShard, left, right)
	}
	childRecs := 0
	for _, sh := range shards[1:] {
		recs, ended := drain(t, c, sid, sh.SelfShard, 100)
		if ended {
			t.Errorf("open child %s ended", *sh.SelfShard)
		}
		childRecs += len(recs)
	}
	if childRecs != len(keys) {
		t.Errorf("children hold %d records, want %d", childRecs, len(keys))
	}

	merged, err := srv.MergeShards("t", left, right)
	if err != nil {
		t.Fatal(err)
	}
	putRow(t, c, "t", pk("z", 0), map[string]any{"v": int64(2)})
	shards = allShards(t, c, sid, 0)
	if len(shards) != 4 {
		t.Fatalf("after merge: %d shards, want 4", len(shards))
	}
	m := shards[3]
	if string(*m.SelfShard) != merged || m.FatherShard == nil || string(*m.FatherShard) != left ||
		m.MotherShard == nil || string(*m.MotherShard) != right {
		t.Errorf("merged shard = %s parent %v sibling %v; want %s, %s, %s", *m.SelfShard, m.FatherShard, m.MotherShard, merged, left, right)
	}
	for _, sh := range shards[1:3] {
		if _, ended := drain(t, c, sid, sh.SelfShard, 100); !ended {
			t.Errorf("merged parent %s did not end", *sh.SelfShard)
		}
	}
	if recs, _ := drain(t, c, sid, m.SelfShard, 100); len(recs) != 1 {
		t.Errorf("merged child holds %d records, want 1", len(recs))
	}
	if _, err := srv.MergeShards("t", left, merged); err == nil {
		t.Error("merging a closed shard succeeded")
	}
}

// TestTrim checks that trimmed positions fail with OTSTrimmedDataAccess and
// that a fresh iterator starts at the oldest retained record.
func TestTrim(t *testing.T) {
	srv, clk := start(t)
	c := client(srv)
	createTable(t, c, "t", true)
	sid := streamOf(t, c, "t")
	shard := allShards(t, c, sid, 0)[0].SelfShard

	for i := int64(0); i < 4; i++ {
		putRow(t, c, "t", pk("k", i), map[string]any{"v": i})
		clk.Advance(time.Second)
	}
	old, err := c.GetShardIterator(&tablestore.GetShardIteratorRequest{StreamId: sid, ShardId: shard})
	if err != nil {
		t.Fatal(err)
	}
	n, err := srv.Trim("t", t0.Add(2*time.Second)) // drops the records at t0, t0+1s
	if err != nil || n != 2 {
		t.Fatalf("Trim = %d, %v; want 2", n, err)
	}
	_, err = c.GetStreamRecord(&tablestore.GetStreamRecordRequest{ShardIterator: old.ShardIterator})
	if code, status := otsCode(t, err); code != CodeTrimmedDataAccess || status != 400 {
		t.Errorf("read at trimmed position: %s %d, want %s 400", code, status, CodeTrimmedDataAccess)
	}
	recs, _ := drain(t, c, sid, shard, 10)
	if len(recs) != 2 || recs[0].PrimaryKey.PrimaryKeys[1].Value != int64(2) {
		t.Errorf("after trim read %d records starting at %v, want 2 starting at n=2", len(recs), recs)
	}
	if n, err := srv.TrimShard("t", string(*shard), 1); err != nil || n != 1 {
		t.Fatalf("TrimShard = %d, %v", n, err)
	}
	if recs, _ := drain(t, c, sid, shard, 10); len(recs) != 1 {
		t.Errorf("after TrimShard read %d records, want 1", len(recs))
	}
}

// TestShardIteratorByTimestampAndToken checks the optional positions of
// GetShardIterator.
func TestShardIteratorByTimestampAndToken(t *testing.T) {
	srv, clk := start(t)
	c := client(srv)
	createTable(t, c, "t", true)
	sid := streamOf(t, c, "t")
	shard := allShards(t, c, sid, 0)[0].SelfShard
	for i := int64(0); i < 3; i++ {
		putRow(t, c, "t", pk("k", i), map[string]any{"v": i})
		clk.Advance(time.Second)
	}
	ts := t0.Add(time.Second).UnixMicro()
	it, err := c.GetShardIterator(&tablestore.GetShardIteratorRequest{StreamId: sid, ShardId: shard, Timestamp: &ts})
	if err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	resp, err := c.GetStreamRecord(&tablestore.GetStreamRecordRequest{ShardIterator: it.ShardIterator, Limit: &one})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Records) != 1 || resp.Records[0].PrimaryKey.PrimaryKeys[1].Value != int64(1) {
		t.Fatalf("timestamp iterator read %v, want the record n=1", resp.Records)
	}
	// Resume from the next iterator passed as a token.
	tok := string(*resp.NextShardIterator)
	it2, err := c.GetShardIterator(&tablestore.GetShardIteratorRequest{StreamId: sid, ShardId: shard, Token: &tok})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = c.GetStreamRecord(&tablestore.GetStreamRecordRequest{ShardIterator: it2.ShardIterator})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Records) != 1 || resp.Records[0].PrimaryKey.PrimaryKeys[1].Value != int64(2) {
		t.Fatalf("token iterator read %v, want the record n=2", resp.Records)
	}
}
