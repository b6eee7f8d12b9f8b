package cdc

import (
	"time"

	"github.com/shopspring/decimal"
)

// changeOverhead is the memory of a Change's own fields (Op,
// CommitVersion, CommitTime, the Row and Present slice headers), in bytes.
const changeOverhead = 80

// Size estimates the memory a change holds, in bytes: the Change itself,
// its Row (one interface per column) and Present slices, and each value's
// boxed form and payload (a string's or a []byte's bytes, a DECIMAL's
// digits, estimated). Readers use it to bound a batch by bytes as well as by rows
// (runner.ReadOptions.BatchBytes); it is an estimate, not an accounting of
// the allocator's rounding.
func (c *Change) Size() int {
	n := changeOverhead + 16*len(c.Row) + len(c.Present)
	for _, v := range c.Row {
		n += ValueSize(v)
	}
	return n
}

// ValueSize estimates the memory of one canonical value boxed in an
// interface (beyond the interface itself), in bytes: 0 for nil, 8 for a
// number or boolean, the header and bytes of a string or []byte, and so on.
func ValueSize(v any) int {
	switch x := v.(type) {
	case nil:
		return 0
	case bool, int64, float64, int32, int16, int8, int, float32, uint64:
		return 8
	case string:
		return 16 + len(x)
	case Special:
		return 16 + len(x)
	case []byte:
		return 24 + len(x)
	case time.Time:
		return 24
	case decimal.Decimal:
		return 64 // value, big.Int and a word or two of digits
	case []any:
		n := 24
		for _, e := range x {
			n += 16 + ValueSize(e)
		}
		return n
	case map[string]any:
		n := 48
		for k, e := range x {
			n += 32 + len(k) + ValueSize(e)
		}
		return n
	}
	return 32
}
