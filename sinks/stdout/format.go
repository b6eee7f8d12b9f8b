// Package stdout prints rows for people and tools: an aligned table in the
// style of Spark's DataFrame.show() (the seed's output) or JSON Lines.
//
// Table and JSONL are the printers the CLI uses for `sluice sql` and
// `sluice preview` result sets. Backend is the "stdout" sink of jobs
// (URLs "stdout:", "stdout:table", "stdout:jsonl"): it prints the rows a run
// writes and stores no checkpoint, so a stdout run is a preview — it
// consumes nothing (Plan.Consumes reports false; the runner leaves the
// stream offset where it was).
//
// Values are canonical (package cdc) and print exactly: DECIMAL with its
// scale ("1500.00"), TIMESTAMP with its zone, NULL as NULL (JSON null).
package stdout

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
)

// Table writes rows under a header of cols as an aligned table like
// Spark's show(): '+---+' borders, the header and every cell right-aligned,
// columns at least 3 wide, no truncation (TableWith cuts long cells). Each
// cell is cdc.FormatValue of the value with its column type (DECIMAL at its
// scale "1500.00", TIMESTAMP "2024-01-15 10:00:00+08:00", DATE
// "2024-01-15", BINARY "0x…", NULL "NULL"); control characters in text are
// escaped (\n, \t, \x00) so that a row stays on one line. Widths are
// display columns by grapheme cluster (East Asian wide characters and
// emoji two, combining marks none). rows[i] is aligned with cols.
func Table(w io.Writer, cols []cdc.Column, rows [][]any) error {
	return TableWith(w, cols, rows, TableOptions{})
}

// TableOptions change how TableWith prints.
type TableOptions struct {
	// MaxCell cuts cells (not headers) wider than MaxCell display columns
	// to MaxCell, the last being Ellipsis; 0 prints every cell whole.
	MaxCell int
	// Text renders a value of a column type for its cell; nil is
	// cdc.FormatValue. A backend's own text form (runner.ValueTexter).
	Text func(v any, t cdc.Type) string
}

// TableWith is Table with options.
func TableWith(w io.Writer, cols []cdc.Column, rows [][]any, o TableOptions) error {
	text := o.Text
	if text == nil {
		text = cdc.FormatValue
	}
	cells := make([][]string, 0, len(rows)+1)
	head := make([]string, len(cols))
	for i, c := range cols {
		head[i] = escape(c.Name)
	}
	cells = append(cells, head)
	for _, r := range rows {
		line := make([]string, len(cols))
		for i := range cols {
			var v any
			if i < len(r) {
				v = r[i]
			}
			if v == nil {
				line[i] = "NULL"
			} else {
				line[i] = cut(escape(text(v, cols[i].Type)), o.MaxCell)
			}
		}
		cells = append(cells, line)
	}
	widths := make([]int, len(cols))
	for i := range widths {
		widths[i] = minWidth
	}
	for _, line := range cells {
		for i, s := range line {
			widths[i] = max(widths[i], width(s))
		}
	}
	bw := bufio.NewWriter(w)
	border := func() {
		bw.WriteByte('+')
		for _, n := range widths {
			bw.WriteString(strings.Repeat("-", n))
			bw.WriteByte('+')
		}
		bw.WriteByte('\n')
	}
	row := func(line []string) {
		bw.WriteByte('|')
		for i, s := range line {
			bw.WriteString(strings.Repeat(" ", widths[i]-width(s)))
			bw.WriteString(s)
			bw.WriteByte('|')
		}
		bw.WriteByte('\n')
	}
	border()
	row(cells[0])
	border()
	for _, line := range cells[1:] {
		row(line)
	}
	if len(cols) > 0 {
		border()
	}
	return bw.Flush()
}

// minWidth is Spark's minimum column width (the seed's "| id|").
const minWidth = 3

// escape makes control characters visible.
func escape(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// JSONL writes one JSON object per row, keys in column order. Values:
// NULL → null; integers and finite floats → numbers (NaN and ±Inf →
// strings "NaN", "+Inf", "-Inf"); BOOLEAN → true/false; DECIMAL → a string
// at its scale ("1500.00", exact); text → string; BINARY → base64 string;
// DATE → "2024-01-15"; TIMESTAMP → RFC 3339 with its zone
// ("2024-01-15T10:00:00.5+08:00", "…Z" for UTC).
func JSONL(w io.Writer, cols []cdc.Column, rows [][]any) error {
	return JSONLWith(w, cols, rows, nil)
}

// JSONLWith is JSONL with values in the text form of text (a backend's own,
// runner.ValueTexter) unless text is nil: NULL → null, BOOLEAN → true/false,
// integers → numbers, finite floats → numbers written as text writes them
// ("1e+15"), every other value → a string holding text's form ("NaN",
// "\\x00ff", "2024-01-15 10:00:00+05:30").
func JSONLWith(w io.Writer, cols []cdc.Column, rows [][]any, text func(v any, t cdc.Type) string) error {
	bw := bufio.NewWriter(w)
	var line []byte
	for _, r := range rows {
		line = appendObject(line[:0], cols, r, text)
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func appendObject(b []byte, cols []cdc.Column, row []any, text func(any, cdc.Type) string) []byte {
	b = append(b, '{')
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, c.Name)
		b = append(b, ':')
		var v any
		if i < len(row) {
			v = row[i]
		}
		if text != nil {
			b = appendText(b, v, c.Type, text)
		} else {
			b = appendValue(b, v, c.Type)
		}
	}
	return append(b, '}')
}

func appendString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// appendText appends v for JSONLWith.
func appendText(b []byte, v any, t cdc.Type, text func(any, cdc.Type) string) []byte {
	switch x := v.(type) {
	case nil, bool, int64, int:
		return appendValue(b, v, t)
	case float64:
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			return append(b, text(v, t)...)
		}
	}
	return appendString(b, text(v, t))
}

func appendValue(b []byte, v any, t cdc.Type) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case bool:
		return strconv.AppendBool(b, x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return appendString(b, strconv.FormatFloat(x, 'g', -1, 64))
		}
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case decimal.Decimal:
		return appendString(b, cdc.FormatValue(x, t))
	case string:
		return appendString(b, x)
	case []byte:
		return appendString(b, base64.StdEncoding.EncodeToString(x))
	case time.Time:
		if t.Kind == cdc.KindDate {
			return appendString(b, x.Format(time.DateOnly))
		}
		return appendString(b, x.Format(time.RFC3339Nano))
	}
	return appendString(b, fmt.Sprint(v))
}
