package runner

import (
	"fmt"
	"slices"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// The planning of the sinks that add columns of their own: mode history
// (__valid_from, __valid_to) and a merge with on_delete (__deleted_at).

// checkAddedColumns completes st for those sinks and refuses what they
// cannot do, with an error at the job file's position wrapping
// ErrSinkMode: a history fed by an APPEND_ONLY stream (it holds inserts
// only: an update or delete never reaches the history) or by partial rows
// (a version needs every column), and a projected column named like a
// column the sink adds.
func checkAddedColumns(p *plan.Plan, job *plan.Job, st *plan.SinkStage) error {
	if st.Mode == plan.ModeMerge && st.Merge == nil {
		st.OnDelete = job.Sink.OnDelete
		if st.OnDelete == "" {
			st.OnDelete = plan.OnDeleteDelete
		}
	}
	if st.Mode == plan.ModeHistory {
		if p.Source.Mode == dsl.ModeAppendOnly {
			return pos.Errorf(job.Sink.ModePos, "%w: mode history cannot read the APPEND_ONLY stream %s: it returns inserted rows only, so an update or a delete would never close a version; create the stream with 'TABLE_STREAM_MODE' = 'STANDARD'", ErrSinkMode, p.Source.Stream)
		}
		if st.PartialRows {
			return pos.Errorf(job.Sink.ModePos, "%w: mode history needs full rows, but stream %s delivers updates carrying only the changed columns; use mode merge", ErrSinkMode, p.Source.Stream)
		}
	}
	for _, c := range st.AddedColumns() {
		if st.Schema.Index(c) >= 0 {
			return pos.Errorf(job.Sink.ModePos, "%w: the projection has a column %s, which mode %s adds itself; rename it with AS", ErrSinkMode, c, st.Mode)
		}
	}
	return nil
}

// addedColumnWarnings are the plan's warnings about history and
// soft-delete sinks: a filter that drops the changes they record.
func addedColumnWarnings(p *plan.Plan) []string {
	var out []string
	dropped := func(op cdc.Op) bool { return p.Filter != nil && slices.Contains(p.Filter.Dropped, op) }
	switch {
	case p.Sink.Mode == plan.ModeHistory:
		if dropped(cdc.OpDelete) {
			out = append(out, fmt.Sprintf("history sink never sees DELETE changes: the version of a deleted source row stays current (%s NULL)", plan.ColValidTo))
		}
	case p.Sink.Mode == plan.ModeMerge && p.Sink.OnDelete == plan.OnDeleteSoft && dropped(cdc.OpDelete):
		out = append(out, fmt.Sprintf("on_delete soft never sees DELETE changes: %s is never set", plan.ColDeletedAt))
	}
	return out
}
