package postgres

import (
	"fmt"

	"github.com/sluicedata/sluice/cdc"
)

// DescribeOffset says in words what an offset of this backend is, for
// people: "batch N" (the stream's Nth snapshot batch, Position.Batch),
// "batch N, initial rows pending" for a SHOW_INITIAL_ROWS stream not read
// yet. ok is false when o is not an offset of this backend.
func DescribeOffset(o cdc.Offset) (text string, ok bool) {
	s, found := o.Get("")
	if !found || len(o.Positions) != 1 {
		return "", false
	}
	p, err := ParsePosition(s)
	if err != nil {
		return "", false
	}
	if p.Initial {
		return fmt.Sprintf("batch %d, initial rows pending", p.Batch), true
	}
	return fmt.Sprintf("batch %d", p.Batch), true
}
