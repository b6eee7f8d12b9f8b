package otsfake

import (
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"
)

// t0 is the start of the manual clock used by the tests.
var t0 = time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)

// start starts a fake with a manual clock and returns it with the clock.
func start(t *testing.T, opts ...Option) (*Server, *ManualClock) {
	t.Helper()
	clk := NewManualClock(t0)
	srv := New(append([]Option{WithClock(clk.Now)}, opts...)...)
	t.Cleanup(srv.Close)
	return srv, clk
}

// client returns a real SDK client for srv with fast retries.
func client(srv *Server) *tablestore.TableStoreClient {
	return clientWith(srv, srv.AccessKeyID(), srv.AccessKeySecret())
}

func clientWith(srv *Server, akid, secret string) *tablestore.TableStoreClient {
	cfg := tablestore.NewDefaultTableStoreConfig()
	cfg.RetryTimes = 3
	cfg.MaxRetryTime = 2 * time.Second
	cfg.DefaultRetryInterval = 2 * time.Millisecond
	cfg.MaxRetryInterval = 5 * time.Millisecond
	return tablestore.NewClientWithConfig(srv.URL(), srv.Instance(), akid, secret, "", cfg)
}

// createTable creates table name with primary key (id STRING, n INTEGER) and,
// when stream is true, an enabled stream with 24 h expiration.
func createTable(t *testing.T, c *tablestore.TableStoreClient, name string, stream bool) {
	t.Helper()
	meta := &tablestore.TableMeta{TableName: name}
	meta.AddPrimaryKeyColumn("id", tablestore.PrimaryKeyType_STRING)
	meta.AddPrimaryKeyColumn("n", tablestore.PrimaryKeyType_INTEGER)
	req := &tablestore.CreateTableRequest{
		TableMeta:          meta,
		TableOption:        &tablestore.TableOption{TimeToAlive: -1, MaxVersion: 3},
		ReservedThroughput: &tablestore.ReservedThroughput{},
	}
	if stream {
		req.StreamSpec = &tablestore.StreamSpecification{EnableStream: true, ExpirationTime: 24}
	}
	if _, err := c.CreateTable(req); err != nil {
		t.Fatalf("CreateTable(%s): %v", name, err)
	}
}

func pk(id string, n int64) *tablestore.PrimaryKey {
	p := &tablestore.PrimaryKey{}
	p.AddPrimaryKeyColumn("id", id)
	p.AddPrimaryKeyColumn("n", n)
	return p
}

func putRow(t *testing.T, c *tablestore.TableStoreClient, table string, key *tablestore.PrimaryKey, cols map[string]any) {
	t.Helper()
	ch := &tablestore.PutRowChange{TableName: table, PrimaryKey: key}
	for _, name := range sortedKeys(cols) {
		ch.AddColumn(name, cols[name])
	}
	ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	if _, err := c.PutRow(&tablestore.PutRowRequest{PutRowChange: ch}); err != nil {
		t.Fatalf("PutRow: %v", err)
	}
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// streamOf returns the stream id of table via ListStream.
func streamOf(t *testing.T, c *tablestore.TableStoreClient, table string) *tablestore.StreamId {
	t.Helper()
	resp, err := c.ListStream(&tablestore.ListStreamRequest{TableName: &table})
	if err != nil {
		t.Fatalf("ListStream: %v", err)
	}
	if len(resp.Streams) != 1 {
		t.Fatalf("ListStream: got %d streams, want 1", len(resp.Streams))
	}
	return resp.Streams[0].Id
}

// allShards pages through DescribeStream with the given page size.
func allShards(t *testing.T, c *tablestore.TableStoreClient, sid *tablestore.StreamId, page int32) []*tablestore.StreamShard {
	t.Helper()
	var out []*tablestore.StreamShard
	var next *tablestore.ShardId
	for {
		req := &tablestore.DescribeStreamRequest{StreamId: sid, InclusiveStartShardId: next}
		if page > 0 {
			req.ShardLimit = &page
		}
		resp, err := c.DescribeStream(req)
		if err != nil {
			t.Fatalf("DescribeStream: %v", err)
		}
		out = append(out, resp.Shards...)
		if resp.NextShardId == nil {
			return out
		}
		next = resp.NextShardId
	}
}

// drain reads a shard from its start until NextShardIterator is nil (closed
// shard) or a read returns no records (open shard). It returns the records
// and whether the shard ended.
func drain(t *testing.T, c *tablestore.TableStoreClient, sid *tablestore.StreamId, shard *tablestore.ShardId, limit int32) ([]*tablestore.StreamRecord, bool) {
	t.Helper()
	it, err := c.GetShardIterator(&tablestore.GetShardIteratorRequest{StreamId: sid, ShardId: shard})
	if err != nil {
		t.Fatalf("GetShardIterator: %v", err)
	}
	cur := it.ShardIterator
	var out []*tablestore.StreamRecord
	for i := 0; i < 1000; i++ {
		resp, err := c.GetStreamRecord(&tablestore.GetStreamRecordRequest{ShardIterator: cur, Limit: &limit})
		if err != nil {
			t.Fatalf("GetStreamRecord: %v", err)
		}
		out = append(out, resp.Records...)
		if resp.NextShardIterator == nil {
			return out, true
		}
		if len(resp.Records) == 0 {
			return out, false
		}
		cur = resp.NextShardIterator
	}
	t.Fatal("drain: too many pages")
	return nil, false
}

// otsCode returns the OtsError code and HTTP status of err.
func otsCode(t *testing.T, err error) (string, int) {
	t.Helper()
	var oe *tablestore.OtsError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v (%T) is not a *tablestore.OtsError", err, err)
	}
	return oe.Code, oe.HttpStatusCode
}
