package sqlite

import (
	"testing"

	"github.com/sluicedata/sluice/cdc"
)

// TestCopyEncoders: each type's pass-through encoder writes a stored
// value in sluice's form as the COPY text PostgreSQL reads as the same
// value, and refuses every other stored value (the chunk then goes
// through sluice). Expected texts are PostgreSQL's COPY text format.
func TestCopyEncoders(t *testing.T) {
	dec := func(p, s int) cdc.Type { return cdc.Decimal(p, s) }
	for _, tc := range []struct {
		t    cdc.Type
		v    any
		want string // "" = refused
	}{
		{cdc.TypeBigInt, int64(-9223372036854775808), "-9223372036854775808"},
		{cdc.TypeBigInt, "12", ""},
		{cdc.TypeBigInt, 1.5, ""},
		{cdc.TypeInt, int64(2147483647), "2147483647"},
		{cdc.TypeInt, int64(2147483648), ""},
		{cdc.Type{Kind: cdc.KindTinyInt}, int64(-128), "-128"},
		{cdc.Type{Kind: cdc.KindTinyInt}, int64(128), ""},
		{cdc.TypeBoolean, int64(1), "t"},
		{cdc.TypeBoolean, int64(0), "f"},
		{cdc.TypeBoolean, int64(2), ""},
		{cdc.TypeBoolean, "true", ""},
		{cdc.TypeDouble, 0.1, "0.1"},
		{cdc.TypeDouble, 1e300, "1e+300"},
		{cdc.TypeDouble, int64(1), ""},
		{cdc.TypeDouble, "NaN", ""},
		{dec(12, 2), "1500.00", "1500.00"},
		{dec(12, 2), "-0.50", "-0.50"},
		{dec(2, 2), "0.50", "0.50"},
		{dec(12, 2), "2", ""},
		{dec(12, 2), "2.5", ""},
		{dec(12, 2), "02.50", ""},
		{dec(12, 2), "1e3", ""},
		{dec(12, 2), "+1.00", ""},
		{dec(12, 2), "12345678901.00", ""}, // 13 digits for precision 12
		{dec(12, 2), "1234567890.00", "1234567890.00"},
		{dec(12, 2), 2.5, ""},
		{dec(5, 0), "12345", "12345"},
		{dec(5, 0), "12345.0", ""},
		{cdc.TypeString, "a\tb\nc\rd\\e ✓'\"", `a\tb\nc\rd\\e ✓'"`},
		{cdc.TypeString, []byte("x"), ""},
		{cdc.TypeDate, "2024-02-29", "2024-02-29"},
		{cdc.TypeDate, "2024-2-29", ""},
		{cdc.TypeDate, "0000-01-01", ""},
		{cdc.TypeTimestamp, "2024-03-10 01:59:59+05:30", "2024-03-10 01:59:59+05:30"},
		{cdc.TypeTimestamp, "2024-03-10 01:59:59.123456-08:00", "2024-03-10 01:59:59.123456-08:00"},
		{cdc.TypeTimestamp, "2024-03-10 01:59:59.1234567+00:00", ""}, // PostgreSQL keeps microseconds
		{cdc.TypeTimestamp, "2024-03-10T01:59:59+00:00", ""},
		{cdc.TypeTimestamp, "2024-03-10 01:59:59Z", ""},
		{cdc.TypeTimestamp, "2024-03-10 01:59:59", ""},
		{cdc.TypeTimestamp, "2024-03-10 24:00:00+00:00", ""},
		{cdc.TypeTimestamp, "2024-03-10 23:59:60+00:00", ""},
		{cdc.Type{Kind: cdc.KindTimestamp, Native: cdc.TimestampNTZ}, "1999-12-31 23:59:59.5", "1999-12-31 23:59:59.5"},
		{cdc.Type{Kind: cdc.KindTimestamp, Native: cdc.TimestampNTZ}, "1999-12-31 23:59:59+00:00", ""},
		{cdc.TypeBinary, []byte{0, 0x5c, 0xff}, `\\x005cff`},
		{cdc.TypeBinary, "x", ""},
	} {
		_, enc := copyEncoder(tc.t)
		if enc == nil {
			t.Fatalf("%s: no encoder", tc.t)
		}
		b, ok := enc([]byte("x"), tc.v)
		got := ""
		if ok {
			got = string(b[1:])
		}
		if got != tc.want || ok != (tc.want != "") || !ok && string(b) != "x" {
			t.Errorf("%s %#v: %q, %v; want %q", tc.t, tc.v, got, ok, tc.want)
		}
	}
	for _, t0 := range []cdc.Type{{Kind: cdc.KindFloat}, {Kind: cdc.KindChar, Length: 3}, {Kind: cdc.KindJSON}, {Kind: cdc.KindUUID}} {
		if _, enc := copyEncoder(t0); enc != nil {
			t.Errorf("%s has an encoder; want none (refused up front)", t0)
		}
	}
}
