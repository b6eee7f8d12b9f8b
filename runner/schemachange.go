package runner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// schemaDiff is how the columns of a job's source table differ from its
// existing target's, for a job that projects every source column.
type schemaDiff struct {
	added   []cdc.Column        // source columns the target lacks
	widened []plan.ColumnChange // source columns of a wider type than the target's (cdc.Widens)
	gone    []string            // target columns the source lacks (besides those the mode adds)
}

func (d schemaDiff) empty() bool { return len(d.added)+len(d.widened)+len(d.gone) == 0 }

// projectsAll reports whether job projects every column of its source
// table under the table's own names: no select list, no INSERT column
// list, no SQL MERGE. Only such a job follows schema changes.
func projectsAll(job *plan.Job) bool {
	return len(job.Select) == 0 && len(job.Sink.Columns) == 0 && job.Sink.Merge == nil && !job.Sink.Stdout
}

// diffSchema compares the projected columns (the source table's, for a
// job that projects every column) with the existing target's columns.
// added are columns the mode writes itself (history's __valid_from, …),
// which the target has and the source does not.
func diffSchema(project []plan.ProjectItem, target cdc.Schema, added []string) schemaDiff {
	var d schemaDiff
	for _, it := range project {
		tc, ok := target.Column(it.Name)
		switch {
		case !ok:
			d.added = append(d.added, cdc.Column{Name: it.Name, Type: it.Type})
		case cdc.Widens(tc.Type, it.Type):
			d.widened = append(d.widened, plan.ColumnChange{Column: tc.Name, Type: it.Type, Widen: true, From: tc.Type})
		}
	}
	for _, tc := range target.Columns {
		if slices.ContainsFunc(project, func(it plan.ProjectItem) bool { return strings.EqualFold(it.Name, tc.Name) }) ||
			slices.ContainsFunc(added, func(a string) bool { return strings.EqualFold(a, tc.Name) }) {
			continue
		}
		d.gone = append(d.gone, tc.Name)
	}
	return d
}

// applySchemaPolicy applies the job's on_schema_change to a job that
// projects every column of its source table into an existing target
// (other jobs name their columns, and a missing one is the job's error):
//
//   - evolve: returns the target changes the run makes before writing
//     (new columns, widened types); a column the target has and the
//     source lacks stays, and later rows leave it out;
//   - fail: any difference is an error wrapping ErrSchemaChanged, at
//     plan time, so nothing is written and the offset does not move;
//   - ignore: removes the columns the target lacks from the projection
//     (prep's bound items too) and changes nothing else.
//
// addedCols are the columns the sink mode adds (plan.SinkStage.AddedColumns).
func applySchemaPolicy(prep *Prepared, policy plan.SchemaPolicy, target cdc.Schema, addedCols []string) ([]plan.ColumnChange, []string, error) {
	p, job := prep.Plan, prep.Plan.Job
	d := diffSchema(p.Project, target, addedCols)
	if d.empty() {
		return nil, nil, nil
	}
	switch policy {
	case plan.SchemaFail:
		var what []string
		for _, c := range d.added {
			what = append(what, fmt.Sprintf("column %s (%s) is new in %s", c.Name, c.Type, p.Source.Table))
		}
		for _, c := range d.widened {
			what = append(what, fmt.Sprintf("column %s is %s in %s but %s in %s", c.Column, c.Type, p.Source.Table, c.From, job.Sink.Table))
		}
		for _, c := range d.gone {
			what = append(what, fmt.Sprintf("column %s of %s is not in %s (dropped or renamed there)", c, job.Sink.Table, p.Source.Table))
		}
		at := job.Sink.OnSchemaChangePos
		if !at.IsValid() {
			at = job.Sink.TablePos
		}
		return nil, nil, pos.Errorf(at, "%w and on_schema_change is fail: %s; nothing was written and the offset did not move. To go on, alter %s to match, or set on_schema_change: evolve (the run adds and widens the columns) or ignore (the run writes the columns %s has)",
			ErrSchemaChanged, strings.Join(what, "; "), job.Sink.Table, job.Sink.Table)
	case plan.SchemaIgnore:
		var left []string
		for i := len(p.Project) - 1; i >= 0; i-- {
			if _, ok := target.Column(p.Project[i].Name); ok {
				continue
			}
			left = append([]string{p.Project[i].Name}, left...)
			p.Project = slices.Delete(p.Project, i, i+1)
			prep.project = slices.Delete(prep.project, i, i+1)
			prep.present = slices.Delete(prep.present, i, i+1)
		}
		return nil, left, nil
	}
	var out []plan.ColumnChange
	for _, c := range d.added {
		out = append(out, plan.ColumnChange{Column: c.Name, Type: c.Type})
	}
	return append(out, d.widened...), nil, nil
}
