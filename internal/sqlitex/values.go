package sqlitex

import (
	"database/sql/driver"
	"fmt"
	"math"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
)

// TimestampLayout is how TIMESTAMP values are stored: the zone offset is
// kept ("2024-01-15 10:00:00.5+08:00"); fraction digits are trimmed. A
// year outside 0001–9999 is Go's astronomical year ("-4712" is 4713 BC,
// "0000" 1 BC; "294276" without a sign), as Encode documents.
const TimestampLayout = "2006-01-02 15:04:05.999999999-07:00"

// NTZLayout is how TIMESTAMP_NTZ (PostgreSQL's timestamp without time
// zone) values are stored: the wall clock, without a zone, as PostgreSQL
// prints it.
const NTZLayout = "2006-01-02 15:04:05.999999"

// Encode converts v to the value stored in a column of logical type t
// (docs/architecture.md "SQLite storage conventions"). v is first coerced to
// t's canonical form (cdc.Coerce), so loose inputs such as "12.5" for a
// DECIMAL are accepted. The result is:
//
//	NULL                        nil
//	integers                    int64
//	BOOLEAN                     int64 0 or 1
//	FLOAT DOUBLE                float64 (SQLite stores -0.0 as 0)
//	DECIMAL(p,s)                string with exactly s fraction digits ("1500.00")
//	STRING VARCHAR CHAR         string
//	DATE                        string "2006-01-02"
//	TIMESTAMP                   string in TimestampLayout, zone kept
//	TIMESTAMP_NTZ               string in NTZLayout (wall clock, no zone)
//	BINARY                      []byte
//	JSON UUID NATIVE            string, PostgreSQL's text of the value
//	NaN in FLOAT DOUBLE         string "NaN" (SQLite turns a REAL NaN into NULL)
//	cdc.Special                 string as PostgreSQL writes it ("infinity", "NaN", "-Infinity")
//
// A DATE or TIMESTAMP year outside 0001–9999 is written as ISO 8601's
// astronomical year ("-4712-01-01" for 4713 BC, "0000-…" for 1 BC,
// "294276-…"), which Decode (cdc.ParseTimestamp) reads back.
//
// It returns the *cdc.ValueError of cdc.Coerce (wrapping cdc.ErrBadValue)
// when v does not convert.
func Encode(v any, t cdc.Type) (driver.Value, error) {
	c, err := cdc.Coerce(v, t)
	if err != nil || c == nil {
		return nil, err
	}
	switch x := c.(type) {
	case bool:
		if x {
			return int64(1), nil
		}
		return int64(0), nil
	case decimal.Decimal:
		if t.Precision == 0 {
			return cdc.DecimalText(x), nil
		}
		return x.StringFixed(int32(t.Scale)), nil
	case cdc.Special:
		return x.Text(t), nil
	case float64:
		if math.IsNaN(x) {
			return "NaN", nil // SQLite stores a REAL NaN as NULL
		}
		return x, nil
	case time.Time:
		if t.Kind == cdc.KindDate {
			return x.Format(time.DateOnly), nil
		}
		if t.Native == cdc.TimestampNTZ {
			return x.Format(NTZLayout), nil
		}
		return x.Format(TimestampLayout), nil
	case int64, string, []byte:
		return x, nil
	}
	return nil, &cdc.ValueError{Type: t, Value: c, Reason: "no SQLite form"}
}

// EncodeRow encodes row (aligned with cols) with Encode. Errors name the
// column.
func EncodeRow(row []any, cols []cdc.Column) ([]any, error) {
	out := make([]any, len(row))
	for i, v := range row {
		e, err := Encode(v, cols[i].Type)
		if err != nil {
			return nil, columnErr(err, cols[i].Name)
		}
		out[i] = e
	}
	return out, nil
}

// Decode converts a value read from SQLite (nil, int64, float64, string,
// []byte, or time.Time) to the canonical Go value of logical type t
// (package cdc doc): DECIMAL text → decimal.Decimal (exact), TIMESTAMP text
// → time.Time in its stored zone (text without a zone is UTC), DATE text →
// time.Time at UTC midnight, BOOLEAN 0/1 → bool, BINARY → []byte (copied
// by database/sql when scanned into *any). It returns an error wrapping
// cdc.ErrBadValue for a value that does not convert.
func Decode(v any, t cdc.Type) (any, error) {
	if b, ok := v.([]byte); ok && t.Kind != cdc.KindBinary {
		v = string(b)
	} else if ok && b == nil {
		// The driver reads an empty BLOB as a nil slice; NULL is a nil
		// interface. An empty value stays empty.
		v = []byte{}
	}
	return cdc.Coerce(v, t)
}

// DecodeRow decodes row in place, column i with cols[i].Type. Errors name
// the column.
func DecodeRow(row []any, cols []cdc.Column) error {
	for i, v := range row {
		d, err := Decode(v, cols[i].Type)
		if err != nil {
			return columnErr(err, cols[i].Name)
		}
		row[i] = d
	}
	return nil
}

func columnErr(err error, col string) error {
	if ve, ok := err.(*cdc.ValueError); ok && ve.Column == "" {
		c := *ve
		c.Column = col
		return &c
	}
	return fmt.Errorf("column %q: %w", col, err)
}
