package stdout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// Output formats.
const (
	FormatTable = "table"
	FormatJSONL = "jsonl"
)

func init() {
	runner.Register(open, "stdout")
}

// open is the runner.Opener of "stdout:", "stdout:table" and "stdout:jsonl".
func open(_ context.Context, url string, _ *slog.Logger) (runner.Backend, error) {
	_, f, _ := strings.Cut(url, ":")
	f = strings.ToLower(strings.TrimPrefix(f, "//"))
	switch f {
	case "", FormatTable:
		f = FormatTable
	case FormatJSONL:
	default:
		return nil, fmt.Errorf("stdout sink: unknown format %q in %q (want stdout:, stdout:table or stdout:jsonl)", f, url)
	}
	return New(os.Stdout, f), nil
}

// Backend is the stdout sink: a runner.Backend and runner.Sink that prints
// the rows of a run. It is safe for concurrent runs; each run's rows are
// printed together at Commit (table) or as they arrive (JSON Lines, one
// Write call's rows at a time).
type Backend struct {
	mu     sync.Mutex
	w      io.Writer
	format string
}

// New returns a stdout sink printing to w in format FormatTable or
// FormatJSONL.
func New(w io.Writer, format string) *Backend {
	if format == "" {
		format = FormatTable
	}
	return &Backend{w: w, format: format}
}

// SetOutput redirects the printed rows (the runner sends them to its
// Stdout writer).
func (b *Backend) SetOutput(w io.Writer) {
	b.mu.Lock()
	b.w = w
	b.mu.Unlock()
}

// Scheme returns "stdout".
func (b *Backend) Scheme() string { return "stdout" }

// Identity returns "stdout:FORMAT".
func (b *Backend) Identity() string { return "stdout:" + b.format }

// Redacted returns "stdout:FORMAT".
func (b *Backend) Redacted() string { return b.Identity() }

// Close does nothing.
func (b *Backend) Close() error { return nil }

// Target reports no table: stdout has none (zero Schema, false).
func (b *Backend) Target(context.Context, string) (cdc.Schema, bool, error) {
	return cdc.Schema{}, false, nil
}

// PrepareSink returns the plan of printing st's rows. The mode and keys do
// not apply (every row is printed as it comes).
func (b *Backend) PrepareSink(_ context.Context, st *plan.SinkStage) (runner.SinkPlan, error) {
	cols := st.Schema.Columns
	if st.Schema.Index(cdc.ColChangeType) < 0 {
		cols = append([]cdc.Column{cdc.MetadataColumns[0]}, cols...)
	}
	return &Plan{b: b, cols: cols, addOp: len(cols) > len(st.Schema.Columns)}, nil
}

// Plan prints rows (runner.SinkPlan).
type Plan struct {
	b     *Backend
	cols  []cdc.Column
	addOp bool // print __change_type before the projected columns
}

// Consumes reports false: a stdout run stores no checkpoint, so the runner
// must not move the stream's offset (the run is a preview).
func (p *Plan) Consumes() bool { return false }

// Columns are the printed columns: __change_type (unless projected) and
// the projected columns.
func (p *Plan) Columns() []cdc.Column { return p.cols }

// Steps describes the run.
func (p *Plan) Steps() []plan.Step {
	how := "an aligned table"
	if p.b.format == FormatJSONL {
		how = "JSON Lines"
	}
	return []plan.Step{{Where: "sink", What: fmt.Sprintf("print the rows to standard output as %s (with __change_type); nothing is consumed", how)}}
}

// Begin starts printing one run.
func (p *Plan) Begin(context.Context, string) (runner.SinkTx, error) {
	return &Tx{p: p, written: map[cdc.Op]int64{}}, nil
}

// Tx is one run's output. Table rows are buffered until Commit; JSON Lines
// are printed by Write. Its checkpoint is never stored.
type Tx struct {
	p       *Plan
	rows    [][]any
	written map[cdc.Op]int64
	done    bool
}

// Checkpoint reports none: stdout keeps no position.
func (t *Tx) Checkpoint(context.Context) (runner.Checkpoint, bool, error) {
	return runner.Checkpoint{}, false, nil
}

// Write prints (JSON Lines) or buffers (table) the batch. Columns a partial
// row does not carry print as NULL.
func (t *Tx) Write(_ context.Context, batch []cdc.Change) error {
	if t.done {
		return errors.New("stdout sink: write after commit")
	}
	rows := make([][]any, 0, len(batch))
	for i := range batch {
		ch := &batch[i]
		row := make([]any, 0, len(t.p.cols))
		if t.p.addOp {
			row = append(row, ch.Op.String())
		}
		for j, v := range ch.Row {
			if !ch.Has(j) {
				v = nil
			}
			row = append(row, v)
		}
		rows = append(rows, row)
		t.written[ch.Op]++
	}
	if t.p.b.format != FormatJSONL {
		t.rows = append(t.rows, rows...)
		return nil
	}
	t.p.b.mu.Lock()
	defer t.p.b.mu.Unlock()
	return JSONL(t.p.b.w, t.p.cols, rows)
}

// Commit prints the buffered table and returns the rows printed by change
// type. cp is not stored.
func (t *Tx) Commit(context.Context, runner.Checkpoint) (runner.Stats, error) {
	if t.done {
		return runner.Stats{}, errors.New("stdout sink: commit after commit")
	}
	t.done = true
	if t.p.b.format != FormatJSONL {
		t.p.b.mu.Lock()
		defer t.p.b.mu.Unlock()
		if err := Table(t.p.b.w, t.p.cols, t.rows); err != nil {
			return runner.Stats{}, err
		}
	}
	return runner.Stats{Written: t.written}, nil
}

// Rollback discards buffered rows (JSON Lines already printed stay
// printed).
func (t *Tx) Rollback(context.Context) error {
	t.done, t.rows = true, nil
	return nil
}
