package cdc

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// Sentinel errors of package cdc.
var (
	ErrUnknownType = errors.New("unknown type")
	ErrBadType     = errors.New("bad type")
	ErrBadValue    = errors.New("value does not convert")
	ErrBadOffset   = errors.New("bad offset")
)

// ValueError is a value that does not fit its column: it names the row's key
// (when known) and the column. It wraps ErrBadValue.
type ValueError struct {
	Key []any // the row's primary-key values, nil when unknown
	// KeyNames are the key columns' names, aligned with Key; the message
	// shows "(id=3)" with them, "(3)" without.
	KeyNames []string
	Column   string // the column name
	Type     Type   // the column's type
	Value    any    // the offending value
	Reason   string // why it does not convert
}

func (e *ValueError) Error() string {
	var b strings.Builder
	if len(e.Key) > 0 {
		b.WriteString("row with key (")
		for i, k := range e.Key {
			if i > 0 {
				b.WriteString(", ")
			}
			if len(e.KeyNames) == len(e.Key) {
				b.WriteString(e.KeyNames[i] + "=")
			}
			fmt.Fprintf(&b, "%v", k)
		}
		b.WriteString("), ")
	}
	if e.Column != "" {
		fmt.Fprintf(&b, "column %q: ", e.Column)
	}
	fmt.Fprintf(&b, "cannot store %s as %s", describe(e.Value), e.Type)
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	return b.String()
}

// Unwrap returns ErrBadValue.
func (e *ValueError) Unwrap() error { return ErrBadValue }

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		if len(x) > 40 {
			n := 40
			for n > 0 && !utf8.RuneStart(x[n]) { // cut on a character boundary
				n--
			}
			x = x[:n] + "…"
		}
		return fmt.Sprintf("%q (text)", x)
	case []byte:
		return fmt.Sprintf("%d bytes", len(x))
	case decimal.Decimal:
		// With its own scale: 3000.00, not %v's 3000.
		return DecimalText(x) + " (decimal)"
	case time.Time:
		return FormatTimestamp(x) + " (timestamp)"
	case Special:
		return string(x)
	case int64, int, int32, int16:
		return FormatValue(v, Type{}) + " (integer)"
	case float64, float32:
		return FormatValue(v, Type{}) + " (floating point)"
	case bool:
		return FormatValue(v, Type{}) + " (boolean)"
	default:
		// Never a Go type name: the value as text.
		return fmt.Sprint(v)
	}
}
