package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicedata/sluice/cdc"
)

// ValueText implements runner.ValueTexter: it returns a function that
// renders a canonical value read from this database as PostgreSQL's output
// function writes it — what `psql -At` prints for the same column:
//
//   - boolean "t" / "f"; bytea "\x00ff" (bytea_output = hex, the default);
//   - real and double precision in the shortest text that reads back
//     exactly (extra_float_digits ≥ 1, the default), exponential when the
//     decimal exponent is below -4 or at least 6 (real) / 15 (double):
//     "1.234567e+06", "1e+15"; "NaN", "Infinity", "-Infinity";
//   - numeric with its own digits, numeric(p,s) with s of them;
//   - date "2024-01-15", "4713-01-01 BC"; timestamp
//     "2024-01-15 10:00:00.5"; timestamptz in the session's TimeZone
//     (SHOW TimeZone, read once here) with the offset as PostgreSQL writes
//     it: "+05:30", "-03", "+05:53:28"; "infinity", "-infinity";
//   - every other type is read as PostgreSQL's own text already (see
//     resulttext.go) and printed as is.
//
// Dates and times follow DateStyle ISO, the default; a session with
// another DateStyle still prints ISO. A TimeZone Go cannot load (a POSIX
// rule such as "<+03>-03" that the Go time zone database lacks) prints
// timestamptz in UTC. The error is that of the SHOW query.
func (b *Backend) ValueText(ctx context.Context) (func(v any, t cdc.Type) string, error) {
	var zone string
	if err := b.pool.QueryRow(ctx, "SHOW TimeZone").Scan(&zone); err != nil {
		return nil, b.wrap(err, "show TimeZone")
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		loc = time.UTC
	}
	return func(v any, t cdc.Type) string { return ValueText(v, t, loc) }, nil
}

// ValueText renders v, a canonical value of logical type t as this package
// reads it, as PostgreSQL's output function does in a session whose
// TimeZone is loc (see Backend.ValueText). nil renders as "NULL".
func ValueText(v any, t cdc.Type, loc *time.Location) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "t"
		}
		return "f"
	case []byte:
		return `\x` + hex.EncodeToString(x)
	case float64:
		return floatText(x, t.Kind == cdc.KindFloat)
	case decimal.Decimal, cdc.Special:
		return cdc.FormatValue(v, t)
	case time.Time:
		switch {
		case t.Kind == cdc.KindDate:
			return isoText(x, false, "")
		case t.Native == cdc.TimestampNTZ:
			return isoText(x.UTC(), true, "")
		}
		x = x.In(loc)
		return isoText(x, true, zoneText(x))
	}
	return cdc.FormatValue(v, t)
}

// floatText is float4out / float8out with extra_float_digits ≥ 1
// (PostgreSQL's src/common/d2s.c and f2s.c): the shortest digits that
// read back exactly, in exponential form when the decimal exponent is
// below -4 or at least FLT_DIG (6) / DBL_DIG (15).
func floatText(f float64, single bool) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	bits, limit := 64, 15
	if single {
		bits, limit = 32, 6
	}
	e := strconv.FormatFloat(f, 'e', -1, bits)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if f != 0 && (exp < -4 || exp >= limit) {
		return e
	}
	return strconv.FormatFloat(f, 'f', -1, bits)
}

// isoText writes t as PostgreSQL's ISO DateStyle does: the date, with
// clock the time of day (microseconds, trailing zeros dropped), then zone;
// a year up to 0 (Go's astronomical numbering) as 1-year with " BC" after
// the zone ("0001-01-01 00:00:00+00 BC"); a year past 9999 in full.
func isoText(t time.Time, clock bool, zone string) string {
	y, mo, d := t.Date()
	era := ""
	if y <= 0 {
		y, era = 1-y, " BC"
	}
	s := fmt.Sprintf("%04d-%02d-%02d", y, int(mo), d)
	if clock {
		s += fmt.Sprintf(" %02d:%02d:%02d", t.Hour(), t.Minute(), t.Second())
		if us := t.Nanosecond() / 1000; us != 0 {
			s += strings.TrimRight(fmt.Sprintf(".%06d", us), "0")
		}
	}
	return s + zone + era
}

// zoneText is t's UTC offset as PostgreSQL writes it: "+05:30", "-03",
// "+00", "+05:53:28" (local mean time).
func zoneText(t time.Time) string {
	_, off := t.Zone()
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	b := []byte{sign}
	b = append(b, two(off/3600)...)
	if m, s := off/60%60, off%60; m != 0 || s != 0 {
		b = append(b, ':')
		b = append(b, two(m)...)
		if s != 0 {
			b = append(b, ':')
			b = append(b, two(s)...)
		}
	}
	return string(b)
}

func two(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}
