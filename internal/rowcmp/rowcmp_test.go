package rowcmp

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicedata/sluice/cdc"
)

func TestCanonEquality(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	instant := time.Date(2024, 1, 15, 10, 0, 0, 500_000_000, time.UTC)
	for _, tc := range []struct {
		name  string
		a, b  any
		t     cdc.Type
		equal bool
	}{
		{"NULL vs empty string", nil, "", cdc.TypeString, false},
		{"NULL vs the text NULL", nil, "NULL", cdc.TypeString, false},
		{"NULL vs NULL", nil, nil, cdc.TypeString, true},
		{"DECIMAL 1.50 vs 1.5", decimal.RequireFromString("1.50"), "1.5", cdc.Decimal(10, 2), true},
		{"DECIMAL 1.50 vs 1.51", decimal.RequireFromString("1.50"), "1.51", cdc.Decimal(10, 2), false},
		{"DECIMAL of unknown scale", "2.500", decimal.RequireFromString("2.5"), cdc.Decimal(38, 10), true},
		{"same instant, two zones", instant, instant.In(berlin), cdc.TypeTimestamp, true},
		{"instant as text in another zone", instant, "2024-01-15 11:00:00.5+01:00", cdc.TypeTimestamp, true},
		{"a microsecond apart", instant, instant.Add(time.Microsecond), cdc.TypeTimestamp, false},
		{"text is byte-exact", "a ", "a", cdc.TypeString, false},
		{"integer vs its text", int64(7), "7", cdc.TypeBigInt, true},
	} {
		a, err := Canon(tc.a, tc.t)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, err := Canon(tc.b, tc.t)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (a == b) != tc.equal {
			t.Errorf("%s: Canon %q vs %q, equal %v, want %v", tc.name, a, b, a == b, tc.equal)
		}
	}
}
