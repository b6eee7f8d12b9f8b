package cli

import (
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
)

// TestOffsetText: offsets in words for each backend's position form, the
// raw form for others, "start" for none.
func TestOffsetText(t *testing.T) {
	at := time.Date(2026, 12, 1, 18, 0, 3, 0, time.FixedZone("", 8*3600))
	for _, tt := range []struct {
		o    cdc.Offset
		at   time.Time
		want string
	}{
		{cdc.Offset{}, at, "start"},
		{cdc.SingleOffset("sys=7714318194733832356 batch=2 snap=789:789:"), at, "batch 2 at 2026-12-01 10:00:03Z"},
		{cdc.SingleOffset("sys=7714318194733832356 batch=0 snap=700:700: initial"), time.Time{}, "batch 0, initial rows pending"},
		{cdc.SingleOffset("17"), at, "change 17 at 2026-12-01 10:00:03Z"},
		{cdc.SingleOffset("initial@5"), time.Time{}, "change 5, initial rows pending"},
		{cdc.Offset{Positions: map[string]string{"shard-1": "a", "shard-2": "b"}}, time.Time{}, "shard-1=a, shard-2=b"},
		{cdc.SingleOffset("not a position"), time.Time{}, "not a position"},
	} {
		if got := offsetText(tt.o, tt.at); got != tt.want {
			t.Errorf("offsetText(%v) = %q, want %q", tt.o, got, tt.want)
		}
	}
}
