package tablestore

import (
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
)

func TestDescribeOffset(t *testing.T) {
	at := func(s string) Sequence {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return Sequence{Epoch: 1, Timestamp: tm.UnixMicro(), RowIndex: 3}
	}
	reading := func(last Sequence) string { return Position{Iterator: "it", Last: last, Version: 7}.Encode() }
	done := Position{Done: true, Version: 9}.Encode()
	offset := func(kv ...string) cdc.Offset {
		o := cdc.Offset{Positions: map[string]string{}}
		for i := 0; i < len(kv); i += 2 {
			o.Positions[kv[i]] = kv[i+1]
		}
		return o
	}
	for _, tc := range []struct {
		name string
		o    cdc.Offset
		want string // "" when not a Tablestore offset
	}{
		{"one shard", offset("s1", reading(at("2026-12-01T10:00:03.25Z"))), "1 shard, read to 2026-12-01 10:00:03Z"},
		{"the latest record over shards", offset("s1", reading(at("2026-12-01T10:00:03Z")), "s2", reading(at("2026-12-01T09:59:59Z"))), "2 shards, read to 2026-12-01 10:00:03Z"},
		{"a closed shard", offset("s1", done, "s2", reading(at("2026-12-01T10:00:03Z"))), "2 shards (1 read to its end), read to 2026-12-01 10:00:03Z"},
		{"closed shards, no record", offset("s1", done, "s2", done, "s3", Position{Iterator: "it"}.Encode()), "3 shards (2 read to their end), no record read yet"},
		{"zero", cdc.Offset{}, ""},
		{"SQLite", cdc.SingleOffset("initial@3"), ""},
		{"PostgreSQL", cdc.SingleOffset("sys=1 batch=2 snap=789:789:"), ""},
		{"not a position", offset("s1", "{\"x\":1}"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := DescribeOffset(tc.o)
			if ok != (tc.want != "") || got != tc.want {
				t.Errorf("DescribeOffset(%v) = %q, %v; want %q", tc.o, got, ok, tc.want)
			}
		})
	}
}
