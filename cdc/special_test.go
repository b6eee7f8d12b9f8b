package cdc

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

// TestCoerceBeyondRange covers the values PostgreSQL stores that the
// ordinary Go forms cannot: NaN and infinities (kept as Special, or as
// float64 in FLOAT/DOUBLE), numeric without precision (own digits), JSON
// and UUID text. Expected values are PostgreSQL's own rules (numeric(p,s)
// holds NaN but no infinity; date and timestamp hold ±infinity).
func TestCoerceBeyondRange(t *testing.T) {
	tests := []struct {
		name string
		in   any
		typ  Type
		want any    // nil with bad set: an error
		bad  string // part of the reason
	}{
		{"float NaN into DECIMAL(10,2)", math.NaN(), Decimal(10, 2), NaN, ""},
		{"text NaN into NUMERIC", "NaN", TypeNumeric, NaN, ""},
		{"text Infinity into NUMERIC", "Infinity", TypeNumeric, PosInfinity, ""},
		{"text -Infinity into NUMERIC", "-Infinity", TypeNumeric, NegInfinity, ""},
		{"infinity into DECIMAL(10,2)", "-Infinity", Decimal(10, 2), nil, "holds NaN but no infinity"},
		{"NUMERIC keeps 40 fraction digits", "0.0000000000000000000000000000000000000001", TypeNumeric, decimal.RequireFromString("1e-40"), ""},
		{"NUMERIC keeps 50 integer digits", "1" + "00000000000000000000000000000000000000000000000000", TypeNumeric, decimal.RequireFromString("1e50"), ""},
		{"infinity into DATE", "infinity", TypeDate, PosInfinity, ""},
		{"-infinity into TIMESTAMP", "-infinity", TypeTimestamp, NegInfinity, ""},
		{"Special into TIMESTAMP", PosInfinity, TypeTimestamp, PosInfinity, ""},
		{"NaN into DATE", "NaN", TypeDate, nil, "not a point in time"},
		{"Special infinity into DOUBLE", PosInfinity, TypeDouble, math.Inf(1), ""},
		{"Special NaN into DOUBLE", NaN, TypeDouble, math.NaN(), ""},
		{"JSON text", `{"a": [1, 2.50]}`, TypeJSON, `{"a": [1, 2.50]}`, ""},
		{"JSON bytes", []byte(`"x"`), TypeJSON, `"x"`, ""},
		{"not JSON", `{a:1}`, TypeJSON, nil, "not JSON"},
		{"UUID", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", TypeUUID, "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", ""},
		{"UUID bytes", [16]byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}, TypeUUID, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", ""},
		{"UUID in braces without hyphens", "{a0eebc999c0b4ef8bb6d6bb9bd380a11}", TypeUUID, "{a0eebc999c0b4ef8bb6d6bb9bd380a11}", ""},
		{"not a UUID", "a0eebc99-9c0b", TypeUUID, nil, "not a UUID"},
		{"native text", "1 day 02:00:00", NativeType("interval"), "1 day 02:00:00", ""},
		{"Special into STRING", NegInfinity, TypeString, "-infinity", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Coerce(tt.in, tt.typ)
			if tt.bad != "" {
				var ve *ValueError
				if !errors.As(err, &ve) || !errors.Is(err, ErrBadValue) {
					t.Fatalf("Coerce = %v, %v; want a *ValueError", got, err)
				}
				if !contains(ve.Reason, tt.bad) {
					t.Errorf("reason %q, want %q", ve.Reason, tt.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch w := tt.want.(type) {
			case float64:
				g, ok := got.(float64)
				if !ok || !(g == w || math.IsNaN(g) && math.IsNaN(w)) {
					t.Errorf("got %#v, want %v", got, w)
				}
			case decimal.Decimal:
				g, ok := got.(decimal.Decimal)
				if !ok || !g.Equal(w) {
					t.Errorf("got %#v, want %s", got, w)
				}
			default:
				if got != tt.want {
					t.Errorf("got %#v, want %#v", got, tt.want)
				}
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestFormatValuePostgresForms checks the texts PostgreSQL itself prints
// for the special values (SELECT 'NaN'::float8, 'infinity'::numeric,
// 'infinity'::date).
func TestFormatValuePostgresForms(t *testing.T) {
	tests := []struct {
		v    any
		t    Type
		want string
	}{
		{math.NaN(), TypeDouble, "NaN"},
		{math.Inf(1), TypeDouble, "Infinity"},
		{math.Inf(-1), TypeDouble, "-Infinity"},
		{PosInfinity, TypeNumeric, "Infinity"},
		{NegInfinity, Decimal(10, 2), "-Infinity"},
		{NaN, TypeNumeric, "NaN"},
		{PosInfinity, TypeDate, "infinity"},
		{NegInfinity, TypeTimestamp, "-infinity"},
	}
	for _, tt := range tests {
		if got := FormatValue(tt.v, tt.t); got != tt.want {
			t.Errorf("FormatValue(%v, %s) = %q, want %q", tt.v, tt.t, got, tt.want)
		}
	}
}

func TestParseStoredTypeRoundTrip(t *testing.T) {
	for _, typ := range []Type{TypeNumeric, TypeJSON, {Kind: KindJSON, Native: "json"}, TypeUUID, NativeType("integer[]"), NativeType("public.mood"),
		{Kind: KindTimestamp, Native: TimestampNTZ}, Decimal(10, 2), TypeTimestamp} {
		got, err := ParseStoredType(typ.String())
		if err != nil || got != typ {
			t.Errorf("ParseStoredType(%q) = %#v, %v; want %#v", typ.String(), got, err, typ)
		}
	}
}
