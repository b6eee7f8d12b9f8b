package sqlite

import (
	"context"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// SetSteps sets the step sizes (log rows: first step, bounds of the later
// ones) of a pushdown plan of this package and a hook run after each
// committed step but the last; the hook's error ends the run there as a
// crash would.
func SetSteps(pp runner.PushdownPlan, first, lo, hi int64, after func(step int) error) {
	p := pp.(*pushPlan)
	p.sizes = stepSizes{first: first, min: lo, max: hi}
	p.afterStep = after
}

// CheckedColumnsOf is checkedColumns for plan p over the table of its
// stream as b's database declares it.
func CheckedColumnsOf(ctx context.Context, b *Backend, p *plan.Plan, table string) ([]string, error) {
	declared, err := declaredTypes(ctx, b.db, table)
	if err != nil {
		return nil, err
	}
	var ddl string
	if err := b.db.QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", table).Scan(&ddl); err != nil {
		return nil, err
	}
	return checkedColumns(p, declared, ddl), nil
}
