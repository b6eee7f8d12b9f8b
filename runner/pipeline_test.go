package runner_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// The tests of the read/write pipeline of a run through sluice. They run the
// real SQLite source and sink; the "probe:" scheme wraps both (probe
// below) to record the order of the reader's Close, the sink's Commit and
// the offset's Advance, to fail a read, and to omit UPDATE_BEFORE changes
// as a source may (runner.OmittingReader).

// stockSetup creates table stock with three rows and a STANDARD stream
// stock_s that does not show them.
const stockSetup = `
CREATE TABLE stock (id INT, qty INT, note STRING, PRIMARY KEY (id));
ALTER TABLE stock SET PROPERTIES ('change_tracking' = 'true');
INSERT INTO stock VALUES (1, 10, '1'), (2, 20, '2'), (3, 30, '3');
CREATE TABLE STREAM stock_s ON TABLE stock WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
`

// stockChanges makes ten pending changes of stock_s, in this order: the
// INSERT of 4, the UPDATE (UPDATE_BEFORE + UPDATE_AFTER) of 1, the INSERT
// of row5, the UPDATE of 2, the DELETE of 3, the INSERTs of 6, 7 and 8.
func stockChanges(row5 string) string {
	return `
INSERT INTO stock VALUES (4, 40, '4');
UPDATE stock SET qty = 11 WHERE id = 1;
INSERT INTO stock VALUES ` + row5 + `;
UPDATE stock SET qty = 22, note = '22' WHERE id = 2;
DELETE FROM stock WHERE id = 3;
INSERT INTO stock VALUES (6, 60, '6'), (7, 70, '7'), (8, 80, '8');
`
}

// stockCounts is the count of each change type stockChanges makes.
var stockCounts = map[cdc.Op]int64{cdc.OpInsert: 5, cdc.OpUpdateBefore: 2, cdc.OpUpdateAfter: 2, cdc.OpDelete: 1}

func TestPipelineMultiBatch(t *testing.T) {
	appendRows := [][]string{
		{"1", "UPDATE_AFTER", "11"}, {"1", "UPDATE_BEFORE", "10"},
		{"2", "UPDATE_AFTER", "22"}, {"2", "UPDATE_BEFORE", "20"},
		{"3", "DELETE", "30"},
		{"4", "INSERT", "40"}, {"5", "INSERT", "50"}, {"6", "INSERT", "60"}, {"7", "INSERT", "70"}, {"8", "INSERT", "80"},
	}
	mergeRows := [][]string{
		{"1", "11", "1"}, {"2", "22", "22"},
		{"4", "40", "4"}, {"5", "50", "5"}, {"6", "60", "6"}, {"7", "70", "7"}, {"8", "80", "8"},
	}
	// Merge writes the last change per key and skips UPDATE_BEFORE.
	mergeWritten := map[cdc.Op]int64{cdc.OpInsert: 5, cdc.OpUpdateAfter: 2, cdc.OpDelete: 1}
	appendJob := "select: [id, \"`__change_type` AS op\", qty]\nsink: {table: target, mode: append, connection: %s}\n"
	mergeJob := "sink: {table: target, mode: merge, keys: [id], connection: %s}\n"
	cases := []struct {
		name    string
		scheme  string // "sqlite", or "probe" to wrap it
		batch   int
		job     string // sink part of the job, %s = sink connection
		query   string // target rows
		want    [][]string
		written map[cdc.Op]int64
		omitted int64 // UPDATE_BEFORE changes the probe leaves out of the read
	}{
		{"append batch 1", "sqlite", 1, appendJob, "SELECT id, op, qty FROM target ORDER BY id, op", appendRows, stockCounts, 0},
		{"append batch 3", "sqlite", 3, appendJob, "SELECT id, op, qty FROM target ORDER BY id, op", appendRows, stockCounts, 0},
		{"append one batch", "sqlite", 100, appendJob, "SELECT id, op, qty FROM target ORDER BY id, op", appendRows, stockCounts, 0},
		{"merge batch 2", "sqlite", 2, mergeJob, "SELECT id, qty, note FROM target ORDER BY id", mergeRows, mergeWritten, 0},
		// A merge sink ignores UPDATE_BEFORE: the run lets the source omit
		// them, and still counts them as read.
		{"merge omitting batch 1", "probe", 1, mergeJob, "SELECT id, qty, note FROM target ORDER BY id", mergeRows, mergeWritten, 2},
		{"merge omitting batch 3", "probe", 3, mergeJob, "SELECT id, qty, note FROM target ORDER BY id", mergeRows, mergeWritten, 2},
		{"append omits nothing", "probe", 3, appendJob, "SELECT id, op, qty FROM target ORDER BY id, op", appendRows, stockCounts, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.r.BatchSize = tc.batch
			pr := useProbe(t)
			e.sql("", stockSetup+stockChanges("(5, 50, '5')"))
			sink := tc.scheme + ":" + e.path("sink.db")
			j := e.job("j.yaml", "connection: "+tc.scheme+":"+e.path("src.db")+"\nsource: stock_s\n"+fmt.Sprintf(tc.job, sink))
			res, err := e.run(j)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(res.Stats.Read, stockCounts) {
				t.Errorf("read = %v, want %v", res.Stats.Read, stockCounts)
			}
			if !maps.Equal(res.Stats.Written, tc.written) {
				t.Errorf("written = %v, want %v", res.Stats.Written, tc.written)
			}
			if got := e.sql(e.conn("sink.db"), tc.query); !equalRows(got, tc.want) {
				t.Errorf("target = %v, want %v", got, tc.want)
			}
			if p := e.pending("stock_s"); len(p) != 0 {
				t.Errorf("pending after the run = %v, want none", p)
			}
			if tc.scheme == "probe" {
				if got := pr.omitted(); got != tc.omitted {
					t.Errorf("the source omitted %d UPDATE_BEFORE changes, want %d", got, tc.omitted)
				}
				if got, want := pr.log(), []string{"close", "commit", "advance"}; !slices.Equal(got, want) {
					t.Errorf("events = %v, want %v", got, want)
				}
			}
			// Everything was consumed: a second run reads nothing.
			res, err = e.run(j)
			if err != nil {
				t.Fatal(err)
			}
			if n := sum(res.Stats.Read); n != 0 {
				t.Errorf("second run read %d changes, want 0", n)
			}
		})
	}
}

// A failure on either side of the pipeline in a later batch fails the run:
// its error is returned, nothing is committed, the offset stays, the
// reader is closed once and the pipeline's goroutine is gone.
func TestPipelineFailureMidRun(t *testing.T) {
	errRead := errors.New("simulated read failure")
	cases := []struct {
		name   string
		row5   string // the fourth change's row
		sel    string
		setup  func(t *testing.T, pr *probe, cancel context.CancelFunc)
		want   error
		writes int // Write calls the run makes, -1: depends on timing
	}{
		// qty 100000 does not fit the target's SMALLINT: the sink fails on
		// the second of five batches of two, once the reader has read the
		// fourth (the third is queued, the fourth waits to be).
		{name: "sink value does not fit", row5: "(5, 100000, '5')", sel: "[id, qty]", want: cdc.ErrBadValue, writes: 2,
			setup: func(t *testing.T, pr *probe, _ context.CancelFunc) { pr.onWrite(2, func() { pr.waitNexts(t, 4) }) }},
		{name: "projection fails", row5: "(5, 50, 'x')", sel: "[id, \"CAST(note AS INT) AS qty\"]", want: expr.ErrEval, writes: -1},
		{name: "source read fails", row5: "(5, 50, '5')", sel: "[id, qty]", want: errRead, writes: -1,
			setup: func(_ *testing.T, pr *probe, _ context.CancelFunc) { pr.failRead(4, errRead) }},
		{name: "run cancelled", row5: "(5, 50, '5')", sel: "[id, qty]", want: context.Canceled, writes: -1,
			setup: func(_ *testing.T, pr *probe, cancel context.CancelFunc) { pr.onWrite(2, cancel) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.r.BatchSize = 2
			pr := useProbe(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.setup != nil {
				tc.setup(t, pr, cancel)
			}
			e.sql("", stockSetup+stockChanges(tc.row5))
			e.sql(e.conn("sink.db"), "CREATE TABLE target (id INT, qty SMALLINT)")
			j := e.job("j.yaml", "connection: probe:"+e.path("src.db")+"\nsource: stock_s\nselect: "+tc.sel+
				"\nsink: {table: target, mode: append, connection: probe:"+e.path("sink.db")+"}\n")
			before := e.pending("stock_s")
			prep, err := e.r.Plan(ctx, j)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.r.Run(ctx, prep)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want one wrapping %v", err, tc.want)
			}
			waitPipelineGone(t)
			if got, want := pr.log(), []string{"close"}; !slices.Equal(got, want) {
				t.Errorf("events = %v, want %v (reader closed once, no commit, no advance)", got, want)
			}
			if tc.writes >= 0 && pr.writeCalls() != tc.writes {
				t.Errorf("sink writes = %d, want %d", pr.writeCalls(), tc.writes)
			}
			if got := e.sql(e.conn("sink.db"), "SELECT count(*) FROM target"); got[0][0] != "0" {
				t.Errorf("the failed run left %s rows in the target", got[0][0])
			}
			if cp, ok := sinkCheckpoint(t, e, prep); ok {
				t.Errorf("the failed run stored checkpoint %+v", cp)
			}
			if after := e.pending("stock_s"); !slices.Equal(before, after) || len(after) != 10 {
				t.Errorf("pending before %v, after %v: the failed run must move nothing", before, after)
			}
		})
	}
}

// The reader is closed, ending the source's read transaction, before the
// sink commits and before the stream's offset advances.
func TestPipelineClosesReaderBeforeCommit(t *testing.T) {
	e := newEnv(t)
	e.r.BatchSize = 3
	pr := useProbe(t)
	e.sql("", stockSetup+stockChanges("(5, 50, '5')"))
	j := e.job("j.yaml", "connection: probe:"+e.path("src.db")+"\nsource: stock_s\n"+
		"sink: {table: target, mode: append, connection: probe:"+e.path("sink.db")+"}\n")
	res, err := e.run(j)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pr.log(), []string{"close", "commit", "advance"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	// The read was open while the rows went through: four batches of up
	// to three changes.
	if pr.writeCalls() != 4 || sum(res.Stats.Written) != 10 {
		t.Fatalf("writes = %d of %d rows, want 4 of 10", pr.writeCalls(), sum(res.Stats.Written))
	}
}

// path returns the file path of a database in the test's directory.
func (e *env) path(name string) string { return strings.TrimPrefix(e.conn(name), "sqlite:") }

// sinkCheckpoint returns the job's checkpoint in its sink database.
func sinkCheckpoint(t *testing.T, e *env, prep *runner.Prepared) (runner.Checkpoint, bool) {
	t.Helper()
	ctx := context.Background()
	b, err := e.r.Backend(ctx, e.conn("sink.db"))
	if err != nil {
		t.Fatal(err)
	}
	st := prep.Plan.Sink
	sp, err := b.(runner.Sink).PrepareSink(ctx, &st)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := sp.Begin(ctx, prep.Plan.Job.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	cp, ok, err := tx.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return cp, ok
}

// waitPipelineGone fails the test if a goroutine of the pipeline is still
// running shortly after the run returned.
func waitPipelineGone(t *testing.T) {
	t.Helper()
	var stacks string
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "runner.(*Prepared).pipeline") {
			return
		}
	}
	t.Fatalf("a pipeline goroutine outlived the run:\n%s", stacks)
}

// probe records what the "probe:" backends of one test do. A test installs
// it with useProbe.
type probe struct {
	mu        sync.Mutex
	events    []string
	writes    int
	omits     int64
	nexts     int // Next calls returned
	readFail  int // Next call that fails with readErr, 0: none
	readErr   error
	writeHook int // Write call that calls hook first
	hook      func()
}

var (
	probeMu  sync.Mutex
	curProbe *probe
)

// useProbe installs a fresh probe for the test.
func useProbe(t *testing.T) *probe {
	pr := &probe{}
	probeMu.Lock()
	curProbe = pr
	probeMu.Unlock()
	t.Cleanup(func() {
		probeMu.Lock()
		curProbe = nil
		probeMu.Unlock()
	})
	return pr
}

func currentProbe() *probe {
	probeMu.Lock()
	defer probeMu.Unlock()
	if curProbe == nil {
		return &probe{}
	}
	return curProbe
}

func (p *probe) record(ev string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, ev)
}

func (p *probe) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.events)
}

func (p *probe) writeCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writes
}

func (p *probe) omitted() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.omits
}

// waitNexts waits until n Next calls of the read have returned.
func (p *probe) waitNexts(t *testing.T, n int) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		p.mu.Lock()
		done := p.nexts >= n
		p.mu.Unlock()
		if done {
			return
		}
	}
	t.Errorf("the reader did not read %d batches", n)
}

// failRead makes the n-th Next of a read fail with err.
func (p *probe) failRead(n int, err error) { p.readFail, p.readErr = n, err }

// onWrite calls hook before the n-th Write.
func (p *probe) onWrite(n int, hook func()) { p.writeHook, p.hook = n, hook }

func init() {
	runner.Register(func(ctx context.Context, url string, log *slog.Logger) (runner.Backend, error) {
		b, err := runner.Open(ctx, "sqlite:"+strings.TrimPrefix(url, "probe:"), log)
		if err != nil {
			return nil, err
		}
		return probeBackend{Source: b.(runner.Source), sink: b.(runner.Sink), p: currentProbe()}, nil
	}, "probe")
}

// probeBackend is the SQLite backend as a source and a sink, recording
// into p.
type probeBackend struct {
	runner.Source
	sink runner.Sink
	p    *probe
}

func (b probeBackend) Target(ctx context.Context, table string) (cdc.Schema, bool, error) {
	return b.sink.Target(ctx, table)
}

func (b probeBackend) PrepareSink(ctx context.Context, st *plan.SinkStage) (runner.SinkPlan, error) {
	sp, err := b.sink.PrepareSink(ctx, st)
	if err != nil {
		return nil, err
	}
	return probePlan{SinkPlan: sp, p: b.p}, nil
}

func (b probeBackend) Changes(ctx context.Context, s *runner.StreamInfo, from cdc.Offset, opt runner.ReadOptions) (runner.ChangeReader, error) {
	// The probe omits UPDATE_BEFORE itself (the SQLite source would too:
	// it reads all of them here, so that omits counts each one).
	inner := opt
	inner.OmitUpdateBefore = false
	rd, err := b.Source.Changes(ctx, s, from, inner)
	if err != nil {
		return nil, err
	}
	return &probeReader{ChangeReader: rd, p: b.p, omit: opt.OmitUpdateBefore, omitted: map[cdc.Op]int64{}}, nil
}

func (b probeBackend) Advance(ctx context.Context, s *runner.StreamInfo, from, to cdc.Offset) error {
	err := b.Source.Advance(ctx, s, from, to)
	b.p.record("advance")
	return err
}

// probeReader reads the SQLite read; with omit it leaves UPDATE_BEFORE
// changes out, as runner.OmittingReader allows.
type probeReader struct {
	runner.ChangeReader
	p       *probe
	omit    bool
	omitted map[cdc.Op]int64
	calls   int
}

func (r *probeReader) Next(ctx context.Context) ([]cdc.Change, error) {
	r.calls++
	if r.calls == r.p.readFail {
		return nil, r.p.readErr
	}
	batch, err := r.ChangeReader.Next(ctx)
	r.p.mu.Lock()
	r.p.nexts++
	r.p.mu.Unlock()
	if err != nil || !r.omit {
		return batch, err
	}
	kept := batch[:0]
	for _, ch := range batch {
		if ch.Op == cdc.OpUpdateBefore {
			r.omitted[ch.Op]++
			r.p.mu.Lock()
			r.p.omits++
			r.p.mu.Unlock()
			continue
		}
		kept = append(kept, ch)
	}
	return kept, nil
}

func (r *probeReader) Omitted() map[cdc.Op]int64 { return maps.Clone(r.omitted) }

func (r *probeReader) Close() error {
	err := r.ChangeReader.Close()
	r.p.record("close")
	return err
}

type probePlan struct {
	runner.SinkPlan
	p *probe
}

func (sp probePlan) Begin(ctx context.Context, job string) (runner.SinkTx, error) {
	tx, err := sp.SinkPlan.Begin(ctx, job)
	if err != nil {
		return nil, err
	}
	return probeTx{SinkTx: tx, p: sp.p}, nil
}

type probeTx struct {
	runner.SinkTx
	p *probe
}

func (tx probeTx) Write(ctx context.Context, batch []cdc.Change) error {
	tx.p.mu.Lock()
	tx.p.writes++
	hook := tx.p.writes == tx.p.writeHook
	tx.p.mu.Unlock()
	if hook {
		tx.p.hook()
	}
	return tx.SinkTx.Write(ctx, batch)
}

func (tx probeTx) Commit(ctx context.Context, cp runner.Checkpoint) (runner.Stats, error) {
	tx.p.record("commit")
	return tx.SinkTx.Commit(ctx, cp)
}
