package tablestore

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
)

// TestReadBatchBytes: ReadOptions.BatchBytes ends a batch of wide records
// long before BatchSize, a batch holds at least one change, and every
// change still arrives exactly once, in order per key.
func TestReadBatchBytes(t *testing.T) {
	w := newWorld(t, 2)
	const n, width = 60, 50_000
	for i := range int64(n) {
		w.put(i+1, map[string]any{"name": strings.Repeat(string(rune('a'+i%26)), width), "qty": i})
	}
	s := w.open(WithPageSize(25))
	info := w.info(s)
	ctx := context.Background()
	tests := []struct {
		name       string
		bytes      int64
		maxChanges int // the most a batch may hold
		minBatches int
	}{
		// A record is about 50 kB: 512 kB holds ten (a batch ends at the
		// first change that reaches the bound, so eleven at most).
		{"512kB", 512 << 10, 11, n / 11},
		{"below one record", 100, 1, n},
		// 0: DefaultBatchBytes (8 MiB), above the 3 MB read.
		{"default bound", 0, 1000, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rd, err := s.Changes(ctx, info, cdc.Offset{}, runner.ReadOptions{BatchSize: 1000, BatchBytes: int(tc.bytes)})
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			var got []cdc.Change
			batches := 0
			for {
				b, err := rd.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				batches++
				if len(b) == 0 || len(b) > tc.maxChanges {
					t.Fatalf("batch %d holds %d changes, want 1 to %d", batches, len(b), tc.maxChanges)
				}
				got = append(got, b...)
			}
			if batches < tc.minBatches {
				t.Errorf("%d batches, want at least %d", batches, tc.minBatches)
			}
			checkExactlyOnce(t, w, got)
		})
	}
}
