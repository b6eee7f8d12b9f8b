package runner

import (
	"context"
	"fmt"

	"github.com/sluicedata/sluice/cdc"
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
// target key in the source table: a merge sink whose merge keys are the
// table's primary key reaches it, in the source's own database by SQL (an
// UPDATE … FROM the source table), in another through the run
// (fillColumns, Fill.Table ""); a merge on other keys is refused with an
// error wrapping ErrColumnUnfillable at the sink's position in the job
// file, before anything is written. A change target (append, history,
// SQL MERGE) holds images of changes delivered before the column existed,
// which no key names: they keep NULL, with a plan warning. gone are the
// target's columns the source lacks: a new column that would be NULL in
// the target's rows is read by key instead while there are any (it may be
// one of them renamed, whose values the rows hold under the old name).
func (r *Runner) fillAdded(ctx context.Context, prep *Prepared, sink Backend, evolve []plan.ColumnChange, gone []string) error {
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
		if f.Kind == plan.FillNull && len(gone) > 0 && job.Sink.Mode == plan.ModeMerge && job.Sink.Merge == nil {
			// The target has columns the source lacks: c may be one of
			// them renamed (RENAME COLUMN keeps each row's value, which
			// the target holds under the old name). Read it by key when
			// the target can be, which is exact whatever c is.
			if why, _ := rereadRefusal(prep, sink, job); why == "" {
				f.Kind, f.Why = plan.FillReread, "column, maybe renamed from "+strings.Join(gone, " or ")+" (a column of the target the source lacks)"
			}
		}
		if f.Kind == plan.FillReread {
			if job.Sink.Mode != plan.ModeMerge || job.Sink.Merge != nil {
				// A change target (append, history, …) holds images of
				// changes, not rows by key: the images delivered before
				// the column existed keep NULL in it.
				prep.Plan.Warnings = append(prep.Plan.Warnings, fmt.Sprintf("column %s was added to %s with %s: the rows %s holds already keep NULL in it (they are changes delivered before it existed, which no key of a merge target names); every change after the ALTER carries its value",
					c.Column, prep.stream.Table, f.Why, job.Sink.Table))
				f = plan.Fill{Kind: plan.FillNull, Why: f.Why}
				c.Fill = f
				continue
			}
			why, viaRun := rereadRefusal(prep, sink, job)
			if viaRun {
				// The run reads the column by key from the source
				// (fillColumns) and the sink sets it (ColumnFiller).
				f.Table = ""
			}
			if why != "" {
				at := job.Sink.TablePos
				return pos.Errorf(at, "%w: column %s was added to %s with %s, so each of its rows that predate it holds a value of its own, which no change carries, and %s; nothing was written and the offset did not move. To go on, add the column to %s yourself (ALTER TABLE … ADD COLUMN %s): the next run writes %s for every change after that, and the rows before keep what you give them. Or set on_schema_change: ignore",
					ErrColumnUnfillable, c.Column, prep.stream.Table, f.Why, why, job.Sink.Table, c.Column, c.Column)
			}
		}
		c.Fill = f
	}
	return nil
}

// rereadRefusal says why the target's rows cannot be filled by key from
// the source table ("" when they can): merge keys that are not the
// source's primary key, or a sink in another database that cannot fill
// columns. viaRun reports a merge
// target in another database (or a backend of its own), which the run
// fills by reading the source (fillColumns), when the sink and source can.
func rereadRefusal(prep *Prepared, sink Backend, job *plan.Job) (why string, viaRun bool) {
	keys := prep.stream.TableSchema.Key
	if len(keys) == 0 || len(keys) != len(job.Sink.Keys) {
		return fmt.Sprintf("the merge keys of %s are not the primary key of %s", job.Sink.Table, prep.stream.Table), false
	}
	for _, k := range keys {
		if !slices.ContainsFunc(job.Sink.Keys, func(s string) bool { return strings.EqualFold(s, k) }) {
			return fmt.Sprintf("the merge keys of %s are not the primary key of %s", job.Sink.Table, prep.stream.Table), false
		}
	}
	if sink.Scheme() == prep.source.Scheme() && sink.Identity() == prep.source.Identity() {
		return "", false
	}
	_, fills := prep.sink.(fillSink)
	_, snaps := prep.source.(Snapshotter)
	if !fills || !snaps {
		return fmt.Sprintf("%s is in another database than %s, and its sink cannot fill columns by key", job.Sink.Table, prep.stream.Table), false
	}
	return "", true
}

// fillSink marks a Sink whose transactions are ColumnFillers; only such a
// sink gets a FillReread with no table (filled through the run).
type fillSink interface {
	Sink
	FillsColumns() bool
}

// ColumnFiller is a SinkTx that sets columns of the target's existing
// rows by key: the fill of a new column with a value per row
// (plan.FillReread) whose source table is in another database, read by
// the run from the source (fillColumns).
type ColumnFiller interface {
	// FillColumns sets, in the sink transaction, the columns cols of the
	// target's row whose merge keys equal each row's first len(keys)
	// values to the row's other values (rows: keys then cols, canonical
	// values of the columns' types). A key the target lacks is left
	// alone. Errors: a value the column's type cannot hold (naming the
	// key and the column), or the database's.
	FillColumns(ctx context.Context, keys, cols []cdc.Column, rows [][]any) error
}

// fillChunk is the number of source rows fillColumns reads and hands to
// the sink at a time.
const fillChunk = 10000

// fillColumns fills, in the run's sink transaction tx and before any
// change is written, each new column of the plan whose FillReread has no
// table (a target in another database): it reads the source table's
// rows in primary-key order in one snapshot (Snapshotter) and lets the
// sink set the columns by key (ColumnFiller). The snapshot is taken now,
// at or after the run's read point: a key changed after it gets the
// newer value, and the next run delivers that change whole; the run's
// own changes, applied after the fill, win for their keys.
func (r *Runner) fillColumns(ctx context.Context, prep *Prepared, info *StreamInfo, from cdc.Offset, tx SinkTx) error {
	var cols []cdc.Column
	for _, c := range prep.Plan.Sink.Evolve {
		if !c.Widen && c.Fill.Kind == plan.FillReread && c.Fill.Table == "" {
			if sc, ok := info.TableSchema.Column(c.Column); ok {
				cols = append(cols, sc)
			}
		}
	}
	if len(cols) == 0 {
		return nil
	}
	filler, ok := tx.(ColumnFiller)
	snapper, ok2 := prep.source.(Snapshotter)
	if !ok || !ok2 {
		return fmt.Errorf("%w: the sink cannot fill the columns %v by key", ErrColumnUnfillable, cols)
	}
	var keys []cdc.Column
	var keyIdx, colIdx []int
	for _, k := range info.TableSchema.Key {
		keyIdx = append(keyIdx, info.TableSchema.Index(k))
		c, _ := info.TableSchema.Column(k)
		keys = append(keys, c)
	}
	for _, c := range cols {
		colIdx = append(colIdx, info.TableSchema.Index(c.Name))
	}
	snap, err := snapper.Snapshot(ctx, info, from)
	if err != nil {
		return fmt.Errorf("read the new columns of %s by key: %w", info.Table, err)
	}
	defer snap.Close()
	var after []any
	for {
		chunk, err := snap.Chunk(ctx, after, fillChunk)
		if err != nil {
			return fmt.Errorf("read the new columns of %s by key: %w", info.Table, err)
		}
		if len(chunk) == 0 {
			return nil
		}
		rows := make([][]any, len(chunk))
		for i, ch := range chunk {
			row := make([]any, 0, len(keyIdx)+len(colIdx))
			for _, k := range keyIdx {
				row = append(row, ch.Row[k])
			}
			for _, c := range colIdx {
				row = append(row, ch.Row[c])
			}
			rows[i] = row
		}
		if err := filler.FillColumns(ctx, keys, cols, rows); err != nil {
			return err
		}
		after = rows[len(rows)-1][:len(keyIdx)]
	}
}
