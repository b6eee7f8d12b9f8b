package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// TestReadBatchBytesWide: ReadOptions.BatchBytes ends a batch of wide rows
// long before BatchSize, every batch holds at least one change, and the
// batches together still carry every change, each with its whole value.
func TestReadBatchBytesWide(t *testing.T) {
	ctx := context.Background()
	b, _ := openDB(t)
	sqlExec(t, b, `CREATE TABLE wide (id int PRIMARY KEY, body text)`)
	track(t, b, "wide")
	mkStream(t, b, "wide_s", "wide", "STANDARD", false)
	const rows, width = 40, 100_000
	sqlExec(t, b, fmt.Sprintf(`INSERT INTO wide SELECT g, repeat(chr(64 + g), %d) FROM generate_series(1, %d) g`, width, rows))
	s, err := b.Stream(ctx, plan.Source{Stream: "wide_s"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		bytes     int64
		maxRows   int // the most changes a batch may hold
		minBatchs int
	}{
		// A row is about 100 kB: 1 MB holds ten (the batch ends at the
		// first change that reaches the bound, so eleven at most).
		{"1MB", 1 << 20, 11, rows / 11},
		// A bound below one row still moves one change per batch.
		{"below one row", 1000, 1, rows},
		// 0: DefaultBatchBytes (8 MiB), above the 4 MB read.
		{"default bound", 0, 1000, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := b.Changes(ctx, s, s.Offset, runner.ReadOptions{BatchSize: 1000, BatchBytes: int(tc.bytes)})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			seen := map[int64]bool{}
			batches := 0
			for {
				batch, err := r.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				batches++
				if len(batch) == 0 || len(batch) > tc.maxRows {
					t.Fatalf("batch %d holds %d changes, want 1 to %d", batches, len(batch), tc.maxRows)
				}
				for _, c := range batch {
					id := c.Row[0].(int64)
					want := strings.Repeat(string(rune(64+id)), width)
					if c.Op != cdc.OpInsert || c.Row[1] != want {
						t.Fatalf("change of id %d: %v, body of %d bytes", id, c.Op, len(fmt.Sprint(c.Row[1])))
					}
					seen[id] = true
				}
			}
			if len(seen) != rows || batches < tc.minBatchs {
				t.Fatalf("%d distinct rows in %d batches, want %d in at least %d", len(seen), batches, rows, tc.minBatchs)
			}
		})
	}
}
