package sqlite

import (
	"fmt"

	"github.com/sluicedata/sluice/cdc"
)

// DescribeOffset says in words what an offset of this backend is, for
// people: "change N" (the change log sequence number the stream has
// consumed up to), "change N, initial rows pending" for a SHOW_INITIAL_ROWS
// stream not read yet. ok is false when o is not an offset of this backend.
func DescribeOffset(o cdc.Offset) (text string, ok bool) {
	if o.IsZero() {
		return "", false
	}
	p, err := parseOffset(o)
	if err != nil {
		return "", false
	}
	if p.initial {
		return fmt.Sprintf("change %d, initial rows pending", p.seq), true
	}
	return fmt.Sprintf("change %d", p.seq), true
}
