package sqlite

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
)

// copyReader turns one unescaped, non-NULL field of PostgreSQL COPY text
// into the value a SQLite target column stores (docs/architecture.md,
// "SQLite storage conventions"): the value sqlitex.Encode stores for the
// same PostgreSQL value read through sluice (sinks/postgres.Decode, then
// Encode with the target column's type). ok is false for a text the reader
// does not take (a NaN, an infinity, a BC date); the chunk then goes
// through sluice. A reader may return text sharing the field's bytes
// (fieldText): the caller keeps them unchanged until the value is
// inserted (copyFrom's arena).
type copyReader func(field []byte) (v any, ok bool)

// fieldText is f as a string sharing f's bytes, for a reader's text: the
// copy's values are bound (copied by the driver) before the bytes under
// them are reused, and a string per text field was a tenth of the copy's
// CPU (allocation and garbage collection).
func fieldText(f []byte) string { return unsafe.String(unsafe.SliceData(f), len(f)) }

// copyReaderFor returns the reader of a column of PostgreSQL type src (as
// format_type names it) into a target column of logical type dst, or nil
// when the pass-through does not write it (its value may need a
// conversion the reader would not make as sluice does: the rows then go
// through sluice). The pairs:
//
//	smallint, integer, bigint → the integer types that hold them: INTEGER
//	boolean → BOOLEAN: 0 or 1
//	double precision → DOUBLE: REAL (the text is the shortest that reads back exactly)
//	numeric(p,s) → DECIMAL(p2,s), p ≤ p2: the text as it is (exactly s fraction digits)
//	text, character varying[(n)] → STRING; character varying(n) → VARCHAR(m), n ≤ m: the text
//	bytea → BINARY: the bytes of its hex text (bytea_output hex)
//	jsonb, json, uuid, and the types stored as PostgreSQL's text (TEXT:<type>) from that type, except inet: the text
//	date → DATE: 'YYYY-MM-DD'
//	timestamp[(n)] with time zone → TIMESTAMP: the instant at UTC, sqlitex.TimestampLayout
//	timestamp[(n)] without time zone → TIMESTAMP_NTZ: the text as it is (sqlitex.NTZLayout)
func copyReaderFor(src string, dst cdc.Type) copyReader {
	src = strings.ToLower(strings.TrimSpace(src))
	switch dst.Kind {
	case cdc.KindBigInt:
		if src == "bigint" || src == "integer" || src == "smallint" {
			return readInt
		}
	case cdc.KindInt:
		if src == "integer" || src == "smallint" {
			return readInt
		}
	case cdc.KindSmallInt:
		if src == "smallint" {
			return readInt
		}
	case cdc.KindBoolean:
		if src == "boolean" {
			return readBool
		}
	case cdc.KindDouble:
		if src == "double precision" {
			return readDouble
		}
	case cdc.KindDecimal:
		p, s, ok := numericTypmod(src)
		if ok && dst.Precision > 0 && p <= dst.Precision && s == dst.Scale {
			return decimalReader(s)
		}
	case cdc.KindString:
		if dst.Native == "" && (src == "text" || strings.HasPrefix(src, "character varying")) {
			return readText
		}
	case cdc.KindVarchar:
		if n, ok := varcharLength(src); ok && n <= dst.Length {
			return readText
		}
	case cdc.KindBinary:
		if src == "bytea" {
			return readBytea
		}
	case cdc.KindJSON, cdc.KindUUID, cdc.KindNative:
		// PostgreSQL's text of the value, which sluice reads with a ::text
		// cast (inet through abbrev(), whose text differs).
		native := dst.Native
		if native == "" {
			native = map[cdc.Kind]string{cdc.KindJSON: "jsonb", cdc.KindUUID: "uuid"}[dst.Kind]
		}
		if native == src && src != "inet" {
			return readText
		}
	case cdc.KindDate:
		if src == "date" {
			return readDate
		}
	case cdc.KindTimestamp:
		base, zoned := strings.CutSuffix(src, " with time zone")
		if !zoned {
			base, _ = strings.CutSuffix(src, " without time zone")
		}
		if base != "timestamp" && !(strings.HasPrefix(base, "timestamp(") && strings.HasSuffix(base, ")")) {
			return nil
		}
		switch {
		case zoned && dst.Native == "":
			return readTimestamptz
		case !zoned && dst.Native == cdc.TimestampNTZ && base != src:
			return readTimestampNTZ
		}
	}
	return nil
}

// numericTypmod parses "numeric(p,s)".
func numericTypmod(src string) (p, s int, ok bool) {
	in, found := strings.CutPrefix(src, "numeric(")
	if !found {
		return 0, 0, false
	}
	in, found = strings.CutSuffix(in, ")")
	ps, ss, two := strings.Cut(in, ",")
	if !found || !two {
		return 0, 0, false
	}
	p, err1 := strconv.Atoi(ps)
	s, err2 := strconv.Atoi(ss)
	return p, s, err1 == nil && err2 == nil
}

// varcharLength parses "character varying(n)".
func varcharLength(src string) (int, bool) {
	in, found := strings.CutPrefix(src, "character varying(")
	if !found {
		return 0, false
	}
	in, found = strings.CutSuffix(in, ")")
	n, err := strconv.Atoi(in)
	return n, found && err == nil
}

// readInt reads a decimal integer (PostgreSQL prints no sign but '-',
// no leading zeros).
func readInt(f []byte) (any, bool) {
	neg := len(f) > 0 && f[0] == '-'
	d := f
	if neg {
		d = f[1:]
	}
	if len(d) == 0 || len(d) > 19 {
		return nil, false
	}
	var u uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return nil, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return -int64(u-1) - 1, true
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return nil, false
}

func readBool(f []byte) (any, bool) {
	if len(f) == 1 && f[0] == 't' {
		return int64(1), true
	}
	if len(f) == 1 && f[0] == 'f' {
		return int64(0), true
	}
	return nil, false
}

// readDouble reads a finite double; NaN and infinities go through sluice.
func readDouble(f []byte) (any, bool) {
	x, err := strconv.ParseFloat(string(f), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return nil, false
	}
	return x, true
}

// decimalReader reads numeric text with exactly scale fraction digits
// ("-12.50" for scale 2, "7" for scale 0): the storage form of
// DECIMAL(p,scale). NaN and infinities go through sluice.
func decimalReader(scale int) copyReader {
	return func(f []byte) (any, bool) {
		d := f
		if len(d) > 0 && d[0] == '-' {
			d = d[1:]
		}
		ip := len(d)
		if scale > 0 {
			ip = len(d) - scale - 1
			if ip < 1 || d[ip] != '.' || !allDigits(d[ip+1:]) {
				return nil, false
			}
		}
		if ip < 1 || !allDigits(d[:ip]) {
			return nil, false
		}
		return fieldText(f), true
	}
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func readText(f []byte) (any, bool) { return fieldText(f), true }

// readBytea reads bytea's hex text ("\x00ff").
func readBytea(f []byte) (any, bool) {
	if len(f) < 2 || f[0] != '\\' || f[1] != 'x' || len(f)%2 != 0 {
		return nil, false
	}
	out := make([]byte, (len(f)-2)/2)
	if _, err := hex.Decode(out, f[2:]); err != nil {
		return nil, false
	}
	return out, true
}

// readDate reads 'YYYY-MM-DD' (a four-digit year, no era).
func readDate(f []byte) (any, bool) {
	if !isDate(f) {
		return nil, false
	}
	return fieldText(f), true
}

func isDate(f []byte) bool {
	return len(f) == 10 && f[4] == '-' && f[7] == '-' && allDigits(f[:4]) && allDigits(f[5:7]) && allDigits(f[8:10])
}

// clockLen is the length of 'YYYY-MM-DD HH:MM:SS[.ffffff]' at the start
// of f, or 0 when f does not start so.
func clockLen(f []byte) int {
	if len(f) < 19 || !isDate(f[:10]) || f[10] != ' ' || f[13] != ':' || f[16] != ':' ||
		!allDigits(f[11:13]) || !allDigits(f[14:16]) || !allDigits(f[17:19]) {
		return 0
	}
	n := 19
	if n < len(f) && f[n] == '.' {
		j := n + 1
		for j < len(f) && j <= n+6 && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		if j == n+1 {
			return 0
		}
		n = j
	}
	return n
}

// readTimestampNTZ reads 'YYYY-MM-DD HH:MM:SS[.ffffff]', stored as it is
// (PostgreSQL trims fraction zeros as sqlitex.NTZLayout does).
func readTimestampNTZ(f []byte) (any, bool) {
	if n := clockLen(f); n == 0 || n != len(f) {
		return nil, false
	}
	return fieldText(f), true
}

// readTimestamptz reads 'YYYY-MM-DD HH:MM:SS[.ffffff]±HH[:MM[:SS]]' (the
// session's zone) and stores the instant at UTC in
// sqlitex.TimestampLayout, as sluice does for a timestamptz.
func readTimestamptz(f []byte) (any, bool) {
	n := clockLen(f)
	if n == 0 {
		return nil, false
	}
	zone := f[n:]
	if len(zone) == 3 && zone[0] == '+' && zone[1] == '0' && zone[2] == '0' {
		b := make([]byte, 0, n+6)
		b = append(append(b, f[:n]...), "+00:00"...)
		return fieldText(b), true // b is its own
	}
	if len(zone) < 3 || zone[0] != '+' && zone[0] != '-' || !allDigits(zone[1:3]) {
		return nil, false
	}
	off := int(zone[1]-'0')*36000 + int(zone[2]-'0')*3600
	for rest := zone[3:]; len(rest) > 0; rest = rest[3:] {
		if len(rest) < 3 || rest[0] != ':' || !allDigits(rest[1:3]) {
			return nil, false
		}
		v := int(rest[1]-'0')*10 + int(rest[2]-'0')
		if len(zone)-len(rest) == 3 {
			off += v * 60
		} else {
			off += v
		}
	}
	if zone[0] == '-' {
		off = -off
	}
	t, err := time.Parse("2006-01-02 15:04:05.999999999", string(f[:n]))
	if err != nil {
		return nil, false
	}
	return t.Add(-time.Duration(off) * time.Second).UTC().Format(sqlitex.TimestampLayout), true
}
