package tablestore

import (
	"fmt"
	"time"

	"github.com/sluicedata/sluice/cdc"
)

// DescribeOffset says in words what an offset of this backend is, for
// people: how many shards it holds a position for, how many of those are
// closed and read to their end, and the commit time of the last record it
// has returned (the latest over its shards, UTC, to the second):
// "2 shards, read to 2026-12-01 10:00:03Z", "3 shards (1 read to its end),
// read to …", "1 shard, no record read yet". ok is false when o is not an
// offset of this backend (a position that is not Position's JSON).
func DescribeOffset(o cdc.Offset) (text string, ok bool) {
	if o.IsZero() {
		return "", false
	}
	var done int
	var last time.Time
	for part, s := range o.Positions {
		if part == "" {
			return "", false
		}
		p, err := DecodePosition(s)
		if err != nil {
			return "", false
		}
		if p.Done {
			done++
		}
		if !p.Last.IsZero() && p.Last.Time().After(last) {
			last = p.Last.Time()
		}
	}
	text = fmt.Sprintf("%d shards", len(o.Positions))
	if len(o.Positions) == 1 {
		text = "1 shard"
	}
	switch {
	case done == 1:
		text += " (1 read to its end)"
	case done > 1:
		text += fmt.Sprintf(" (%d read to their end)", done)
	}
	if last.IsZero() {
		return text + ", no record read yet", true
	}
	return text + ", read to " + last.Format("2006-01-02 15:04:05Z"), true
}
