package cdc

import "testing"

func TestWidens(t *testing.T) {
	cases := []struct {
		from, to Type
		want     bool
	}{
		{TypeInt, TypeBigInt, true},
		{Type{Kind: KindSmallInt}, TypeInt, true},
		{TypeBigInt, TypeInt, false},
		{TypeInt, TypeInt, false},
		{Type{Kind: KindFloat}, TypeDouble, true},
		{TypeDouble, Type{Kind: KindFloat}, false},
		{Type{Kind: KindVarchar, Length: 10}, Type{Kind: KindVarchar, Length: 20}, true},
		{Type{Kind: KindVarchar, Length: 20}, Type{Kind: KindVarchar, Length: 10}, false},
		{Type{Kind: KindVarchar, Length: 10}, TypeString, true},
		{TypeString, Type{Kind: KindVarchar, Length: 10}, false},
		{Decimal(10, 2), Decimal(12, 2), true},
		{Decimal(12, 2), Decimal(10, 2), false},
		{Decimal(10, 2), Decimal(12, 3), false}, // a change of scale rounds or pads: not a widening
		{Decimal(10, 2), TypeNumeric, true},
		{TypeNumeric, Decimal(10, 2), false},
		{TypeInt, TypeString, true}, // bigint → text keeps every value's digits
		{Decimal(10, 2), TypeString, true},
		{TypeString, TypeInt, false},
		{TypeDouble, TypeString, false}, // a float's text differs between engines
		{Type{Kind: KindBoolean}, TypeString, false},
		{TypeInt, Type{Kind: KindVarchar, Length: 30}, false}, // bounded: not every value fits
		{TypeInt, Decimal(20, 0), false},
	}
	for _, c := range cases {
		if got := Widens(c.from, c.to); got != c.want {
			t.Errorf("Widens(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}
