package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// AddedColumnSource is a Source that can tell what the rows of its table
// that predate a column hold in it. The planner asks it about each column
// a run adds to an existing target (on_schema_change evolve), so that the
// target's rows hold what the source's rows of their keys hold, not NULL
// (issue #15: a run never succeeds with a value the source does not hold).
// A source without it leaves the new column NULL in the target's rows
// (plan.FillNull).
type AddedColumnSource interface {
	Source
	// AddedColumn returns how column col of s's table is filled in rows
	// written before it existed: plan.FillNull (the rows hold NULL),
	// plan.FillValue with the value every such row holds (canonical, of
	// the column's type in s.TableSchema), or plan.FillReread with the
	// table's SQL reference in the source's dialect (values differ by row:
	// a volatile, serial, identity or generated DEFAULT). Fill.Why names
	// the DEFAULT in words. Errors are the catalog read's.
	AddedColumn(ctx context.Context, s *StreamInfo, col string) (plan.Fill, error)
}

// fillAdded sets the Fill of each new column of evolve (ColumnChange with
// Widen false) from the job's source. A FillReread needs the row of each
// target key in the source table, which only a merge sink in the source's
// own database reaches (an UPDATE … FROM the source table by the merge
// keys, which must be the table's primary key); any other sink is refused
// with an error wrapping ErrColumnUnfillable at the sink's position in
// the job file, before anything is written.
func (r *Runner) fillAdded(ctx context.Context, prep *Prepared, sink Backend, evolve []plan.ColumnChange) error {
	src, ok := prep.source.(AddedColumnSource)
	if !ok {
		return nil
	}
	job := prep.Plan.Job
	for i := range evolve {
		c := &evolve[i]
		if c.Widen {
			continue
		}
		f, err := src.AddedColumn(ctx, prep.stream, c.Column)
		if err != nil {
			return fmt.Errorf("column %s added to %s: %w", c.Column, prep.stream.Table, err)
		}
		if f.Kind == plan.FillReread {
			if why := rereadRefusal(prep, sink, job); why != "" {
				at := job.Sink.TablePos
				return pos.Errorf(at, "%w: column %s was added to %s with %s, so each of its rows that predate it holds a value of its own, which no change carries, and %s; nothing was written and the offset did not move. To go on, add the column to %s yourself (ALTER TABLE … ADD COLUMN %s) and fill it as the source holds it: the next run writes %s for every change after that. Or set on_schema_change: ignore",
					ErrColumnUnfillable, c.Column, prep.stream.Table, f.Why, why, job.Sink.Table, c.Column, c.Column)
			}
		}
		c.Fill = f
	}
	return nil
}

// rereadRefusal says why the target's rows cannot be filled by key from
// the source table ("" when they can): a sink in another database, a mode
// other than merge, or merge keys that are not the source's primary key.
func rereadRefusal(prep *Prepared, sink Backend, job *plan.Job) string {
	switch {
	case sink.Scheme() != prep.source.Scheme() || sink.Identity() != prep.source.Identity():
		return fmt.Sprintf("%s is in another database than %s, which the run cannot read them from by key", job.Sink.Table, prep.stream.Table)
	case job.Sink.Mode != plan.ModeMerge || job.Sink.Merge != nil:
		return fmt.Sprintf("%s is not a merge target (mode merge with keys), whose rows the run could fill by key", job.Sink.Table)
	}
	keys := prep.stream.TableSchema.Key
	if len(keys) == 0 || len(keys) != len(job.Sink.Keys) {
		return fmt.Sprintf("the merge keys of %s are not the primary key of %s", job.Sink.Table, prep.stream.Table)
	}
	for _, k := range keys {
		if !slices.ContainsFunc(job.Sink.Keys, func(s string) bool { return strings.EqualFold(s, k) }) {
			return fmt.Sprintf("the merge keys of %s are not the primary key of %s", job.Sink.Table, prep.stream.Table)
		}
	}
	return ""
}
