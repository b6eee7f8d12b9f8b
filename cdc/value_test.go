package cdc

import (
	"errors"
	"math"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// coerceCase is one Coerce call. With errReason set the call must fail with
// a *ValueError whose Reason contains it; otherwise it must return want.
type coerceCase struct {
	name      string
	in        any
	typ       Type
	want      any
	errReason string
}

func runCoerce(t *testing.T, tests []coerceCase, equal func(got, want any) bool) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Coerce(tt.in, tt.typ)
			if tt.errReason != "" {
				if err == nil {
					t.Fatalf("Coerce(%#v, %s) = %#v, want an error (%s)", tt.in, tt.typ, got, tt.errReason)
				}
				var ve *ValueError
				if !errors.As(err, &ve) {
					t.Fatalf("Coerce(%#v, %s) error is %T, want *ValueError: %v", tt.in, tt.typ, err, err)
				}
				if !errors.Is(err, ErrBadValue) {
					t.Errorf("Coerce error %v does not wrap ErrBadValue", err)
				}
				if !strings.Contains(ve.Reason, tt.errReason) {
					t.Errorf("Coerce(%#v, %s) reason %q, want it to contain %q", tt.in, tt.typ, ve.Reason, tt.errReason)
				}
				if ve.Column != "" || ve.Key != nil {
					t.Errorf("Coerce filled in column %q / key %v; callers do that", ve.Column, ve.Key)
				}
				if !sameInput(ve.Value, tt.in) {
					t.Errorf("ValueError.Value = %#v, want the value given, %#v", ve.Value, tt.in)
				}
				if ve.Type != tt.typ {
					t.Errorf("ValueError.Type = %s, want %s", ve.Type, tt.typ)
				}
				if got != nil {
					t.Errorf("Coerce returned %#v with its error, want nil", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Coerce(%#v, %s): %v", tt.in, tt.typ, err)
			}
			if !equal(got, tt.want) {
				t.Errorf("Coerce(%#v, %s) = %#v (%T), want %#v (%T)", tt.in, tt.typ, got, got, tt.want, tt.want)
			}
		})
	}
}

// sameInput reports whether a ValueError names the value given to Coerce.
// ([]byte given to non-binary kinds is reported as its text.)
func sameInput(got, in any) bool {
	if b, ok := in.([]byte); ok {
		if g, ok := got.([]byte); ok {
			return string(g) == string(b)
		}
		return got == string(b)
	}
	if f, ok := in.(float64); ok && math.IsNaN(f) {
		g, ok := got.(float64)
		return ok && math.IsNaN(g)
	}
	if d, ok := in.(decimal.Decimal); ok {
		g, ok := got.(decimal.Decimal)
		return ok && g.Equal(d)
	}
	return reflect.DeepEqual(got, in)
}

// sameValue compares canonical values of the simple kinds exactly, type
// included.
func sameValue(got, want any) bool {
	switch w := want.(type) {
	case []byte:
		g, ok := got.([]byte)
		return ok && string(g) == string(w) && g != nil
	case float64:
		g, ok := got.(float64)
		return ok && (g == w || math.IsNaN(g) && math.IsNaN(w))
	}
	return got == want
}

// pointThree is 0.1+0.2 computed in float64 (0.30000000000000004); a
// constant expression would be exact.
var pointOne, pointTwo = 0.1, 0.2
var pointThree = pointOne + pointTwo

var (
	tinyint  = Type{Kind: KindTinyInt}
	smallint = Type{Kind: KindSmallInt}
	float    = Type{Kind: KindFloat}
	varchar  = Type{Kind: KindVarchar, Length: 10}
	char     = Type{Kind: KindChar, Length: 1}
)

func TestCoerceNull(t *testing.T) {
	for _, typ := range []Type{tinyint, smallint, TypeInt, TypeBigInt, TypeBoolean, float, TypeDouble,
		Decimal(10, 2), TypeString, varchar, char, TypeDate, TypeTimestamp, TypeBinary} {
		got, err := Coerce(nil, typ)
		if got != nil || err != nil {
			t.Errorf("Coerce(nil, %s) = %#v, %v; want nil, nil", typ, got, err)
		}
	}
}

func TestCoerceIntegers(t *testing.T) {
	runCoerce(t, []coerceCase{
		{"tinyint max", int64(127), tinyint, int64(127), ""},
		{"tinyint min", int64(-128), tinyint, int64(-128), ""},
		{"tinyint over", int64(128), tinyint, nil, "out of range"},
		{"tinyint under", int64(-129), tinyint, nil, "out of range"},
		{"tinyint text over", "200", tinyint, nil, "out of range"},
		{"smallint max", int64(32767), smallint, int64(32767), ""},
		{"smallint min", int64(-32768), smallint, int64(-32768), ""},
		{"smallint over", int64(32768), smallint, nil, "out of range"},
		{"smallint under", int64(-32769), smallint, nil, "out of range"},
		{"int max", int64(2147483647), TypeInt, int64(2147483647), ""},
		{"int min", int64(-2147483648), TypeInt, int64(-2147483648), ""},
		{"int over", int64(2147483648), TypeInt, nil, "out of range"},
		{"int under", int64(-2147483649), TypeInt, nil, "out of range"},
		{"bigint max", int64(9223372036854775807), TypeBigInt, int64(9223372036854775807), ""},
		{"bigint min", int64(-9223372036854775808), TypeBigInt, int64(-9223372036854775808), ""},
		{"bigint text max", "9223372036854775807", TypeBigInt, int64(9223372036854775807), ""},
		{"bigint text over", "9223372036854775808", TypeBigInt, nil, "out of range"},
		{"bigint text under", "-9223372036854775809", TypeBigInt, nil, "out of range"},

		{"int", 42, TypeInt, int64(42), ""},
		{"int32", int32(-7), TypeInt, int64(-7), ""},
		{"int16", int16(300), smallint, int64(300), ""},
		{"int8", int8(-5), tinyint, int64(-5), ""},
		{"bool true", true, TypeInt, int64(1), ""},
		{"bool false", false, TypeInt, int64(0), ""},
		{"float integral", float64(3), TypeBigInt, int64(3), ""},
		{"float negative integral", float64(-1e15), TypeBigInt, int64(-1000000000000000), ""},
		{"float fraction", 3.5, TypeBigInt, nil, "not an integer"},
		{"float NaN", math.NaN(), TypeBigInt, nil, "not an integer"},
		{"float +Inf", math.Inf(1), TypeBigInt, nil, "not an integer"},
		{"float beyond int64", 1e19, TypeBigInt, nil, "not an integer"},
		{"float integral over int", float64(3e9), TypeInt, nil, "out of range"},
		{"decimal integral", decimal.RequireFromString("12.000"), TypeInt, int64(12), ""},
		{"decimal fraction", decimal.RequireFromString("12.5"), TypeInt, nil, "not an integer"},
		{"decimal beyond int64", decimal.RequireFromString("99999999999999999999"), TypeBigInt, nil, "out of range"},
		{"text", "42", TypeInt, int64(42), ""},
		{"text padded", "  -17 \n", TypeInt, int64(-17), ""},
		{"text with zero fraction", "4.00", TypeInt, int64(4), ""},
		{"text fraction", "4.5", TypeInt, nil, "not an integer"},
		{"text word", "forty", TypeInt, nil, "not an integer"},
		{"text empty", "", TypeInt, nil, "not an integer"},
		{"bytes", []byte("99"), TypeSmallIntForTest(), int64(99), ""},
		{"time", time.Unix(0, 0), TypeBigInt, nil, "not an integer"},
		{"bytes word", []byte("x"), TypeBigInt, nil, "not an integer"},
	}, sameValue)
}

// TypeSmallIntForTest keeps the table above readable.
func TypeSmallIntForTest() Type { return smallint }

func TestCoerceBoolean(t *testing.T) {
	runCoerce(t, []coerceCase{
		{"true", true, TypeBoolean, true, ""},
		{"false", false, TypeBoolean, false, ""},
		{"int64 0", int64(0), TypeBoolean, false, ""},
		{"int64 1", int64(1), TypeBoolean, true, ""},
		{"int64 -3", int64(-3), TypeBoolean, true, ""},
		{"int 0", 0, TypeBoolean, false, ""},
		{"int 2", 2, TypeBoolean, true, ""},
		{"text true", "true", TypeBoolean, true, ""},
		{"text TRUE", "TRUE", TypeBoolean, true, ""},
		{"text t padded", " t ", TypeBoolean, true, ""},
		{"text 1", "1", TypeBoolean, true, ""},
		{"text False", "False", TypeBoolean, false, ""},
		{"text F", "F", TypeBoolean, false, ""},
		{"text 0", "0", TypeBoolean, false, ""},
		{"bytes true", []byte("true"), TypeBoolean, true, ""},
		{"bytes 0", []byte("0"), TypeBoolean, false, ""},
		{"text yes", "yes", TypeBoolean, nil, "not a boolean"},
		{"text 2", "2", TypeBoolean, nil, "not a boolean"},
		{"text empty", "", TypeBoolean, nil, "not a boolean"},
		{"float", 1.0, TypeBoolean, nil, "not a boolean"},
		{"time", time.Unix(0, 0), TypeBoolean, nil, "not a boolean"},
	}, sameValue)
}

func TestCoerceFloat(t *testing.T) {
	for _, typ := range []Type{float, TypeDouble} {
		runCoerce(t, []coerceCase{
			{typ.String() + " float64", 1.25, typ, 1.25, ""},
			{typ.String() + " float64 0.1", 0.1, typ, 0.1, ""},
			{typ.String() + " float32", float32(0.5), typ, 0.5, ""},
			{typ.String() + " int64", int64(-3), typ, -3.0, ""},
			{typ.String() + " int", 7, typ, 7.0, ""},
			{typ.String() + " decimal", decimal.RequireFromString("1500.25"), typ, 1500.25, ""},
			{typ.String() + " text", "2.5e3", typ, 2500.0, ""},
			{typ.String() + " text padded", " -0.75 ", typ, -0.75, ""},
			{typ.String() + " bytes", []byte("1.5"), typ, 1.5, ""},
			{typ.String() + " NaN passes through", math.NaN(), typ, math.NaN(), ""},
			{typ.String() + " text word", "one", typ, nil, "not a number"},
			{typ.String() + " bytes word", []byte("x"), typ, nil, "not a number"},
			{typ.String() + " bool", true, typ, nil, "not a number"},
		}, sameValue)
	}
}

// decimalEqual compares a Coerce result with the exact text of the expected
// decimal at the column's scale: both the value and the digits shown.
func TestCoerceDecimal(t *testing.T) {
	d102, d3810 := Decimal(10, 2), Decimal(38, 10)
	tests := []struct {
		name      string
		in        any
		typ       Type
		want      string // the value at the column's scale (StringFixed)
		errReason string
	}{
		{"text exact", "1500.00", d102, "1500.00", ""},
		{"text short", "1500", d102, "1500.00", ""},
		{"text one digit", "0.5", d102, "0.50", ""},
		{"negative", "-42.1", d102, "-42.10", ""},
		{"largest", "99999999.99", d102, "99999999.99", ""},
		{"smallest", "-99999999.99", d102, "-99999999.99", ""},
		{"padded text", "  12.34 ", d102, "12.34", ""},
		{"bytes", []byte("7.77"), d102, "7.77", ""},
		{"int64", int64(1500), d102, "1500.00", ""},
		{"int", -3, d102, "-3.00", ""},
		{"big.Int", big.NewInt(123456), d102, "123456.00", ""},
		{"decimal", decimal.RequireFromString("3000"), d102, "3000.00", ""},

		// Rounding half away from zero to the scale.
		{"round half up", "1234.565", d102, "1234.57", ""},
		{"round half down negative", "-1234.565", d102, "-1234.57", ""},
		{"round below half", "1234.5649999", d102, "1234.56", ""},
		{"round above half", "1234.5650001", d102, "1234.57", ""},
		{"round half to one cent", "0.005", d102, "0.01", ""},
		{"round negative half to one cent", "-0.005", d102, "-0.01", ""},
		{"round to zero", "0.004", d102, "0.00", ""},
		{"round scale 0 half", "2.5", Decimal(10, 0), "3", ""},
		{"round scale 0 negative half", "-2.5", Decimal(10, 0), "-3", ""},
		{"round scale 0 below half", "2.4999", Decimal(10, 0), "2", ""},

		// Integer digits beyond precision - scale.
		{"overflow", "100000000", d102, "", "more than 8 digits before the decimal point"},
		{"overflow negative", "-123456789.1", d102, "", "more than 8 digits before the decimal point"},
		{"overflow after rounding", "99999999.995", d102, "", "more than 8 digits before the decimal point"},
		{"overflow int64", int64(1000000000), d102, "", "more than 8 digits"},
		{"all fraction fits", "0.99", Decimal(2, 2), "0.99", ""},
		{"all fraction overflows after rounding", "0.995", Decimal(2, 2), "", "more than 0 digits before the decimal point"},
		{"all fraction overflows", "1", Decimal(2, 2), "", "more than 0 digits"},
		{"scale 0 fits", "999", Decimal(3, 0), "999", ""},
		{"scale 0 rounds over", "999.5", Decimal(3, 0), "", "more than 3 digits"},

		// DECIMAL(38,10) keeps all 38 digits.
		{"38 digits", "1234567890123456789012345678.0123456789", d3810, "1234567890123456789012345678.0123456789", ""},
		{"38 digits negative", "-1234567890123456789012345678.0123456789", d3810, "-1234567890123456789012345678.0123456789", ""},
		{"38 digits as decimal", decimal.RequireFromString("9999999999999999999999999999.9999999999"), d3810, "9999999999999999999999999999.9999999999", ""},
		{"38,10 rounds the 11th digit", "0.00000000005", d3810, "0.0000000001", ""},
		{"38,10 29 integer digits", "12345678901234567890123456789", d3810, "", "more than 28 digits"},
		{"38,10 huge int", "1e40", d3810, "", "more than 28 digits"},

		// float64 goes through its shortest text, never its binary expansion.
		{"float 0.1", 0.1, d102, "0.10", ""},
		{"float 1500.1", 1500.1, d102, "1500.10", ""},
		{"float 0.1+0.2 at scale 2", pointThree, d102, "0.30", ""},
		{"float 0.1+0.2 at scale 20", pointThree, Decimal(38, 20), "0.30000000000000004000", ""},
		{"float 1.005 at scale 2", 1.005, d102, "1.01", ""},
		{"float tiny", 1e-7, d102, "0.00", ""},
		{"float large exponent", 1.5e20, Decimal(38, 0), "150000000000000000000", ""},
		{"float -Inf", math.Inf(-1), d102, "", "not a finite number"},

		{"text word", "12,50", d102, "", "not a decimal number"},
		{"text empty", "", d102, "", "not a decimal number"},
		{"bool", true, d102, "", "not a number"},
		{"time", time.Unix(0, 0), d102, "", "not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Coerce(tt.in, tt.typ)
			if tt.errReason != "" {
				var ve *ValueError
				if !errors.As(err, &ve) {
					t.Fatalf("Coerce(%v, %s) = %v, %v; want a *ValueError (%s)", tt.in, tt.typ, got, err, tt.errReason)
				}
				if !strings.Contains(ve.Reason, tt.errReason) {
					t.Errorf("reason %q, want it to contain %q", ve.Reason, tt.errReason)
				}
				if !errors.Is(err, ErrBadValue) {
					t.Errorf("%v does not wrap ErrBadValue", err)
				}
				if !sameInput(ve.Value, tt.in) {
					t.Errorf("ValueError.Value = %#v, want the value given, %#v", ve.Value, tt.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("Coerce(%v, %s): %v", tt.in, tt.typ, err)
			}
			d, ok := got.(decimal.Decimal)
			if !ok {
				t.Fatalf("Coerce(%v, %s) = %#v (%T), want a decimal.Decimal", tt.in, tt.typ, got, got)
			}
			if s := d.StringFixed(int32(tt.typ.Scale)); s != tt.want {
				t.Errorf("Coerce(%v, %s) = %s, want %s", tt.in, tt.typ, s, tt.want)
			}
			// The value itself is exact: no digits beyond the scale survive.
			if want := decimal.RequireFromString(tt.want); !d.Equal(want) {
				t.Errorf("Coerce(%v, %s) = %s, not equal to %s", tt.in, tt.typ, d.String(), tt.want)
			}
		})
	}
}

func TestFitDecimal(t *testing.T) {
	got, err := FitDecimal(decimal.RequireFromString("1.235"), Decimal(4, 2))
	if err != nil || got.String() != "1.24" {
		t.Errorf("FitDecimal(1.235, DECIMAL(4,2)) = %s, %v; want 1.24", got, err)
	}
	_, err = FitDecimal(decimal.RequireFromString("123.4"), Decimal(4, 2))
	var ve *ValueError
	if !errors.As(err, &ve) {
		t.Fatalf("FitDecimal(123.4, DECIMAL(4,2)) error %v, want *ValueError", err)
	}
	if ve.Reason != "more than 2 digits before the decimal point" {
		t.Errorf("reason %q", ve.Reason)
	}
	if ve.Type != Decimal(4, 2) {
		t.Errorf("ValueError.Type = %s, want DECIMAL(4,2)", ve.Type)
	}
}

func TestCoerceText(t *testing.T) {
	var tests []coerceCase
	for _, typ := range []Type{TypeString, varchar, char} {
		p := typ.String() + " "
		tests = append(tests,
			coerceCase{p + "text", "héllo, 世界", typ, "héllo, 世界", ""},
			coerceCase{p + "bytes kept exactly", "a\x00b\xff  ", typ, "a\x00b\xff  ", ""},
			coerceCase{p + "bytes", []byte("abc"), typ, "abc", ""},
			coerceCase{p + "empty", "", typ, "", ""},
			coerceCase{p + "int64", int64(-42), typ, "-42", ""},
			coerceCase{p + "int", 7, typ, "7", ""},
			coerceCase{p + "float", 0.1, typ, "0.1", ""},
			coerceCase{p + "bool", true, typ, "true", ""},
			coerceCase{p + "decimal", decimal.RequireFromString("1234.5"), typ, "1234.5", ""},
			coerceCase{p + "timestamp", time.Date(2024, 3, 10, 12, 34, 56, 0, time.FixedZone("", -8*3600)), typ, "2024-03-10 12:34:56-08:00", ""},
			coerceCase{p + "other", struct{}{}, typ, nil, "not text"},
		)
	}
	// VARCHAR(n) lengths are left to the backends.
	tests = append(tests, coerceCase{"long varchar", "more than ten characters", varchar, "more than ten characters", ""})
	runCoerce(t, tests, sameValue)
}

func TestCoerceBinary(t *testing.T) {
	runCoerce(t, []coerceCase{
		{"bytes", []byte{0, 1, 0xfe, 0xff}, TypeBinary, []byte{0, 1, 0xfe, 0xff}, ""},
		{"text", "ab\x00", TypeBinary, []byte{'a', 'b', 0}, ""},
		{"empty bytes", []byte{}, TypeBinary, []byte{}, ""},
		{"int", int64(1), TypeBinary, nil, "not binary"},
		{"bool", true, TypeBinary, nil, "not binary"},
	}, sameValue)
}

func TestCoerceDate(t *testing.T) {
	est := time.FixedZone("EST", -5*3600)
	ist := time.FixedZone("IST", 5*3600+1800)
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	runCoerce(t, []coerceCase{
		{"text", "2024-03-10", TypeDate, day(2024, 3, 10), ""},
		{"text padded", " 2024-02-29 ", TypeDate, day(2024, 2, 29), ""},
		{"bytes", []byte("1999-12-31"), TypeDate, day(1999, 12, 31), ""},
		{"text timestamp keeps its own day", "2024-03-10 23:30:00-05:00", TypeDate, day(2024, 3, 10), ""},
		{"text timestamp T", "2024-03-10T01:00:00+05:30", TypeDate, day(2024, 3, 10), ""},
		{"time UTC midnight", day(2024, 1, 1), TypeDate, day(2024, 1, 1), ""},
		{"time late in its zone", time.Date(2024, 3, 10, 23, 30, 0, 0, est), TypeDate, day(2024, 3, 10), ""},
		{"time early in its zone", time.Date(2024, 3, 10, 1, 0, 0, 0, ist), TypeDate, day(2024, 3, 10), ""},
		{"time with clock", time.Date(2024, 3, 10, 12, 34, 56, 789, time.UTC), TypeDate, day(2024, 3, 10), ""},
		{"text not a date", "10/03/2024", TypeDate, nil, "not a date"},
		{"text bad month", "2024-13-01", TypeDate, nil, "not a date"},
		{"text Feb 30", "2023-02-29", TypeDate, nil, "not a date"},
		{"int", int64(20240310), TypeDate, nil, "not a date"},
	}, func(got, want any) bool {
		g, ok := got.(time.Time)
		w := want.(time.Time)
		return ok && g.Equal(w) && g.Location() == time.UTC
	})
}

func TestCoerceTimestamp(t *testing.T) {
	ist := time.FixedZone("", 5*3600+1800)
	pst := time.FixedZone("", -8*3600)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		ny = time.FixedZone("EDT", -4*3600) // no tzdata: an equivalent fixed zone
	}
	inNY := time.Date(2024, 7, 1, 9, 0, 0, 0, ny)
	tests := []struct {
		name      string
		in        any
		want      time.Time
		offset    int // seconds east of UTC the result must be in
		errReason string
	}{
		{"time kept with its location", inNY, inNY, -4 * 3600, ""},
		{"time UTC", time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), 0, ""},
		{"text with zone", "2024-03-10 12:34:56.123456+05:30", time.Date(2024, 3, 10, 12, 34, 56, 123456000, ist), 5*3600 + 1800, ""},
		{"text negative zone", "2024-03-10 12:34:56-08:00", time.Date(2024, 3, 10, 12, 34, 56, 0, pst), -8 * 3600, ""},
		{"text RFC 3339 Z", "2024-03-10T12:34:56Z", time.Date(2024, 3, 10, 12, 34, 56, 0, time.UTC), 0, ""},
		{"text without zone is UTC", "2024-03-10 12:34:56", time.Date(2024, 3, 10, 12, 34, 56, 0, time.UTC), 0, ""},
		{"bytes", []byte("2024-03-10 12:34:56+05:30"), time.Date(2024, 3, 10, 12, 34, 56, 0, ist), 5*3600 + 1800, ""},
		{"text garbage", "yesterday", time.Time{}, 0, "not a timestamp"},
		{"int", int64(1710000000), time.Time{}, 0, "not a timestamp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Coerce(tt.in, TypeTimestamp)
			if tt.errReason != "" {
				var ve *ValueError
				if !errors.As(err, &ve) || !strings.Contains(ve.Reason, tt.errReason) {
					t.Fatalf("Coerce(%#v, TIMESTAMP) = %v, %v; want a *ValueError with %q", tt.in, got, err, tt.errReason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tm, ok := got.(time.Time)
			if !ok {
				t.Fatalf("Coerce(%#v, TIMESTAMP) = %T, want time.Time", tt.in, got)
			}
			if !tm.Equal(tt.want) {
				t.Errorf("Coerce(%#v, TIMESTAMP) = %v, want %v", tt.in, tm, tt.want)
			}
			if _, off := tm.Zone(); off != tt.offset {
				t.Errorf("Coerce(%#v, TIMESTAMP) is at offset %d, want %d (the zone written)", tt.in, off, tt.offset)
			}
		})
	}
	// A time.Time keeps its location, not just its offset.
	got, _ := Coerce(inNY, TypeTimestamp)
	if got.(time.Time).Location() != ny {
		t.Errorf("Coerce kept location %v, want %v", got.(time.Time).Location(), ny)
	}
}

func TestCoerceInvalidType(t *testing.T) {
	_, err := Coerce(int64(1), Type{})
	var ve *ValueError
	if !errors.As(err, &ve) || ve.Reason != "unsupported type" {
		t.Errorf("Coerce(1, INVALID) error %v, want a *ValueError \"unsupported type\"", err)
	}
}

func TestValueErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *ValueError
		want string
	}{
		{
			"key and column",
			&ValueError{Key: []any{int64(7)}, Column: "amount", Type: Decimal(10, 2), Value: "abc", Reason: "not a decimal number"},
			`row with key (7), column "amount": cannot store "abc" (text) as DECIMAL(10,2): not a decimal number`,
		},
		{
			"composite key",
			&ValueError{Key: []any{int64(1), "eu"}, Column: "qty", Type: Type{Kind: KindTinyInt}, Value: int64(300), Reason: "out of range"},
			`row with key (1, eu), column "qty": cannot store 300 (integer) as TINYINT: out of range`,
		},
		{
			"no key",
			&ValueError{Column: "paid", Type: TypeBoolean, Value: 2.5, Reason: "not a boolean"},
			`column "paid": cannot store 2.5 (floating point) as BOOLEAN: not a boolean`,
		},
		{
			"no column (as Coerce returns it)",
			&ValueError{Type: Decimal(10, 2), Value: "123456789", Reason: "more than 8 digits before the decimal point"},
			`cannot store "123456789" (text) as DECIMAL(10,2): more than 8 digits before the decimal point`,
		},
		{
			"decimal keeps its digits",
			&ValueError{Column: "amount", Type: Decimal(5, 2), Value: decimal.RequireFromString("3000.00"), Reason: "more than 3 digits before the decimal point"},
			`column "amount": cannot store 3000.00 (decimal) as DECIMAL(5,2): more than 3 digits before the decimal point`,
		},
		{
			"integral decimal",
			&ValueError{Column: "n", Type: TypeInt, Value: decimal.New(3, 10), Reason: "out of range"},
			`column "n": cannot store 30000000000 (decimal) as INT: out of range`,
		},
		{
			"timestamp",
			&ValueError{Column: "at", Type: TypeBoolean, Value: time.Date(2024, 3, 10, 12, 0, 0, 0, time.FixedZone("", 3600)), Reason: "not a boolean"},
			`column "at": cannot store 2024-03-10 12:00:00+01:00 (timestamp) as BOOLEAN: not a boolean`,
		},
		{
			"no reason",
			&ValueError{Column: "c", Type: TypeInt, Value: nil},
			`column "c": cannot store NULL as INT`,
		},
		{
			"bytes",
			&ValueError{Column: "blob", Type: TypeDate, Value: []byte{1, 2, 3}, Reason: "not a date"},
			`column "blob": cannot store 3 bytes as DATE: not a date`,
		},
		{
			"long text is cut",
			&ValueError{Column: "n", Type: TypeInt, Value: strings.Repeat("x", 45), Reason: "not an integer"},
			`column "n": cannot store "` + strings.Repeat("x", 40) + `…" (text) as INT: not an integer`,
		},
		{
			"long text is cut on a character boundary",
			&ValueError{Column: "n", Type: TypeInt, Value: "a" + strings.Repeat("é", 30), Reason: "not an integer"},
			`column "n": cannot store "a` + strings.Repeat("é", 19) + `…" (text) as INT: not an integer`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() =\n%s\nwant\n%s", got, tt.want)
			}
			if !errors.Is(tt.err, ErrBadValue) {
				t.Error("ValueError does not wrap ErrBadValue")
			}
		})
	}
}

// TestValueErrorFromCoerce fills in key and column as a caller does.
func TestValueErrorFromCoerce(t *testing.T) {
	_, err := Coerce("12.5x", Decimal(10, 2))
	var ve *ValueError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v, want *ValueError", err)
	}
	ve.Key, ve.Column = []any{int64(3)}, "amount"
	want := `row with key (3), column "amount": cannot store "12.5x" (text) as DECIMAL(10,2): not a decimal number`
	if got := err.Error(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestFormatValue(t *testing.T) {
	ist := time.FixedZone("", 5*3600+1800)
	pst := time.FixedZone("", -8*3600)
	tests := []struct {
		name string
		v    any
		typ  Type
		want string
	}{
		{"NULL", nil, Decimal(10, 2), "NULL"},
		{"NULL untyped", nil, Type{}, "NULL"},
		{"decimal 1500 at scale 2", decimal.NewFromInt(1500), Decimal(10, 2), "1500.00"},
		{"decimal pads", decimal.RequireFromString("1500.5"), Decimal(10, 2), "1500.50"},
		{"decimal negative fraction", decimal.RequireFromString("-0.5"), Decimal(10, 2), "-0.50"},
		{"decimal zero", decimal.Zero, Decimal(10, 2), "0.00"},
		{"decimal scale 0", decimal.NewFromInt(42), Decimal(10, 0), "42"},
		{"decimal 38,10", decimal.RequireFromString("1234567890123456789012345678.0123456789"), Decimal(38, 10), "1234567890123456789012345678.0123456789"},
		{"decimal 38,10 pads", decimal.RequireFromString("1.5"), Decimal(38, 10), "1.5000000000"},
		{"decimal unknown scale", decimal.RequireFromString("12.345"), Type{}, "12.345"},
		{"int64", int64(-9223372036854775808), TypeBigInt, "-9223372036854775808"},
		{"int", 42, TypeInt, "42"},
		{"bool true", true, TypeBoolean, "true"},
		{"bool false", false, TypeBoolean, "false"},
		{"float shortest", 0.1, TypeDouble, "0.1"},
		{"float sum", pointThree, TypeDouble, "0.30000000000000004"},
		{"float integral", 1500.0, TypeDouble, "1500"},
		{"float large", 1e21, TypeDouble, "1e+21"},
		{"text", "héllo", TypeString, "héllo"},
		{"text NULL word", "NULL", TypeString, "NULL"},
		{"binary", []byte{0xde, 0xad, 0x00, 0x0f}, TypeBinary, "0xdead000f"},
		{"binary empty", []byte{}, TypeBinary, "0x"},
		{"date", time.Date(2024, 3, 10, 0, 0, 0, 0, time.UTC), TypeDate, "2024-03-10"},
		{"timestamp UTC", time.Date(2024, 3, 10, 12, 34, 56, 0, time.UTC), TypeTimestamp, "2024-03-10 12:34:56+00:00"},
		{"timestamp zone and micros", time.Date(2024, 3, 10, 12, 34, 56, 123456000, ist), TypeTimestamp, "2024-03-10 12:34:56.123456+05:30"},
		{"timestamp negative zone, ms", time.Date(1999, 12, 31, 23, 59, 59, 500000000, pst), TypeTimestamp, "1999-12-31 23:59:59.5-08:00"},
		{"timestamp nanos", time.Date(2024, 3, 10, 0, 0, 0, 1, time.UTC), TypeTimestamp, "2024-03-10 00:00:00.000000001+00:00"},
		{"timestamp untyped", time.Date(2024, 3, 10, 1, 2, 3, 0, pst), Type{}, "2024-03-10 01:02:03-08:00"},
		{"other Go type", int32(5), TypeInt, "5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatValue(tt.v, tt.typ); got != tt.want {
				t.Errorf("FormatValue(%#v, %s) = %q, want %q", tt.v, tt.typ, got, tt.want)
			}
		})
	}
}

func TestParseTimestamp(t *testing.T) {
	ist := time.FixedZone("", 5*3600+1800)
	pst := time.FixedZone("", -8*3600)
	tests := []struct {
		in     string
		want   time.Time
		offset int
	}{
		{"2024-03-10T12:34:56Z", time.Date(2024, 3, 10, 12, 34, 56, 0, time.UTC), 0},
		{"2024-03-10T12:34:56.123456789+05:30", time.Date(2024, 3, 10, 12, 34, 56, 123456789, ist), 19800},
		{"2024-03-10T12:34:56-08:00", time.Date(2024, 3, 10, 12, 34, 56, 0, pst), -28800},
		{"2024-03-10 12:34:56+05:30", time.Date(2024, 3, 10, 12, 34, 56, 0, ist), 19800},
		{"2024-03-10 12:34:56.5-08:00", time.Date(2024, 3, 10, 12, 34, 56, 500000000, pst), -28800},
		{"2024-03-10 12:34:56Z", time.Date(2024, 3, 10, 12, 34, 56, 0, time.UTC), 0},
		{"2024-03-10 12:34:56 +05:30", time.Date(2024, 3, 10, 12, 34, 56, 0, ist), 19800},
		{"2024-03-10 12:34:56.25 -0800", time.Date(2024, 3, 10, 12, 34, 56, 250000000, pst), -28800},
		{"2024-03-10 12:34:56-08", time.Date(2024, 3, 10, 12, 34, 56, 0, pst), -28800},
		{"2024-03-10T12:34:56", time.Date(2024, 3, 10, 12, 34, 56, 0, time.UTC), 0},
		{"2024-03-10T12:34:56.000001", time.Date(2024, 3, 10, 12, 34, 56, 1000, time.UTC), 0},
		{"2024-03-10 12:34:56", time.Date(2024, 3, 10, 12, 34, 56, 0, time.UTC), 0},
		{"2024-03-10 12:34:56.999", time.Date(2024, 3, 10, 12, 34, 56, 999000000, time.UTC), 0},
		{"2024-03-10 12:34", time.Date(2024, 3, 10, 12, 34, 0, 0, time.UTC), 0},
		{"2024-03-10", time.Date(2024, 3, 10, 0, 0, 0, 0, time.UTC), 0},
		{"  2024-03-10 12:34:56  ", time.Date(2024, 3, 10, 12, 34, 56, 0, time.UTC), 0},
		// The form FormatTimestamp writes.
		{"2026-11-29 16:53:55.026+00:00", time.Date(2026, 11, 29, 16, 53, 55, 26000000, time.UTC), 0},
		// Astronomical years outside 0001–9999 (as FormatTimestamp writes
		// them) and PostgreSQL's " BC".
		{"-4712-01-01 00:00:00+00:00", time.Date(-4712, 1, 1, 0, 0, 0, 0, time.UTC), 0},
		{"0000-02-29 23:59:59.999999-08:00", time.Date(0, 2, 29, 23, 59, 59, 999999000, pst), -28800},
		{"-0001-12-31", time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC), 0},
		{"294276-12-31 23:59:59.999999+00:00", time.Date(294276, 12, 31, 23, 59, 59, 999999000, time.UTC), 0},
		{"+294276-12-31 23:59:59.999999", time.Date(294276, 12, 31, 23, 59, 59, 999999000, time.UTC), 0},
		{"5874897-12-31", time.Date(5874897, 12, 31, 0, 0, 0, 0, time.UTC), 0},
		{"4713-01-01 BC", time.Date(-4712, 1, 1, 0, 0, 0, 0, time.UTC), 0},
		{"0001-01-01 00:00:00+05:30 BC", time.Date(0, 1, 1, 0, 0, 0, 0, ist), 19800},
		{"0005-02-29 BC", time.Date(-4, 2, 29, 0, 0, 0, 0, time.UTC), 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTimestamp(tt.in)
			if err != nil {
				t.Fatalf("ParseTimestamp(%q): %v", tt.in, err)
			}
			if !got.Equal(tt.want) {
				t.Errorf("ParseTimestamp(%q) = %v, want %v", tt.in, got, tt.want)
			}
			if _, off := got.Zone(); off != tt.offset {
				t.Errorf("ParseTimestamp(%q) offset %d, want %d", tt.in, off, tt.offset)
			}
		})
	}
	for _, in := range []string{"", "yesterday", "12:34:56", "2024-13-01", "2024-03-10 25:00:00", "2024-03-10 12:34:56 PST", "2024/03/10", "20240310",
		"-2023-02-29", "0002-02-29 BC", "0000-01-01 BC", "-4712-01-01 BC", "12345", "-12-01-01", "2024-03-10 BC BC"} {
		t.Run("bad "+in, func(t *testing.T) {
			got, err := ParseTimestamp(in)
			if !errors.Is(err, ErrBadValue) {
				t.Errorf("ParseTimestamp(%q) = %v, %v; want an error wrapping ErrBadValue", in, got, err)
			}
		})
	}
}

// TestTimestampRoundTrip: what FormatTimestamp writes (SQLite storage)
// parses back to the same instant in the same zone offset.
func TestTimestampRoundTrip(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2024, 3, 10, 12, 34, 56, 0, time.UTC),
		time.Date(2024, 3, 10, 12, 34, 56, 123456789, time.FixedZone("", 5*3600+1800)),
		time.Date(1970, 1, 1, 0, 0, 0, 1000, time.FixedZone("", -12*3600)),
		time.Date(2024, 12, 31, 23, 59, 59, 999999000, time.FixedZone("", 14*3600)),
		time.Date(-4712, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 12, 31, 23, 59, 59, 999999000, time.FixedZone("", -3600)),
		time.Date(-99, 6, 1, 12, 0, 0, 0, time.UTC),
		time.Date(294276, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(5874897, 12, 31, 0, 0, 0, 0, time.UTC),
	} {
		s := FormatTimestamp(tm)
		got, err := ParseTimestamp(s)
		if err != nil {
			t.Errorf("ParseTimestamp(%q): %v", s, err)
			continue
		}
		_, off1 := tm.Zone()
		_, off2 := got.Zone()
		if !got.Equal(tm) || off1 != off2 {
			t.Errorf("%q parsed to %v, want %v", s, got, tm)
		}
	}
}

// TestFormatBC: a year before 1 AD is written as PostgreSQL writes it,
// which ParseTimestamp reads back; other years as FormatValue writes them.
func TestFormatBC(t *testing.T) {
	for _, tt := range []struct {
		v    time.Time
		typ  Type
		want string
	}{
		{time.Date(-4712, 1, 1, 0, 0, 0, 0, time.UTC), TypeDate, "4713-01-01 BC"},
		{time.Date(0, 12, 31, 23, 59, 59, 999999000, time.UTC), TypeTimestamp, "0001-12-31 23:59:59.999999+00:00 BC"},
		{time.Date(-9, 2, 3, 4, 5, 6, 0, time.FixedZone("", 3600)), TypeTimestamp, "0010-02-03 04:05:06+01:00 BC"},
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), TypeDate, "0001-01-01"},
		{time.Date(5874897, 12, 31, 0, 0, 0, 0, time.UTC), TypeDate, "5874897-12-31"},
	} {
		got := FormatBC(tt.v, tt.typ)
		if got != tt.want {
			t.Errorf("FormatBC(%v, %s) = %q, want %q", tt.v, tt.typ, got, tt.want)
		}
		back, err := ParseTimestamp(got)
		if err != nil || !back.Equal(tt.v) {
			t.Errorf("ParseTimestamp(%q) = %v, %v; want %v", got, back, err, tt.v)
		}
	}
}
