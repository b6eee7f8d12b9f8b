package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
)

func TestNarrowing(t *testing.T) {
	col := func(name string, ty cdc.Type) cdc.Column { return cdc.Column{Name: name, Type: ty} }
	for _, tc := range []struct {
		name        string
		from, to    cdc.Type
		wantDigits  bool // warns about integer digits
		wantRounded bool // warns about rounding
	}{
		{"same", cdc.Decimal(10, 2), cdc.Decimal(10, 2), false, false},
		{"wider target", cdc.Decimal(10, 2), cdc.Decimal(38, 10), false, false},
		{"fewer integer digits", cdc.Decimal(10, 2), cdc.Decimal(4, 2), true, false},
		{"fewer decimal places", cdc.Decimal(10, 4), cdc.Decimal(12, 2), false, true},
		{"both", cdc.Decimal(10, 4), cdc.Decimal(5, 2), true, true},
		{"not a decimal", cdc.TypeBigInt, cdc.Decimal(4, 2), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := narrowing(cdc.Schema{Columns: []cdc.Column{col("amount", tc.from)}}, cdc.Schema{Columns: []cdc.Column{col("AMOUNT", tc.to)}})
			digits := slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "digits before the decimal point fails the run") })
			rounded := slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "rounded to") })
			if digits != tc.wantDigits || rounded != tc.wantRounded || len(got) != btoi(tc.wantDigits)+btoi(tc.wantRounded) {
				t.Errorf("narrowing(%s → %s) = %q", tc.from, tc.to, got)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
