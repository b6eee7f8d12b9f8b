package runner

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// Prepared is a plan ready to run: the printable Plan plus the compiled
// objects that execute exactly its steps.
type Prepared struct {
	Plan *plan.Plan

	source   Source
	sink     Sink
	stream   *StreamInfo
	filter   *expr.Bound
	project  []*expr.Bound
	present  [][]int // per projected column, the table columns it reads (for partial rows)
	sinkPlan SinkPlan
	push     PushdownPlan
}

func expandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	return dsl.ExpandEnv(s, lookup)
}

// Setup executes a job's setup statements (SQL job files: the statements
// before the consuming one) on the job's source connection, in order.
func (r *Runner) Setup(ctx context.Context, job *plan.Job) error {
	if len(job.Setup) == 0 {
		return nil
	}
	b, err := r.JobBackend(ctx, job, job.Conn)
	if err != nil {
		return err
	}
	ex, ok := b.(Executor)
	if !ok {
		return fmt.Errorf("job %s: %s connections cannot run setup statements", job.Name, b.Scheme())
	}
	for _, st := range job.Setup {
		stmts, err := dsl.ParseStatementsAt(st.Pos, st.Text)
		if err != nil {
			return err
		}
		for _, s := range stmts {
			if _, err := ex.Exec(ctx, s); err != nil {
				return pos.Errorf(s.Position(), "%w", err)
			}
		}
	}
	return nil
}

// Plan binds job to its databases: it describes the source stream, binds
// and type-checks the filter and projection, describes the target, and
// compiles what the run will execute. It reads catalogs but writes nothing.
// Errors in the job (unknown columns, bad expressions, missing keys) are
// returned together as a pos.List with file:line:col.
func (r *Runner) Plan(ctx context.Context, job *plan.Job) (*Prepared, error) {
	srcB, err := r.JobBackend(ctx, job, job.Conn)
	if err != nil {
		return nil, err
	}
	src, ok := srcB.(Source)
	if !ok {
		return nil, fmt.Errorf("job %s: %w: %s", job.Name, ErrNotSource, srcB.Scheme())
	}
	info, err := src.Stream(ctx, job.Source)
	if err != nil {
		return nil, pos.Errorf(job.Source.Pos, "%w", err)
	}
	streamSchema := cdc.StreamSchema(info.TableSchema)
	p := &plan.Plan{
		Job: job,
		Source: plan.SourceStage{
			Conn: srcB.Redacted(), Backend: srcB.Scheme(), Stream: info.Name, Table: info.Table,
			Mode: info.Mode, Schema: streamSchema, TableSchema: info.TableSchema,
		},
	}
	prep := &Prepared{Plan: p, source: src, stream: info}
	for _, st := range job.Setup {
		p.Setup = append(p.Setup, st.Text)
	}

	var errs pos.List
	scope := expr.Scope{{Alias: info.Name, Schema: streamSchema}}
	if job.Filter != nil {
		if b, err := bindExpr(job.Filter.Text, job.Filter.Pos, scope); err != nil {
			errs.Append(job.Filter.Pos, err)
		} else if t := b.Type(); t.Kind != cdc.KindBoolean {
			errs.Add(job.Filter.Pos, "filter must be a condition (BOOLEAN), not %s", t)
		} else {
			prep.filter = b
			p.Filter = &plan.FilterStage{Text: job.Filter.Text, Expr: b, Dropped: droppedOps(b)}
		}
	}
	r.bindProjection(prep, scope, &errs)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if err := r.planSink(ctx, prep, srcB); err != nil {
		return nil, err
	}
	if err := r.planExecution(ctx, prep, srcB); err != nil {
		return nil, err
	}
	if err := planDeadLetter(prep); err != nil {
		return nil, err
	}
	p.Warnings = append(p.Warnings, warnings(p)...)
	return prep, nil
}

func bindExpr(text string, at pos.Pos, scope expr.Scope) (*expr.Bound, error) {
	e, err := expr.Parse(text, at)
	if err != nil {
		return nil, err
	}
	return e.Bind(scope)
}

// bindProjection binds the select items; an empty select list projects
// every table column.
func (r *Runner) bindProjection(prep *Prepared, scope expr.Scope, errs *pos.List) {
	p := prep.Plan
	items := p.Job.Select
	if len(items) == 0 {
		for _, c := range prep.stream.TableSchema.Columns {
			items = append(items, plan.SelectItem{Expr: plan.Expr{Text: quoteIdent(c.Name), Pos: p.Job.Pos}})
		}
	}
	seen := map[string]pos.Pos{}
	for _, it := range items {
		e, name, err := expr.ParseSelectItem(it.Expr.Text, it.Expr.Pos)
		if err != nil {
			errs.Append(it.Expr.Pos, err)
			continue
		}
		if it.Alias != "" {
			name = it.Alias
		}
		b, err := e.Bind(scope)
		if err != nil {
			errs.Append(it.Expr.Pos, err)
			continue
		}
		key := strings.ToLower(name)
		if prev, dup := seen[key]; dup {
			errs.Add(it.Expr.Pos, "column %q is projected twice (first at %s); give one an alias", name, prev)
			continue
		}
		seen[key] = it.Expr.Pos
		var reads []int
		for _, ref := range b.Columns() {
			if ref.Col >= len(cdc.MetadataColumns) {
				reads = append(reads, ref.Col-len(cdc.MetadataColumns))
			}
		}
		prep.project = append(prep.project, b)
		prep.present = append(prep.present, reads)
		p.Project = append(p.Project, plan.ProjectItem{Name: name, Text: stripAlias(it.Expr.Text, name), Type: b.Type(), Expr: b})
	}
}

// stripAlias returns a select item's expression text without its trailing
// "AS name" (the name is shown separately).
func stripAlias(item, name string) string {
	re := regexp.MustCompile("(?is)^(.*?)\\s+AS\\s+[`\"]?" + regexp.QuoteMeta(name) + "[`\"]?\\s*$")
	if m := re.FindStringSubmatch(strings.TrimSpace(item)); m != nil {
		return m[1]
	}
	return strings.TrimSpace(item)
}

// quoteIdent backquotes a column name for re-parsing in the dialect.
func quoteIdent(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// droppedOps lists the change types the filter never keeps.
func droppedOps(b *expr.Bound) []cdc.Op {
	keep := expr.PossibleOps(b, 0, 0)
	var out []cdc.Op
	for _, op := range []cdc.Op{cdc.OpInsert, cdc.OpUpdateBefore, cdc.OpUpdateAfter, cdc.OpDelete} {
		if !slices.Contains(keep, op) {
			out = append(out, op)
		}
	}
	return out
}

// planSink resolves the sink stage: its backend, target and projected
// schema.
func (r *Runner) planSink(ctx context.Context, prep *Prepared, srcB Backend) error {
	p, job := prep.Plan, prep.Plan.Job
	conn := job.Sink.Conn
	if job.Sink.Stdout {
		conn = "stdout:" + job.Sink.Format
	} else if conn == "" {
		conn = job.Conn
	}
	b, err := r.sinkBackend(ctx, job, conn)
	if err != nil {
		return pos.Errorf(job.Sink.ConnPos, "%w", err)
	}
	sink, ok := b.(Sink)
	if !ok {
		return pos.Errorf(job.Sink.ConnPos, "%w: %s", ErrNotSink, b.Scheme())
	}
	prep.sink = sink
	mode := job.Sink.Mode
	if mode == "" {
		mode = plan.ModeAppend
	}
	var target cdc.Schema
	var exists bool
	var policy plan.SchemaPolicy
	var evolve []plan.ColumnChange
	if !job.Sink.Stdout {
		if target, exists, err = sink.Target(ctx, job.Sink.Table); err != nil {
			return pos.Errorf(job.Sink.TablePos, "%w", err)
		}
		policy = job.Sink.OnSchemaChange
		if policy == "" {
			policy = plan.SchemaEvolve
		}
		writes := mode != plan.ModeIgnore && mode != plan.ModeErrorIfExists
		if exists && writes && projectsAll(job) {
			onDelete := job.Sink.OnDelete
			if mode == plan.ModeMerge && onDelete == "" {
				onDelete = plan.OnDeleteDelete
			}
			modeCols := (&plan.SinkStage{Mode: mode, OnDelete: onDelete}).AddedColumns()
			var left []string
			if evolve, left, err = applySchemaPolicy(prep, policy, target, modeCols); err != nil {
				return err
			}
			if err := r.fillAdded(ctx, prep, b, evolve, diffSchema(p.Project, target, modeCols).gone); err != nil {
				return err
			}
			if len(left) > 0 {
				p.Warnings = append(p.Warnings, fmt.Sprintf("on_schema_change ignore: column(s) %s of %s are not written (%s has no such column)", strings.Join(left, ", "), p.Source.Table, job.Sink.Table))
			}
		}
	}
	cols := make([]cdc.Column, len(p.Project))
	for i, it := range p.Project {
		cols[i] = cdc.Column{Name: it.Name, Type: it.Type}
	}
	if len(job.Sink.Columns) > 0 {
		if len(job.Sink.Columns) != len(cols) {
			return pos.Errorf(job.Sink.TablePos, "INSERT names %d target columns but the SELECT yields %d", len(job.Sink.Columns), len(cols))
		}
		for i := range cols {
			cols[i].Name = job.Sink.Columns[i]
		}
	}
	projected := cdc.Schema{Columns: cols, Key: job.Sink.Keys}
	var errs pos.List
	for _, k := range job.Sink.Keys {
		if projected.Index(k) < 0 {
			errs.Add(job.Sink.KeysPos, "merge key %q is not a projected column (projected: %s)", k, strings.Join(projected.Names(), ", "))
		}
	}
	if err := errs.Err(); err != nil {
		return err
	}
	st := plan.SinkStage{
		Conn: b.Redacted(), Backend: b.Scheme(), Table: job.Sink.Table, Mode: mode,
		Keys: job.Sink.Keys, Schema: projected, Merge: job.Sink.Merge,
		OnSchemaChange: policy, Evolve: evolve,
	}
	if ps, ok := prep.source.(PartialRowSource); ok && ps.PartialRows(prep.stream) {
		st.PartialRows = true
	}
	if err := checkAddedColumns(p, job, &st); err != nil {
		return err
	}
	if mode == plan.ModeMerge && st.Merge == nil {
		if ns, ok := prep.source.(NetChangeSource); ok && ns.NetChanges(prep.stream) {
			st.OneChangePerKey = keysPassThrough(p.Project, job.Sink.Keys, prep.stream.TableSchema)
		}
	}
	if !job.Sink.Stdout {
		st.TableExists = exists
		if exists && st.Merge == nil {
			target = st.EvolvedTarget(target)
			p.Warnings = append(p.Warnings, narrowing(projected, target)...)
			if w := targetKeyWarning(st, target); w != "" {
				p.Warnings = append(p.Warnings, w)
			}
		}
	}
	if w := appendImagesWarning(p, st); w != "" {
		p.Warnings = append(p.Warnings, w)
	}
	p.Sink = st
	return nil
}

// appendImagesWarning returns the warning of an append job that writes
// every change of a stream with updates and deletes (STANDARD,
// CHANGE_FEED) as plain rows: no filter on the change type and no
// __change_type column in the target, so an UPDATE_BEFORE or DELETE image
// reads as one more row of the table; "" otherwise.
func appendImagesWarning(p *plan.Plan, st plan.SinkStage) string {
	if st.Mode != plan.ModeAppend || st.Backend == "stdout" || p.Filter != nil || p.Source.Mode == dsl.ModeAppendOnly {
		return ""
	}
	if st.Schema.Index(cdc.ColChangeType) >= 0 {
		return ""
	}
	return fmt.Sprintf("mode append writes every change of stream %s as a row of %s — INSERT, UPDATE_BEFORE, UPDATE_AFTER and DELETE images alike — with no column telling them apart: project %s (select: [%s, …]), keep some changes (filter: \"%s = 'INSERT'\"), or write by key (mode merge)",
		p.Source.Stream, st.Table, cdc.ColChangeType, cdc.ColChangeType, "`"+cdc.ColChangeType+"`")
}

// targetKeyWarning returns the warning of a merge into an existing target
// whose primary key is not its merge keys (as sets, case-insensitively):
// the merge matches rows by the merge keys, and a change whose row another
// target row already holds under the target's key fails the run with a
// unique violation; "" otherwise.
func targetKeyWarning(st plan.SinkStage, target cdc.Schema) string {
	if st.Mode != plan.ModeMerge || len(target.Key) == 0 {
		return ""
	}
	same := len(target.Key) == len(st.Keys)
	for _, k := range target.Key {
		if !slices.ContainsFunc(st.Keys, func(m string) bool { return strings.EqualFold(m, k) }) {
			same = false
		}
	}
	if same {
		return ""
	}
	return fmt.Sprintf("target %s has the primary key (%s), not the merge keys (%s): the merge matches rows by (%s), and a change whose (%s) another row of %s already has fails the run with a unique violation",
		st.Table, strings.Join(target.Key, ", "), strings.Join(st.Keys, ", "), strings.Join(st.Keys, ", "), strings.Join(target.Key, ", "), st.Table)
}

// keysPassThrough reports whether the merge keys include every column of
// the primary key of table, each projected unchanged (plan.PassedKeys):
// then two net changes of different source keys have different merge keys.
func keysPassThrough(project []plan.ProjectItem, keys []string, table cdc.Schema) bool {
	_, ok := plan.PassedKeys(project, keys, table)
	return ok
}

// planExecution chooses pushdown or a run through sluice and compiles the
// steps.
func (r *Runner) planExecution(ctx context.Context, prep *Prepared, srcB Backend) error {
	p := prep.Plan
	sinkB := prep.sink.(Backend)
	if pd, ok := srcB.(Pushdowner); ok && sinkB.Identity() == srcB.Identity() && sinkB.Scheme() == srcB.Scheme() {
		push, err := pd.Pushdown(ctx, p, prep.stream)
		switch {
		case err == nil:
			if sp, ok := push.(SteppedPushdown); ok {
				p.Stepped = sp.SetCommitStep(r.commitStep())
			}
			prep.push = push
			p.Pushdown = true
			p.Steps = push.Steps()
			return nil
		case errors.Is(err, ErrNoPushdown):
			p.Warnings = append(p.Warnings, fmt.Sprintf("not pushed down: %v; rows travel through sluice", err))
		default:
			return err
		}
	}
	sp, err := prep.sink.PrepareSink(ctx, &p.Sink)
	if err != nil {
		return pos.Errorf(p.Job.Sink.TablePos, "%w", err)
	}
	prep.sinkPlan = sp
	p.Steps = append(p.Steps, plan.Step{Where: "source", What: fmt.Sprintf("read the pending changes of stream %s up to a read point fixed now, in batches of %d", p.Source.Stream, r.batchSize())})
	if p.Filter != nil || !identityProjection(p) {
		p.Steps = append(p.Steps, plan.Step{Where: "sluice", What: "filter and project each change"})
	}
	p.Steps = append(p.Steps, sp.Steps()...)
	p.Steps = append(p.Steps, plan.Step{Where: "source", What: fmt.Sprintf("after the sink commit: move the offset of stream %s to the read point", p.Source.Stream)})
	return nil
}

func identityProjection(p *plan.Plan) bool {
	return len(p.Job.Select) == 0
}

// warnings derives the plan's warnings about consumption.
func warnings(p *plan.Plan) []string {
	var out []string
	if p.Filter != nil {
		var names []string
		for _, op := range p.Filter.Dropped {
			if op == cdc.OpUpdateBefore && p.Sink.Mode == plan.ModeMerge {
				// A merge writes each key's new values, which UPDATE_AFTER
				// carries; UPDATE_BEFORE (the old values) is of no use to it.
				continue
			}
			if op == cdc.OpDelete && p.Sink.Mode == plan.ModeMerge {
				continue // the warning below says what that does to a merge
			}
			names = append(names, op.String())
		}
		if len(names) > 0 {
			them := "them"
			if len(names) == 1 {
				them = "it"
			}
			out = append(out, fmt.Sprintf("the filter drops %s changes: a run consumes them for good (the offset moves past them); if %s should reach %s, keep %s in the filter",
				strings.Join(names, ", "), strings.Join(names, " and "), p.Sink.Table, them))
		}
	}
	if p.Filter != nil && p.Filter.Expr != nil && filtersValues(p) {
		w := fmt.Sprintf("the filter (%s) drops the changes it does not keep: a run consumes them for good (the offset moves past them)", p.Filter.Text)
		if p.Sink.Mode == plan.ModeMerge {
			w += "; a row whose latest change is dropped keeps its earlier values in the target"
		}
		out = append(out, w)
	}
	if p.Sink.Mode == plan.ModeMerge && p.Filter != nil && slices.Contains(p.Filter.Dropped, cdc.OpDelete) {
		if p.Sink.Merge == nil {
			out = append(out, fmt.Sprintf("the merge never sees DELETE changes (the filter drops them; a run consumes them for good): rows deleted at the source stay in %s (keep 'DELETE' in the filter to delete them too)", p.Sink.Table))
		} else {
			out = append(out, fmt.Sprintf("the MERGE never sees DELETE changes (the WHERE drops them; a run consumes them for good): rows deleted at the source stay in %s (to delete them too, keep 'DELETE' in the WHERE, select `__change_type`, and add WHEN MATCHED AND s.`__change_type` = 'DELETE' THEN DELETE before the other WHEN clauses)", p.Sink.Table))
		}
	}
	if w := mergeKeysWarning(p); w != "" {
		out = append(out, w)
	}
	out = append(out, addedColumnWarnings(p)...)
	if p.Sink.Mode == plan.ModeOverwrite {
		out = append(out, fmt.Sprintf("mode overwrite: each run replaces the rows of %s with that run's rows; a run with no pending changes leaves it empty", p.Sink.Table))
	}
	if p.Sink.Mode == plan.ModeIgnore && p.Sink.TableExists {
		out = append(out, fmt.Sprintf("mode ignore and target %s exists: a run does nothing and consumes nothing", p.Sink.Table))
	}
	if p.Sink.Mode == plan.ModeErrorIfExists && p.Sink.TableExists {
		out = append(out, fmt.Sprintf("mode errorifexists and target %s exists: a run fails", p.Sink.Table))
	}
	if p.Sink.Backend == "stdout" {
		out = append(out, "stdout sink: rows are printed, nothing is consumed (the offset does not move)")
	}
	return out
}

// mergeKeysWarning returns the warning of a merge (not a SQL MERGE) of a
// STANDARD stream on a table with a primary key whose merge keys are not
// exactly that key passed through (plan.PassedKeys): source rows that
// share merge-key values overwrite each other's target row, and an update
// that gives a source row other merge-key values arrives as an
// UPDATE_AFTER of the same source key, which the merge upserts under the
// new merge key, leaving the row under the old one; "" otherwise.
func mergeKeysWarning(p *plan.Plan) string {
	if p.Sink.Mode != plan.ModeMerge || p.Sink.Merge != nil || p.Source.Mode != dsl.ModeStandard || len(p.Source.TableSchema.Key) == 0 {
		return ""
	}
	if passed, ok := plan.PassedKeys(p.Project, p.Sink.Keys, p.Source.TableSchema); ok && len(passed) == len(p.Sink.Keys) {
		return ""
	}
	return fmt.Sprintf("merge keys (%s) are not the source's primary key (%s) passed through: source rows with the same merge-key values share one row of %s (the last change wins), and an update that changes a row's merge-key values writes it under the new values and leaves the row under the old ones",
		strings.Join(p.Sink.Keys, ", "), strings.Join(p.Source.TableSchema.Key, ", "), p.Sink.Table)
}

// filtersValues reports whether p's filter reads a column other than
// __change_type: it then drops changes by their values, which the warning
// about dropped change types (FilterStage.Dropped) does not cover.
func filtersValues(p *plan.Plan) bool {
	for _, ref := range p.Filter.Expr.Columns() {
		if ref.Col < 0 || ref.Col >= len(p.Source.Schema.Columns) || p.Source.Schema.Columns[ref.Col].Name != cdc.ColChangeType {
			return true
		}
	}
	return false
}
