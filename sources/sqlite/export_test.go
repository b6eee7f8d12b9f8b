package sqlite

import "github.com/sluicedata/sluice/runner"

// SetSteps sets the step sizes (log rows: first step, bounds of the later
// ones) of a pushdown plan of this package and a hook run after each
// committed step but the last; the hook's error ends the run there as a
// crash would.
func SetSteps(pp runner.PushdownPlan, first, lo, hi int64, after func(step int) error) {
	p := pp.(*pushPlan)
	p.sizes = stepSizes{first: first, min: lo, max: hi}
	p.afterStep = after
}
