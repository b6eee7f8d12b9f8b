package stdout

import (
	"strings"

	"github.com/rivo/uniseg"
)

// width is the display width of s in a terminal, by grapheme cluster
// (github.com/rivo/uniseg, after Unicode's East Asian Width and emoji
// properties): wide and fullwidth characters and emoji take two columns, a
// combining mark none.
func width(s string) int { return uniseg.StringWidth(s) }

// Ellipsis ends a cell cut by TableOptions.MaxCell.
const Ellipsis = "…"

// cut shortens s to at most maxw display columns, cutting between
// grapheme clusters and ending with Ellipsis; s is returned whole when it
// fits or maxw <= 0.
func cut(s string, maxw int) string {
	if maxw <= 0 || width(s) <= maxw {
		return s
	}
	var b strings.Builder
	w := 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		if w+g.Width() > maxw-1 {
			break
		}
		b.WriteString(g.Str())
		w += g.Width()
	}
	b.WriteString(Ellipsis)
	return b.String()
}
