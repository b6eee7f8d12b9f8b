package sqlite

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
)

// TestCopyReaders: each reader stores what Encode stores for the value
// PostgreSQL's text names (computed here from time.Time and literals, not
// by the readers), and refuses the texts sluice must convert itself.
func TestCopyReaders(t *testing.T) {
	kathmandu := time.FixedZone("", 5*3600+45*60)
	lmt := time.FixedZone("", 5*3600+41*60+16)
	newYork := time.FixedZone("", -5*3600)
	enc := func(tm time.Time) any {
		v, err := sqlitex.Encode(tm.UTC(), cdc.TypeTimestamp)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		src  string
		dst  cdc.Type
		text string
		want any // nil: refused
	}{
		{"bigint", cdc.TypeBigInt, "-9223372036854775808", int64(-9223372036854775808)},
		{"bigint", cdc.TypeBigInt, "9223372036854775807", int64(9223372036854775807)},
		{"bigint", cdc.TypeBigInt, "9223372036854775808", nil},
		{"integer", cdc.TypeBigInt, "-42", int64(-42)},
		{"smallint", cdc.Type{Kind: cdc.KindSmallInt}, "7", int64(7)},
		{"boolean", cdc.TypeBoolean, "t", int64(1)},
		{"boolean", cdc.TypeBoolean, "f", int64(0)},
		{"double precision", cdc.TypeDouble, "0.1", 0.1},
		{"double precision", cdc.TypeDouble, "-1.5e+300", -1.5e300},
		{"double precision", cdc.TypeDouble, "NaN", nil},
		{"double precision", cdc.TypeDouble, "-Infinity", nil},
		{"numeric(12,2)", cdc.Decimal(12, 2), "-1234.50", "-1234.50"},
		{"numeric(12,2)", cdc.Decimal(14, 2), "0.00", "0.00"},
		{"numeric(12,2)", cdc.Decimal(12, 2), "NaN", nil},
		{"numeric(9,0)", cdc.Decimal(9, 0), "-7", "-7"},
		{"text", cdc.TypeString, "a\tb", "a\tb"},
		{"character varying(5)", cdc.Type{Kind: cdc.KindVarchar, Length: 9}, "abc", "abc"},
		{"date", cdc.TypeDate, "0999-01-31", "0999-01-31"},
		{"date", cdc.TypeDate, "2024-01-31 BC", nil},
		{"date", cdc.TypeDate, "infinity", nil},
		{"date", cdc.TypeDate, "12024-01-31", nil},
		{"timestamp with time zone", cdc.TypeTimestamp, "2024-01-15 10:00:00.5+00", enc(time.Date(2024, 1, 15, 10, 0, 0, 5e8, time.UTC))},
		{"timestamp with time zone", cdc.TypeTimestamp, "2024-01-15 10:00:00+05:45", enc(time.Date(2024, 1, 15, 10, 0, 0, 0, kathmandu))},
		{"timestamp with time zone", cdc.TypeTimestamp, "1850-01-15 00:10:00.000001+05:41:16", enc(time.Date(1850, 1, 15, 0, 10, 0, 1000, lmt))},
		{"timestamp with time zone", cdc.TypeTimestamp, "2024-01-01 02:00:00.123-05", enc(time.Date(2024, 1, 1, 2, 0, 0, 123e6, newYork))},
		{"timestamp with time zone", cdc.TypeTimestamp, "2024-01-15 10:00:00+00 BC", nil},
		{"timestamp with time zone", cdc.TypeTimestamp, "infinity", nil},
		{"timestamp without time zone", cdc.Type{Kind: cdc.KindTimestamp, Native: cdc.TimestampNTZ}, "2024-01-15 10:00:00.25", "2024-01-15 10:00:00.25"},
		{"bytea", cdc.TypeBinary, `\x00ff5c`, []byte{0, 0xff, 0x5c}},
		{"bytea", cdc.TypeBinary, `\x0`, nil},
		{"jsonb", cdc.TypeJSON, `{"a": 1}`, `{"a": 1}`},
		{"integer[]", cdc.NativeType("integer[]"), `{1,NULL}`, `{1,NULL}`},
	} {
		t.Run(fmt.Sprintf("%s %s", tc.src, tc.text), func(t *testing.T) {
			r := copyReaderFor(tc.src, tc.dst)
			if r == nil {
				t.Fatalf("no reader from %s to %s", tc.src, tc.dst)
			}
			got, ok := r([]byte(tc.text))
			if tc.want == nil {
				if ok {
					t.Fatalf("read %q as %#v; want it refused", tc.text, got)
				}
				return
			}
			if !ok || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tc.want) {
				t.Errorf("read %q as %#v (%t); want %#v", tc.text, got, ok, tc.want)
			}
		})
	}
}

// TestCopyReaderRefusesTypes: pairs whose values sluice converts are not
// read as they are.
func TestCopyReaderRefusesTypes(t *testing.T) {
	for _, tc := range []struct {
		src string
		dst cdc.Type
	}{
		{"bigint", cdc.TypeInt},
		{"numeric(12,2)", cdc.Decimal(12, 3)},
		{"numeric(14,2)", cdc.Decimal(12, 2)},
		{"numeric", cdc.Decimal(12, 2)},
		{"numeric", cdc.TypeNumeric},
		{"character varying(10)", cdc.Type{Kind: cdc.KindVarchar, Length: 9}},
		{"text", cdc.Type{Kind: cdc.KindVarchar, Length: 9}},
		{"real", cdc.Type{Kind: cdc.KindFloat}},
		{"timestamp with time zone", cdc.Type{Kind: cdc.KindTimestamp, Native: cdc.TimestampNTZ}},
		{"timestamp without time zone", cdc.TypeTimestamp},
		{"inet", cdc.NativeType("inet")},
		{"json", cdc.TypeJSON},
	} {
		if copyReaderFor(tc.src, tc.dst) != nil {
			t.Errorf("%s → %s: read as it is; want refused", tc.src, tc.dst)
		}
	}
}

// TestUnescapeCopy: COPY text's backslash escapes.
func TestUnescapeCopy(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:            "plain",
		`a\tb\nc\\d\re`:    "a\tb\nc\\d\re",
		`\b\f\v`:           "\b\f\v",
		`\101\60x\x41\x4g`: "A0xA\x04g",
		`\q\N`:             "qN",
		`end\`:             `end\`,
		`\xzz`:             "xzz",
	} {
		if got := string(unescapeCopy([]byte(in))); got != want {
			t.Errorf("unescape %q = %q, want %q", in, got, want)
		}
	}
}
