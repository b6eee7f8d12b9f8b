package runner

import (
	"fmt"

	"github.com/sluicedata/sluice/cdc"
)

// narrowing returns the plan warnings for projected DECIMAL columns that
// an existing target column holds with fewer digits (projected: the
// sink's schema; target: the existing target's, as Target returns it).
// The sink fits each value to the target's type (cdc.FitDecimal): more
// decimal places are rounded half away from zero, and a value with more
// integer digits fails the run, naming the row's key and the column, with
// the offset left where it was.
func narrowing(projected, target cdc.Schema) []string {
	var out []string
	for _, c := range projected.Columns {
		tc, ok := target.Column(c.Name)
		if !ok || c.Type.Kind != cdc.KindDecimal || tc.Type.Kind != cdc.KindDecimal {
			continue
		}
		from, to := c.Type, tc.Type
		if from.Precision-from.Scale > to.Precision-to.Scale {
			out = append(out, fmt.Sprintf("column %s: the projected %s goes into the target's %s: a value with more than %d digits before the decimal point fails the run (the offset does not move)",
				c.Name, from, to, to.Precision-to.Scale))
		}
		if from.Scale > to.Scale {
			out = append(out, fmt.Sprintf("column %s: the projected %s goes into the target's %s: values are rounded to %d decimal places (half away from zero)",
				c.Name, from, to, to.Scale))
		}
	}
	return out
}
