package tablestore

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/otsfake"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// Benchmarks read N PutRow records (default 1,000,000; set
// SLUICE_OTS_BENCH_RECORDS to change) spread over 4 shards of a fake
// server, written with BatchWriteRow 200 rows per call:
//
//	go test -run '^$' -bench BenchmarkTablestore -benchtime 3x ./sources/tablestore/
//
// BenchmarkTablestoreSource reads them through the source (decoding to
// cdc.Change); BenchmarkTablestoreRawSDK is the seed's loop with the bare
// SDK (GetShardIterator, then GetStreamRecord until caught up, records
// discarded), the ceiling. Both report records/s (wall clock) and
// cpu-µs/record (process CPU time, including the in-process fake server, so
// comparable between the two on a busy machine).

var (
	benchOnce sync.Once
	benchSrv  *otsfake.Server
	benchN    int
	benchErr  error
)

func benchRecords() int {
	if s := os.Getenv("SLUICE_OTS_BENCH_RECORDS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 1_000_000
}

// benchServer builds the fake once per process (it is not closed: the
// process ends after the benchmarks).
func benchServer(b *testing.B) (*otsfake.Server, int) {
	b.Helper()
	benchOnce.Do(func() {
		start := time.Now()
		benchN = benchRecords()
		benchSrv = otsfake.New(otsfake.WithShards(4))
		c := sdkClient(benchSrv)
		meta := &tablestore.TableMeta{TableName: table}
		meta.AddPrimaryKeyColumn("id", tablestore.PrimaryKeyType_INTEGER)
		if _, benchErr = c.CreateTable(&tablestore.CreateTableRequest{TableMeta: meta,
			TableOption:        &tablestore.TableOption{TimeToAlive: -1, MaxVersion: 1},
			ReservedThroughput: &tablestore.ReservedThroughput{},
			StreamSpec:         &tablestore.StreamSpecification{EnableStream: true, ExpirationTime: 24}}); benchErr != nil {
			return
		}
		for i := 0; i < benchN; i += 200 {
			req := &tablestore.BatchWriteRowRequest{}
			for j := i; j < min(i+200, benchN); j++ {
				ch := &tablestore.PutRowChange{TableName: table, PrimaryKey: pkOf(int64(j))}
				ch.AddColumn("name", "customer-"+strconv.Itoa(j))
				ch.AddColumn("qty", int64(j%100))
				ch.AddColumn("price", strconv.Itoa(j%1000)+".99")
				ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
				req.AddRowChange(ch)
			}
			if _, benchErr = c.BatchWriteRow(req); benchErr != nil {
				return
			}
		}
		b.Logf("built %d records in %v", benchN, time.Since(start).Round(time.Millisecond))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchSrv, benchN
}

func BenchmarkTablestoreSource(b *testing.B) {
	srv, n := benchServer(b)
	ctx := context.Background()
	s, err := Open(ctx, sourceURL(srv), slog.New(slog.DiscardHandler), WithCredentials(srv.AccessKeyID(), srv.AccessKeySecret(), ""))
	if err != nil {
		b.Fatal(err)
	}
	info, err := s.Stream(ctx, plan.Source{Stream: table, Columns: []plan.ColumnDecl{
		{Name: "name", Type: "STRING"}, {Name: "qty", Type: "BIGINT"}, {Name: "price", Type: "DECIMAL(10,2)"}}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for b.Loop() {
		rd, err := s.Changes(ctx, info, cdc.Offset{}, runner.ReadOptions{BatchSize: 1000})
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for {
			batch, err := rd.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			got += len(batch)
		}
		rd.Close()
		if got != n {
			b.Fatalf("read %d records, want %d", got, n)
		}
	}
	reportRate(b, n, c0)
}

func BenchmarkTablestoreRawSDK(b *testing.B) {
	srv, n := benchServer(b)
	cfg := tablestore.NewDefaultTableStoreConfig()
	c := tablestore.NewClientWithConfig(srv.URL(), srv.Instance(), srv.AccessKeyID(), srv.AccessKeySecret(), "", cfg)
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for b.Loop() {
		name := table
		ls, err := c.ListStream(&tablestore.ListStreamRequest{TableName: &name})
		if err != nil {
			b.Fatal(err)
		}
		sid := ls.Streams[0].Id
		desc, err := c.DescribeStream(&tablestore.DescribeStreamRequest{StreamId: sid})
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		limit := int32(1000)
		for _, sh := range desc.Shards {
			it, err := c.GetShardIterator(&tablestore.GetShardIteratorRequest{StreamId: sid, ShardId: sh.SelfShard})
			if err != nil {
				b.Fatal(err)
			}
			iter := it.ShardIterator
			for iter != nil {
				resp, err := c.GetStreamRecord(&tablestore.GetStreamRecordRequest{ShardIterator: iter, Limit: &limit})
				if err != nil {
					b.Fatal(err)
				}
				got += len(resp.Records) // discarded
				if len(resp.Records) == 0 {
					break // caught up (open shard)
				}
				iter = resp.NextShardIterator
			}
		}
		if got != n {
			b.Fatalf("read %d records, want %d", got, n)
		}
	}
	reportRate(b, n, c0)
}

func reportRate(b *testing.B, n int, c0 time.Duration) {
	total := float64(n) * float64(b.N)
	b.ReportMetric(total/b.Elapsed().Seconds(), "records/s")
	if c := cpuTime() - c0; c > 0 {
		b.ReportMetric(float64(c.Microseconds())/total, "cpu-µs/record")
	}
}
