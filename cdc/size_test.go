package cdc

import (
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// TestChangeSize: the estimate counts the Change itself, an interface per
// column, a Present flag per column and each value's payload, so wide
// text or bytes weigh what they hold.
func TestChangeSize(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	for _, tc := range []struct {
		name string
		ch   Change
		want int
	}{
		{"no columns", Change{}, 80},
		{"NULLs", Change{Row: []any{nil, nil}}, 80 + 2*16},
		{"scalars", Change{Row: []any{int64(1), 2.5, true}}, 80 + 3*16 + 3*8},
		{"text and bytes", Change{Row: []any{"abc", []byte{1, 2}}}, 80 + 2*16 + (16 + 3) + (24 + 2)},
		{"wide text", Change{Row: []any{long}}, 80 + 16 + 16 + 10_000},
		{"time and DECIMAL", Change{Row: []any{time.Unix(0, 0), decimal.New(12345, -2)}}, 80 + 2*16 + 24 + 64},
		{"partial row", Change{Row: []any{int64(1), nil}, Present: []bool{true, false}}, 80 + 2*16 + 8 + 2},
	} {
		if got := tc.ch.Size(); got != tc.want {
			t.Errorf("%s: Size() = %d, want %d", tc.name, got, tc.want)
		}
	}
}
