package rowcmp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/shopspring/decimal"
)

// JSONBText returns the text PostgreSQL's jsonb output gives the JSON
// document s (jsonb_out: PostgreSQL's src/backend/utils/adt/jsonb.c), so
// that equal documents written differently — spacing, key order,
// duplicate keys, escapes, number forms — have one canonical text on
// every backend: objects as {"k": v, …} with keys ordered by length, then
// byte by byte, the last of duplicate keys kept; arrays as [a, b];
// strings with only ", \, and control characters escaped (\b \f \n \r \t,
// else \u00xx); numbers as numeric_out writes them (1e2 → 100, 1.50 →
// 1.50, -0 → 0). ok is false when s is not one JSON document; the caller
// then keeps s as it is.
func JSONBText(s string) (out string, ok bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", false // trailing data
	}
	var b bytes.Buffer
	if err := writeJSONB(&b, v); err != nil {
		return "", false
	}
	return b.String(), true
}

func writeJSONB(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case json.Number:
		n, err := numericOut(string(x))
		if err != nil {
			return err
		}
		b.WriteString(n)
	case string:
		writeJSONBString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writeJSONB(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if len(keys[i]) != len(keys[j]) {
				return len(keys[i]) < len(keys[j])
			}
			return keys[i] < keys[j]
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONBString(b, k)
			b.WriteString(": ")
			if err := writeJSONB(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("unexpected JSON value %T", v)
	}
	return nil
}

// writeJSONBString writes s as PostgreSQL's escape_json does.
func writeJSONBString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// numericOut writes the JSON number literal n as PostgreSQL's numeric
// output does after reading it: exactly, with as many fractional digits
// as the literal's display scale (its fractional digits less its
// exponent, at least 0).
func numericOut(n string) (string, error) {
	d, err := decimal.NewFromString(n)
	if err != nil {
		return "", err
	}
	mant, exp := strings.ToLower(n), int64(0)
	if i := strings.IndexByte(mant, 'e'); i >= 0 {
		if _, err := fmt.Sscan(mant[i+1:], &exp); err != nil {
			return "", err
		}
		mant = mant[:i]
	}
	scale := int64(0)
	if _, frac, ok := strings.Cut(mant, "."); ok {
		scale = int64(len(frac))
	}
	scale -= exp
	if scale < 0 {
		scale = 0
	}
	return d.StringFixed(int32(scale)), nil
}
