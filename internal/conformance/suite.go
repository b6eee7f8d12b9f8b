package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// ReadBatch is the batch size the suite reads with (small, so that batching
// is exercised).
const ReadBatch = 2

// RunStreamSuite runs every Case and the offset/consumption tests against
// the backend h opens.
func RunStreamSuite(t *testing.T, h Harness) {
	for _, c := range Cases {
		t.Run(c.Name, func(t *testing.T) { runCase(t, h, c) })
	}
	t.Run("a read does not consume", func(t *testing.T) { testReadDoesNotConsume(t, h) })
	t.Run("advance consumes", func(t *testing.T) { testAdvanceConsumes(t, h) })
	t.Run("filtered changes are consumed", func(t *testing.T) { testFilteredConsumed(t, h) })
	t.Run("commit versions increase and timestamps are UTC", func(t *testing.T) { testVersionsAndTimes(t, h) })
	t.Run("advance is compare-and-set", func(t *testing.T) { testAdvanceCAS(t, h) })
	t.Run("change log purged once every stream consumed", func(t *testing.T) { testPurge(t, h) })
	t.Run("errors", func(t *testing.T) { testErrors(t, h) })
	t.Run("stream incarnations have new IDs", func(t *testing.T) { testIncarnation(t, h) })
}

// env is one open backend of a test.
type env struct {
	t   *testing.T
	h   Harness
	b   runner.Backend
	ex  runner.Executor
	src runner.Source
	ctx context.Context
}

func open(t *testing.T, h Harness) *env {
	t.Helper()
	b := h.Open(t)
	t.Cleanup(func() { b.Close() })
	ex, ok := b.(runner.Executor)
	if !ok {
		t.Fatalf("backend %T is not a runner.Executor", b)
	}
	src, ok := b.(runner.Source)
	if !ok {
		t.Fatalf("backend %T is not a runner.Source", b)
	}
	return &env{t: t, h: h, b: b, ex: ex, src: src, ctx: t.Context()}
}

func (e *env) exec(st dsl.Statement) *runner.ResultSet {
	e.t.Helper()
	rs, err := e.ex.Exec(e.ctx, st)
	if err != nil {
		e.t.Fatalf("%T: %v", st, err)
	}
	return rs
}

// table creates tbl with change tracking on.
func (e *env) table(tbl Table) {
	e.t.Helper()
	e.exec(&dsl.CreateTable{Table: tbl.Name, Schema: tbl.Schema})
	e.exec(&dsl.SetChangeTracking{Table: tbl.Name, Enabled: true})
}

func (e *env) stream(name, table, mode string, initial bool) {
	e.t.Helper()
	e.exec(&dsl.CreateStream{Stream: name, Table: table, Mode: mode, ShowInitialRows: initial})
}

func (e *env) apply(txs [][]Op) {
	e.t.Helper()
	for _, ops := range txs {
		e.h.Apply(e.t, e.b, ops...)
	}
}

func (e *env) info(name string) *runner.StreamInfo {
	e.t.Helper()
	info, err := e.src.Stream(e.ctx, plan.Source{Stream: name})
	if err != nil {
		e.t.Fatalf("Stream(%s): %v", name, err)
	}
	return info
}

// read reads all changes of stream name from its offset; it checks the
// batch bound and the ordering rules.
func (e *env) read(name string) (*runner.StreamInfo, []cdc.Change, cdc.Offset) {
	e.t.Helper()
	info, out, rp, _ := e.readWith(name, false)
	return info, out, rp
}

// readWith is read, with ReadOptions.OmitUpdateBefore when omit (the
// order is then not checked); it also returns what an OmittingReader
// reports it left out (nil for a reader that omits nothing).
func (e *env) readWith(name string, omit bool) (*runner.StreamInfo, []cdc.Change, cdc.Offset, map[cdc.Op]int64) {
	e.t.Helper()
	info := e.info(name)
	r, err := e.src.Changes(e.ctx, info, info.Offset, runner.ReadOptions{BatchSize: ReadBatch, OmitUpdateBefore: omit})
	if err != nil {
		e.t.Fatalf("Changes(%s): %v", name, err)
	}
	defer r.Close()
	var out []cdc.Change
	for {
		batch, err := r.Next(e.ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			e.t.Fatalf("Next: %v", err)
		}
		if len(batch) == 0 || len(batch) > ReadBatch {
			e.t.Fatalf("Next returned %d changes, want 1..%d", len(batch), ReadBatch)
		}
		out = append(out, batch...)
	}
	var omitted map[cdc.Op]int64
	if o, ok := r.(runner.OmittingReader); ok {
		omitted = o.Omitted()
	}
	if !omit {
		checkOrder(e.t, out)
	}
	return info, out, r.ReadPoint(), omitted
}

// checkOmitted reads stream name again with OmitUpdateBefore: a reader
// that omits must return the changes of want other than UPDATE_BEFORE and
// count exactly the UPDATE_BEFOREs it left out, in any order; one that
// omits nothing must return want.
func (e *env) checkOmitted(name string, s cdc.Schema, want []Row) {
	e.t.Helper()
	_, got, _, omitted := e.readWith(name, true)
	// The changes may come in any order (ReadOptions.OmitUpdateBefore).
	sort.SliceStable(got, func(i, j int) bool { return got[i].CommitVersion < got[j].CommitVersion })
	if len(omitted) == 0 {
		compare(e.t, s, got, want)
		return
	}
	var rest []Row
	var before int64
	for _, w := range want {
		if w.Op == cdc.OpUpdateBefore {
			before++
			continue
		}
		rest = append(rest, w)
	}
	compare(e.t, s, got, rest)
	if omitted[cdc.OpUpdateBefore] != before || len(omitted) != 1 {
		e.t.Errorf("omitted %v, want exactly %d UPDATE_BEFORE", omitted, before)
	}
}

func (e *env) advance(info *runner.StreamInfo, to cdc.Offset) {
	e.t.Helper()
	if err := e.src.Advance(e.ctx, info, info.Offset, to); err != nil {
		e.t.Fatalf("Advance(%s, %s → %s): %v", info.Name, info.Offset, to, err)
	}
}

// checkOrder checks the rules every read obeys: versions never decrease,
// each UPDATE_BEFORE is directly followed by an UPDATE_AFTER of the same
// version, times are UTC.
func checkOrder(t *testing.T, cs []cdc.Change) {
	t.Helper()
	for i, c := range cs {
		if i > 0 && c.CommitVersion < cs[i-1].CommitVersion {
			t.Errorf("change %d: version %d after %d", i, c.CommitVersion, cs[i-1].CommitVersion)
		}
		if c.Op == cdc.OpUpdateBefore && (i+1 == len(cs) || cs[i+1].Op != cdc.OpUpdateAfter || cs[i+1].CommitVersion != c.CommitVersion) {
			t.Errorf("change %d: UPDATE_BEFORE not directly followed by its UPDATE_AFTER", i)
		}
		if c.Op == cdc.OpUpdateAfter && (i == 0 || cs[i-1].Op != cdc.OpUpdateBefore) {
			t.Errorf("change %d: UPDATE_AFTER without UPDATE_BEFORE", i)
		}
		if c.CommitTime.Location() != time.UTC {
			t.Errorf("change %d: commit time %v is not UTC", i, c.CommitTime)
		}
		if c.IsPartial() {
			t.Errorf("change %d: partial row from a table stream", i)
		}
	}
}

func runCase(t *testing.T, h Harness, c Case) {
	e := open(t, h)
	e.table(c.Table)
	e.apply(c.Before)
	e.stream("s", c.Table.Name, c.Mode, c.ShowInitialRows)
	e.apply(c.After)
	info, got, rp := e.read("s")
	compare(t, c.Table.Schema, got, c.Want)
	e.checkOmitted("s", c.Table.Schema, c.Want)
	if c.Then == nil {
		return
	}
	e.advance(info, rp)
	e.apply(c.Then.After)
	_, got, _ = e.read("s")
	compare(t, c.Table.Schema, got, c.Then.Want)
}

// compare checks got against want. Rows of one commit version may come in
// any order (a backend may give every change of one transaction the same
// version); everything else must match in order.
func compare(t *testing.T, s cdc.Schema, got []cdc.Change, want []Row) {
	t.Helper()
	g := make([]string, len(got))
	for i, c := range got {
		g[i] = render(s, c.Op, c.Row, false)
	}
	w := make([]string, len(want))
	for i, r := range want {
		w[i] = render(s, r.Op, r.Values, true)
	}
	if len(g) == len(w) {
		gs, ws := slices.Clone(g), slices.Clone(w)
		for i := 0; i < len(got); {
			j := i + 1
			for j < len(got) && got[j].CommitVersion == got[i].CommitVersion {
				j++
			}
			slices.Sort(gs[i:j])
			slices.Sort(ws[i:j])
			i = j
		}
		if slices.Equal(gs, ws) {
			return
		}
	}
	t.Errorf("changes differ\n got:\n\t%s\nwant:\n\t%s", strings.Join(g, "\n\t"), strings.Join(w, "\n\t"))
}

func render(s cdc.Schema, op cdc.Op, row []any, loose bool) string {
	var b strings.Builder
	b.WriteString(op.String())
	if len(row) != len(s.Columns) {
		fmt.Fprintf(&b, " (%d values for %d columns)", len(row), len(s.Columns))
	}
	for i, v := range row {
		typ := cdc.Type{}
		if i < len(s.Columns) {
			typ = s.Columns[i].Type
			if c, err := cdc.Coerce(v, typ); loose && err == nil {
				v = c
			}
		}
		fmt.Fprintf(&b, " %s:%T", cdc.FormatValue(v, typ), v)
	}
	return b.String()
}
