package stdout

import (
	"bufio"
	"io"
	"strings"

	"github.com/sluicedata/sluice/cdc"
)

// CSV writes a header line of column names, then one line per row (RFC
// 4180: fields separated by commas, lines ended by "\n", a field quoted
// with '"' when it holds a comma, quote, CR or LF or starts or ends with a
// space, a quote doubled inside). Values are cdc.FormatValue's text, as in
// Table but unescaped; NULL is an empty unquoted field and an empty string
// a quoted one (""), as PostgreSQL's COPY … (FORMAT csv) writes them.
func CSV(w io.Writer, cols []cdc.Column, rows [][]any) error {
	return CSVWith(w, cols, rows, nil)
}

// CSVWith is CSV with values in the text form of text (a backend's own,
// runner.ValueTexter) unless text is nil.
func CSVWith(w io.Writer, cols []cdc.Column, rows [][]any, text func(v any, t cdc.Type) string) error {
	if text == nil {
		text = cdc.FormatValue
	}
	bw := bufio.NewWriter(w)
	for i, c := range cols {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString(csvField(c.Name, c.Name == ""))
	}
	bw.WriteByte('\n')
	for _, r := range rows {
		for i := range cols {
			if i > 0 {
				bw.WriteByte(',')
			}
			var v any
			if i < len(r) {
				v = r[i]
			}
			if v == nil {
				continue
			}
			s := text(v, cols[i].Type)
			bw.WriteString(csvField(s, s == ""))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// csvField quotes s when CSV needs it, or when force is set.
func csvField(s string, force bool) string {
	if !force && !strings.ContainsAny(s, ",\"\r\n") && strings.TrimSpace(s) == s {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
