package otsfake

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"
	"github.com/aliyun/aliyun-tablestore-go-sdk/tunnel/protocol"
)

func getRow(t *testing.T, c *tablestore.TableStoreClient, table string, key *tablestore.PrimaryKey, maxVersions int) map[string][]any {
	t.Helper()
	resp, err := c.GetRow(&tablestore.GetRowRequest{SingleRowQueryCriteria: &tablestore.SingleRowQueryCriteria{
		TableName: table, PrimaryKey: key, MaxVersion: int32(maxVersions)}})
	if err != nil {
		t.Fatalf("GetRow: %v", err)
	}
	if len(resp.PrimaryKey.PrimaryKeys) == 0 {
		return nil
	}
	out := map[string][]any{}
	for _, col := range resp.Columns {
		out[col.ColumnName] = append(out[col.ColumnName], col.Value)
	}
	return out
}

func TestTableOperations(t *testing.T) {
	srv, _ := start(t)
	c := client(srv)
	createTable(t, c, "b", true)
	createTable(t, c, "a", false)
	lt, err := c.ListTable()
	if err != nil || !reflect.DeepEqual(lt.TableNames, []string{"a", "b"}) {
		t.Fatalf("ListTable = %v, %v", lt, err)
	}
	d, err := c.DescribeTable(&tablestore.DescribeTableRequest{TableName: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.TableMeta.SchemaEntry) != 2 || *d.TableMeta.SchemaEntry[0].Name != "id" ||
		*d.TableMeta.SchemaEntry[0].Type != tablestore.PrimaryKeyType_STRING ||
		*d.TableMeta.SchemaEntry[1].Name != "n" || *d.TableMeta.SchemaEntry[1].Type != tablestore.PrimaryKeyType_INTEGER {
		t.Errorf("schema = %v", d.TableMeta.SchemaEntry)
	}
	if !d.StreamDetails.EnableStream || d.StreamDetails.ExpirationTime != 24 || d.StreamDetails.StreamId == nil ||
		d.TableOption.MaxVersion != 3 || d.TableOption.TimeToAlive != -1 {
		t.Errorf("stream details %+v, options %+v", d.StreamDetails, d.TableOption)
	}
	if *d.StreamDetails.StreamId != *streamOf(t, c, "b") {
		t.Error("DescribeTable and ListStream disagree on the stream id")
	}
	if d, _ := c.DescribeTable(&tablestore.DescribeTableRequest{TableName: "a"}); d.StreamDetails.EnableStream {
		t.Error("table without stream reports a stream")
	}
	if _, err := c.DeleteTable(&tablestore.DeleteTableRequest{TableName: "a"}); err != nil {
		t.Fatal(err)
	}
	if lt, _ := c.ListTable(); !reflect.DeepEqual(lt.TableNames, []string{"b"}) {
		t.Errorf("after delete ListTable = %v", lt.TableNames)
	}
	all, err := c.ListStream(&tablestore.ListStreamRequest{})
	if err != nil || len(all.Streams) != 1 || *all.Streams[0].TableName != "b" {
		t.Errorf("ListStream(all) = %v, %v", all, err)
	}
}

func TestRowOperations(t *testing.T) {
	srv, clk := start(t)
	c := client(srv)
	createTable(t, c, "t", false) // MaxVersion 3

	putRow(t, c, "t", pk("a", 1), map[string]any{"s": "v1", "i": int64(1)})
	clk.Advance(time.Millisecond)
	upd := &tablestore.UpdateRowChange{TableName: "t", PrimaryKey: pk("a", 1)}
	upd.PutColumn("s", "v2")
	upd.IncrementColumn("i", 5)
	upd.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	if _, err := c.UpdateRow(&tablestore.UpdateRowRequest{UpdateRowChange: upd}); err != nil {
		t.Fatal(err)
	}
	got := getRow(t, c, "t", pk("a", 1), 3)
	want := map[string][]any{"s": {"v2", "v1"}, "i": {int64(6), int64(1)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after update GetRow = %v, want %v", got, want)
	}
	if got := getRow(t, c, "t", pk("a", 1), 1); !reflect.DeepEqual(got, map[string][]any{"s": {"v2"}, "i": {int64(6)}}) {
		t.Errorf("MaxVersion 1 GetRow = %v", got)
	}

	// Delete one version, then all versions.
	upd = &tablestore.UpdateRowChange{TableName: "t", PrimaryKey: pk("a", 1)}
	upd.DeleteColumnWithTimestamp("s", t0.UnixMilli())
	upd.DeleteColumn("i")
	upd.SetCondition(tablestore.RowExistenceExpectation_EXPECT_EXIST)
	if _, err := c.UpdateRow(&tablestore.UpdateRowRequest{UpdateRowChange: upd}); err != nil {
		t.Fatal(err)
	}
	if got := getRow(t, c, "t", pk("a", 1), 3); !reflect.DeepEqual(got, map[string][]any{"s": {"v2"}}) {
		t.Errorf("after deletes GetRow = %v", got)
	}

	// PutRow replaces the row; the condition EXPECT_NOT_EXIST fails on it.
	ch := &tablestore.PutRowChange{TableName: "t", PrimaryKey: pk("a", 1)}
	ch.AddColumn("x", 1.5)
	ch.SetCondition(tablestore.RowExistenceExpectation_EXPECT_NOT_EXIST)
	if _, err := c.PutRow(&tablestore.PutRowRequest{PutRowChange: ch}); err == nil {
		t.Error("EXPECT_NOT_EXIST on an existing row succeeded")
	}
	ch.SetCondition(tablestore.RowExistenceExpectation_EXPECT_EXIST)
	ch.SetReturnPk()
	pr, err := c.PutRow(&tablestore.PutRowRequest{PutRowChange: ch})
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.PrimaryKey.PrimaryKeys) != 2 || pr.PrimaryKey.PrimaryKeys[0].Value != "a" {
		t.Errorf("ReturnPk = %v", pr.PrimaryKey)
	}
	if got := getRow(t, c, "t", pk("a", 1), 3); !reflect.DeepEqual(got, map[string][]any{"x": {1.5}}) {
		t.Errorf("after put GetRow = %v", got)
	}

	del := &tablestore.DeleteRowChange{TableName: "t", PrimaryKey: pk("a", 1)}
	del.SetCondition(tablestore.RowExistenceExpectation_EXPECT_EXIST)
	if _, err := c.DeleteRow(&tablestore.DeleteRowRequest{DeleteRowChange: del}); err != nil {
		t.Fatal(err)
	}
	if got := getRow(t, c, "t", pk("a", 1), 1); got != nil {
		t.Errorf("deleted row still reads as %v", got)
	}
}

func TestBatchWriteRowPerRowErrors(t *testing.T) {
	srv, _ := start(t)
	c := client(srv)
	createTable(t, c, "t", true)
	req := &tablestore.BatchWriteRowRequest{}
	ok := &tablestore.PutRowChange{TableName: "t", PrimaryKey: pk("a", 1)}
	ok.AddColumn("v", int64(1))
	ok.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	bad := &tablestore.UpdateRowChange{TableName: "t", PrimaryKey: pk("b", 1)}
	bad.PutColumn("v", int64(2))
	bad.SetCondition(tablestore.RowExistenceExpectation_EXPECT_EXIST)
	del := &tablestore.DeleteRowChange{TableName: "t", PrimaryKey: pk("a", 1)}
	del.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	req.AddRowChange(ok)
	req.AddRowChange(bad)
	req.AddRowChange(del)
	resp, err := c.BatchWriteRow(req)
	if err != nil {
		t.Fatal(err)
	}
	rows := resp.TableToRowsResult["t"]
	if len(rows) != 3 || !rows[0].IsSucceed || rows[1].IsSucceed || rows[1].Error.Code != CodeConditionCheckFail || !rows[2].IsSucceed {
		t.Fatalf("results = %+v", rows)
	}
	sid := streamOf(t, c, "t")
	recs, _ := drain(t, c, sid, allShards(t, c, sid, 0)[0].SelfShard, 10)
	if len(recs) != 2 || recs[0].Type != tablestore.AT_Put || recs[1].Type != tablestore.AT_Delete {
		t.Errorf("stream after batch = %v; want put, delete", recs)
	}
}

// TestPlainBufferCrossCheck decodes the fake's stream-record encoding with
// the SDK's exported tunnel decoder and checks the bytes of a record against
// a hand-written layout.
func TestPlainBufferCrossCheck(t *testing.T) {
	row := &pbRow{
		pk: []cell{{name: "id", val: &value{vt: vtString, bs: []byte("k")}}},
		cells: []cell{
			{name: "p", val: &value{vt: vtInteger, i: 7}, ts: 1000, hasTS: true},
			{name: "d1", op: opDeleteOneVersion, hasOp: true, ts: 2000, hasTS: true},
			{name: "da", op: opDeleteAllVersions, hasOp: true},
		},
		ext: &seqInfo{epoch: 3, ts: 123456789, rowIndex: 4},
	}
	b := encodeRows(row)
	rows, err := protocol.ReadRowsWithHeader(bytes.NewReader(b))
	if err != nil || len(rows) != 1 {
		t.Fatalf("tunnel decoder: %v, %d rows", err, len(rows))
	}
	r := rows[0]
	if *r.Extension != (protocol.RecordSequenceInfo{Epoch: 3, Timestamp: 123456789, RowIndex: 4}) {
		t.Errorf("extension = %+v", r.Extension)
	}
	if len(r.Cells) != 3 ||
		r.Cells[0].CellValue.Value != int64(7) || r.Cells[0].CellTimestamp != 1000 ||
		r.Cells[1].CellType != opDeleteOneVersion || r.Cells[1].CellTimestamp != 2000 || r.Cells[1].CellValue != nil ||
		r.Cells[2].CellType != opDeleteAllVersions || r.Cells[2].HasCellTimestamp || r.Cells[2].CellValue != nil {
		t.Errorf("cells = %+v %+v %+v", r.Cells[0], r.Cells[1], r.Cells[2])
	}
	// The extension block: tag, len 24, seq tag, len 19, epoch, ts, row index.
	ext := []byte{tagExtension, 24, 0, 0, 0, tagSeqInfo, 19, 0, 0, 0,
		tagSeqInfoEpoch, 3, 0, 0, 0,
		tagSeqInfoTS, 0x15, 0xcd, 0x5b, 0x07, 0, 0, 0, 0,
		tagSeqInfoRowIndex, 4, 0, 0, 0, tagRowChecksum}
	if !bytes.Contains(b, ext) {
		t.Errorf("extension bytes not found in % x", b)
	}
	// Our decoder accepts what we encode (checksums included).
	back, err := decodeOneRow(b)
	if err != nil || back.cells[1].op != opDeleteOneVersion || back.ext != nil {
		t.Errorf("decodeOneRow = %+v, %v", back, err)
	}
	// A flipped byte fails the checksum.
	bad := append([]byte(nil), b...)
	bad[len(b)-1] ^= 0xff
	if _, err := decodeRows(bad); err == nil {
		t.Error("corrupted row checksum accepted")
	}
}
