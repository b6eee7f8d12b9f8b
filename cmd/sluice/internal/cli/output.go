package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sinks/stdout"
	"github.com/sluicedata/sluice/sources/postgres"
	"github.com/sluicedata/sluice/sources/sqlite"
	"github.com/sluicedata/sluice/sources/tablestore"
)

// maxCell is the display width at which table cells are cut (with …)
// unless --wide is given.
const maxCell = 40

// checkFormat returns a usage error unless format is one of allowed.
func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return usageErr("--format is %s, not %q", strings.Join(allowed, ", "), format)
}

// printRows prints a result set as a table (cells cut at maxCell unless
// wide), JSON Lines or CSV, values in the text form of text (nil:
// cdc.FormatValue; see valueText).
func printRows(w io.Writer, format string, wide bool, cols []cdc.Column, rows [][]any, text func(any, cdc.Type) string) error {
	switch format {
	case "jsonl":
		return stdout.JSONLWith(w, cols, rows, text)
	case "csv":
		return stdout.CSVWith(w, cols, rows, text)
	}
	opt := stdout.TableOptions{MaxCell: maxCell, Text: text}
	if wide {
		opt.MaxCell = 0
	}
	return stdout.TableWith(w, cols, rows, opt)
}

// valueText is the text form of b's database for printing values
// (runner.ValueTexter: PostgreSQL's output functions), or nil for
// cdc.FormatValue.
func valueText(ctx context.Context, b runner.Backend) (func(any, cdc.Type) string, error) {
	if vt, ok := b.(runner.ValueTexter); ok {
		return vt.ValueText(ctx)
	}
	return nil, nil
}

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// rowsJSON renders rows as JSON objects, values as stdout.JSONLWith
// writes them with text (nil: DECIMAL exact as a string, timestamps RFC
// 3339 with their zone).
func rowsJSON(cols []cdc.Column, rows [][]any, text func(any, cdc.Type) string) ([]json.RawMessage, error) {
	var b bytes.Buffer
	if err := stdout.JSONLWith(&b, cols, rows, text); err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, 0, len(rows))
	for _, line := range bytes.Split(bytes.TrimSuffix(b.Bytes(), []byte("\n")), []byte("\n")) {
		if len(line) > 0 {
			out = append(out, json.RawMessage(line))
		}
	}
	return out, nil
}

// planJSON is `sluice plan --format json`: the stages of plan.Plan by
// name, with the same facts as plan.Format prints.
type planJSON struct {
	Job    string `json:"job"`
	File   string `json:"file,omitempty"`
	Source struct {
		Conn    string `json:"connection"`
		Backend string `json:"backend"`
		Stream  string `json:"stream"`
		Table   string `json:"table"`
		Mode    string `json:"mode"`
	} `json:"source"`
	Filter *struct {
		Text    string   `json:"text"`
		Dropped []string `json:"consumes_for_good,omitempty"`
	} `json:"filter,omitempty"`
	Project []struct {
		Name string `json:"name"`
		Expr string `json:"expr"`
		Type string `json:"type"`
	} `json:"project"`
	Sink struct {
		Conn       string   `json:"connection"`
		Backend    string   `json:"backend"`
		Table      string   `json:"table,omitempty"`
		Mode       string   `json:"mode"`
		Keys       []string `json:"keys,omitempty"`
		OnDelete   string   `json:"on_delete,omitempty"`
		DeadLetter string   `json:"dead_letter,omitempty"`
		// OnSchemaChange: the policy (evolve, fail, ignore; "" for stdout).
		OnSchemaChange string `json:"on_schema_change,omitempty"`
		// Evolve: what a run changes in the existing target before writing.
		Evolve      []string `json:"evolve,omitempty"`
		TableExists bool     `json:"table_exists"`
	} `json:"sink"`
	Pushdown bool       `json:"pushdown"`
	Setup    []string   `json:"setup,omitempty"`
	Steps    []stepJSON `json:"steps"`
	Warnings []string   `json:"warnings,omitempty"`
}

type stepJSON struct {
	Where string `json:"where"`
	What  string `json:"what"`
	SQL   string `json:"sql,omitempty"`
}

// newPlanJSON converts a plan for --format json.
func newPlanJSON(p *plan.Plan) planJSON {
	var j planJSON
	if p.Job != nil {
		j.Job, j.File = p.Job.Name, p.Job.File
	}
	j.Source.Conn, j.Source.Backend, j.Source.Stream, j.Source.Table, j.Source.Mode = p.Source.Conn, p.Source.Backend, p.Source.Stream, p.Source.Table, p.Source.Mode
	if p.Filter != nil {
		j.Filter = &struct {
			Text    string   `json:"text"`
			Dropped []string `json:"consumes_for_good,omitempty"`
		}{Text: p.Filter.Text}
		for _, op := range p.Filter.Dropped {
			j.Filter.Dropped = append(j.Filter.Dropped, op.String())
		}
	}
	for _, it := range p.Project {
		j.Project = append(j.Project, struct {
			Name string `json:"name"`
			Expr string `json:"expr"`
			Type string `json:"type"`
		}{it.Name, it.Text, it.Type.String()})
	}
	s := p.Sink
	j.Sink.Conn, j.Sink.Backend, j.Sink.Table, j.Sink.Mode, j.Sink.Keys = s.Conn, s.Backend, s.Table, string(s.Mode), s.Keys
	j.Sink.OnDelete, j.Sink.TableExists = string(s.OnDelete), s.TableExists
	j.Sink.OnSchemaChange = string(s.OnSchemaChange)
	for _, c := range s.Evolve {
		j.Sink.Evolve = append(j.Sink.Evolve, c.String())
	}
	j.Sink.DeadLetter = s.DeadLetter
	j.Pushdown, j.Setup, j.Warnings = p.Pushdown, p.Setup, p.Warnings
	j.Steps = []stepJSON{}
	for _, st := range p.Steps {
		j.Steps = append(j.Steps, stepJSON{st.Where, st.What, st.SQL})
	}
	return j
}

// offsetText is an offset for people: the source's words for it
// (postgres.DescribeOffset "batch 2", sqlite.DescribeOffset "change 17",
// tablestore.DescribeOffset "2 shards, read to 2026-12-01 10:00:03Z"),
// else its raw form (cdc.Offset.String), "start" for the zero offset; at,
// unless zero, is when it was committed ("batch 2 at 2026-12-01
// 10:00:03Z"). JSON output keeps the raw form (serve.OffsetJSON).
func offsetText(o cdc.Offset, at time.Time) string {
	if o.IsZero() {
		return "start"
	}
	s, ok := postgres.DescribeOffset(o)
	if !ok {
		s, ok = sqlite.DescribeOffset(o)
	}
	if !ok {
		s, ok = tablestore.DescribeOffset(o)
	}
	if !ok {
		s = o.String()
	}
	if !at.IsZero() {
		s += " at " + at.UTC().Format("2006-01-02 15:04:05Z")
	}
	return s
}
