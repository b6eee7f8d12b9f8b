package rowhash_test

import (
	"context"
	"database/sql/driver"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/internal/rowhash"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestPostgresHashesAsGo: for values of every type whose text the two
// backends share, the canonical text and hash PostgreSQL computes in SQL
// (PGCanon, PGHash) equal the Go ones (Text, HashValues) that SQLite's
// functions use; values rowcmp calls equal hash equally.
func TestPostgresHashesAsGo(t *testing.T) {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	// A session's own zone; the DateStyle PGCanon needs (sources/postgres
	// sets it for a diff).
	if _, err := c.Exec(ctx, "SET TimeZone = 'Asia/Kolkata'; SET DateStyle = '"+rowhash.PGDateStyle+"'"); err != nil {
		t.Fatal(err)
	}
	berlin := time.FixedZone("CET", 3600)
	for _, tc := range []struct {
		pgType, literal string
		t               cdc.Type
		goValue         any
	}{
		{"bigint", "-9223372036854775808", cdc.TypeBigInt, int64(-9223372036854775808)},
		{"integer", "42", cdc.TypeInt, int64(42)},
		{"boolean", "true", cdc.TypeBoolean, true},
		{"boolean", "false", cdc.TypeBoolean, false},
		{"numeric(10,2)", "1.50", cdc.Decimal(10, 2), decimal.RequireFromString("1.5")},
		{"numeric(12,4)", "-0.0000", cdc.Decimal(12, 4), decimal.Zero},
		{"numeric", "123456789012345678901234567890.000100", cdc.TypeNumeric, decimal.RequireFromString("123456789012345678901234567890.0001")},
		{"numeric(10,0)", "100", cdc.Decimal(10, 0), decimal.New(1, 2)},
		{"text", "''", cdc.TypeString, ""},
		{"text", "'naïve 日本'", cdc.TypeString, "naïve 日本"},
		{"text", "'V3:abc'", cdc.TypeString, "V3:abc"},
		{"date", "'0099-03-01'", cdc.TypeDate, time.Date(99, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"date", "'4713-01-01 BC'", cdc.TypeDate, "-4712-01-01"},
		{"date", "'0001-12-31 BC'", cdc.TypeDate, "0000-12-31"},
		{"date", "'5874897-12-31'", cdc.TypeDate, "5874897-12-31"},
		{"timestamptz", "'4713-01-01 00:00:00+00 BC'", cdc.TypeTimestamp, "-4712-01-01 00:00:00+00:00"},
		{"timestamptz", "'0001-01-01 00:00:00.5+00'", cdc.TypeTimestamp, "0000-12-31 19:00:00.5-05:00"},
		{"timestamptz", "'294276-12-31 23:59:59.999999+00'", cdc.TypeTimestamp, "294276-12-31 23:59:59.999999+00:00"},
		{"timestamp", "'0001-01-01 00:00:00 BC'", cdc.Type{Kind: cdc.KindTimestamp, Native: cdc.TimestampNTZ}, "0000-01-01 00:00:00"},
		{"double precision", "'-0'", cdc.TypeDouble, 0.0}, {"double precision", "'0'", cdc.TypeDouble, math.Copysign(0, -1)},
		{"real", "'-0'", cdc.Type{Kind: cdc.KindFloat}, math.Copysign(0, -1)},
		{"timestamptz", "'2024-01-15 11:00:00.5+01'", cdc.TypeTimestamp, time.Date(2024, 1, 15, 10, 0, 0, 500_000_000, time.UTC).In(berlin)},
		{"timestamptz", "'2024-01-15 10:00:00+00'", cdc.TypeTimestamp, "2024-01-15 05:00:00-05:00"},
		{"timestamptz", "'2024-01-15 10:00:00.000001+00'", cdc.TypeTimestamp, time.Date(2024, 1, 15, 10, 0, 0, 1000, time.UTC)},
		{"timestamp", "'2024-01-15 10:00:00.25'", cdc.Type{Kind: cdc.KindTimestamp, Native: cdc.TimestampNTZ}, "2024-01-15 10:00:00.25"},
		{"bytea", "'\\x00ff10'", cdc.TypeBinary, []byte{0, 0xff, 0x10}},
		{"bytea", "''", cdc.TypeBinary, []byte{}},
		{"uuid", "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'", cdc.TypeUUID, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{"text", "NULL", cdc.TypeString, nil},
		{"date", "'infinity'", cdc.TypeDate, cdc.PosInfinity},
		{"date", "'-infinity'", cdc.TypeDate, cdc.NegInfinity},
		{"date", "NULL", cdc.TypeDate, nil},
		{"timestamptz", "'infinity'", cdc.TypeTimestamp, cdc.PosInfinity},
		{"timestamptz", "'-infinity'", cdc.TypeTimestamp, "-infinity"},
		{"timestamptz", "NULL", cdc.TypeTimestamp, nil},
		{"timestamp", "'-infinity'", cdc.Type{Kind: cdc.KindTimestamp, Native: cdc.TimestampNTZ}, cdc.NegInfinity},
		{"numeric", "'NaN'", cdc.TypeNumeric, "NaN"},
		{"numeric", "'-Infinity'", cdc.TypeNumeric, cdc.NegInfinity},
	} {
		name := tc.pgType + " " + tc.literal
		x := "(" + tc.literal + ")::" + tc.pgType
		canonSQL := rowhash.PGCanon(x, tc.t)
		var canon *string
		var h int64
		q := fmt.Sprintf("SELECT %s, %s", canonSQL, rowhash.PGHash([]string{canonSQL}))
		if err := c.QueryRow(ctx, q).Scan(&canon, &h); err != nil {
			t.Fatalf("%s: %s: %v", name, q, err)
		}
		want, ok := rowhash.Text(tc.goValue, tc.t)
		switch {
		case !ok && canon != nil:
			t.Errorf("%s: PostgreSQL text %q, Go NULL", name, *canon)
		case ok && (canon == nil || *canon != want):
			t.Errorf("%s: PostgreSQL text %v, Go %q", name, canon, want)
		}
		if gh := rowhash.HashValues([]any{tc.goValue}, []cdc.Type{tc.t}); gh != h {
			t.Errorf("%s: PostgreSQL hash %d, Go %d", name, h, gh)
		}
	}
}

// TestEncodingIsInjective: NULL, the empty string and texts that look
// like the encoding hash differently.
func TestEncodingIsInjective(t *testing.T) {
	types := []cdc.Type{cdc.TypeString, cdc.TypeString}
	seen := map[int64][]any{}
	for _, row := range [][]any{
		{nil, nil}, {"", nil}, {nil, ""}, {"", ""}, {"N", nil}, {"a", "b"}, {"ab", ""}, {"", "ab"}, {"V1:a", nil}, {"a", "V1:b"},
	} {
		h := rowhash.HashValues(row, types)
		if prev, dup := seen[h]; dup {
			t.Errorf("%q and %q hash alike", prev, row)
		}
		seen[h] = row
	}
}

// TestStoredTextFastPaths: SQLite's fast canonicalization of stored
// DECIMAL and TIMESTAMP text gives what the parsing path (Text) gives.
func TestStoredTextFastPaths(t *testing.T) {
	for _, tc := range []struct {
		v string
		t cdc.Type
	}{
		{"1.50", cdc.Decimal(10, 2)}, {"1.5", cdc.Decimal(10, 2)}, {"0.00", cdc.Decimal(10, 2)}, {"-0.00", cdc.Decimal(10, 2)},
		{"-7.25", cdc.Decimal(10, 2)}, {"100", cdc.Decimal(10, 0)}, {"100.000", cdc.TypeNumeric}, {"007.50", cdc.Decimal(10, 2)},
		{"-0.05", cdc.Decimal(10, 2)}, {"123456789012345678901234567890.0001000", cdc.TypeNumeric}, {"1e3", cdc.TypeNumeric},
		{".5", cdc.TypeNumeric}, {"5.", cdc.TypeNumeric}, {"NaN", cdc.TypeNumeric}, {"", cdc.TypeNumeric},
		{"2024-01-15 10:00:00+00:00", cdc.TypeTimestamp}, {"2024-01-15 10:00:00.5+00:00", cdc.TypeTimestamp},
		{"2024-01-15 10:00:00.123456789+00:00", cdc.TypeTimestamp}, {"2024-01-15 10:00:00.50+00:00", cdc.TypeTimestamp},
		{"2024-01-15 11:00:00.5+01:00", cdc.TypeTimestamp}, {"0099-03-01 00:00:00+00:00", cdc.TypeTimestamp},
		{"2024-01-15T10:00:00Z", cdc.TypeTimestamp}, {"2024-01-15 10:00:00", cdc.Type{Kind: cdc.KindTimestamp, Native: cdc.TimestampNTZ}},
	} {
		got := rowhash.HashValues([]any{tc.v}, []cdc.Type{tc.t})
		fn := rowhash.Functions[0].Func
		h, err := fn([]driver.Value{rowhash.TypesArgValue([]cdc.Type{tc.t}), tc.v})
		if err != nil {
			t.Fatalf("%q: %v", tc.v, err)
		}
		if h.(int64) != got {
			want, _ := rowhash.Text(tc.v, tc.t)
			t.Errorf("%q as %s: the SQLite function hashes differently from Text (%q)", tc.v, tc.t, want)
		}
	}
}
