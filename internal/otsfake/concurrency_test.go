package otsfake

import (
	"fmt"
	"sync"
	"testing"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"
)

// TestConcurrentUse writes from several goroutines while the stream is split
// and read, for the race detector; every write must appear exactly once.
func TestConcurrentUse(t *testing.T) {
	srv, _ := start(t, WithShards(2))
	c := client(srv)
	createTable(t, c, "t", true)
	sid := streamOf(t, c, "t")

	const writers, perWriter = 4, 10
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				ch := &tablestore.PutRowChange{TableName: "t", PrimaryKey: pk(fmt.Sprintf("w%d-%d", w, i), int64(i))}
				ch.AddColumn("v", int64(i))
				ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
				if _, err := c.PutRow(&tablestore.PutRowRequest{PutRowChange: ch}); err != nil {
					t.Errorf("PutRow: %v", err)
				}
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		shards, _ := srv.Shards("t")
		if _, _, err := srv.SplitShard("t", shards[0].ID); err != nil {
			t.Errorf("SplitShard: %v", err)
		}
		_, _ = c.DescribeStream(&tablestore.DescribeStreamRequest{StreamId: sid})
	}()
	wg.Wait()

	seen := map[string]int{}
	for _, sh := range allShards(t, c, sid, 0) {
		recs, _ := drain(t, c, sid, sh.SelfShard, 7)
		for _, r := range recs {
			seen[r.PrimaryKey.PrimaryKeys[0].Value.(string)]++
		}
	}
	if len(seen) != writers*perWriter {
		t.Fatalf("saw %d distinct rows, want %d", len(seen), writers*perWriter)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("row %s seen %d times", k, n)
		}
	}
}
