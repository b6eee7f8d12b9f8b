package plan

import (
	"fmt"
	"github.com/sluicedata/sluice/cdc"
	"io"
	"strings"
)

// Format writes p for humans, as `sluice plan` prints it: the job, the four
// stages with their types, how the run executes (each step with its SQL),
// and the warnings.
func Format(w io.Writer, p *Plan) error {
	var b strings.Builder
	j := p.Job
	fmt.Fprintf(&b, "job %s", j.Name)
	if j.File != "" {
		fmt.Fprintf(&b, " (%s)", j.File)
	}
	b.WriteString("\n")
	if j.Schedule != "" {
		fmt.Fprintf(&b, "  schedule: %s", j.Schedule)
		if j.ScheduleTZ != "" {
			fmt.Fprintf(&b, " (%s)", j.ScheduleTZ)
		}
		b.WriteString("\n")
	}
	if len(p.Setup) > 0 {
		b.WriteString("setup (run before the read, each run):\n")
		for _, s := range p.Setup {
			fmt.Fprintf(&b, "  %s;\n", oneLine(s))
		}
	}
	fmt.Fprintf(&b, "1. source   %s stream %s on table %s (%s) via %s\n", p.Source.Backend, p.Source.Stream, p.Source.Table, p.Source.Mode, p.Source.Conn)
	fmt.Fprintf(&b, "             columns: %s\n", columnList(p.Source.Schema.Columns))
	if len(p.Source.TableSchema.Key) > 0 {
		fmt.Fprintf(&b, "             primary key: %s\n", strings.Join(p.Source.TableSchema.Key, ", "))
	}
	if p.Filter != nil {
		fmt.Fprintf(&b, "2. filter   %s\n", p.Filter.Text)
	} else {
		b.WriteString("2. filter   (none: every change)\n")
	}
	items := make([]string, len(p.Project))
	for i, it := range p.Project {
		items[i] = fmt.Sprintf("%s %s", it.Name, it.Type)
		if !strings.EqualFold(strings.Trim(it.Text, "`"), it.Name) {
			items[i] = fmt.Sprintf("%s AS %s %s", it.Text, it.Name, it.Type)
		}
	}
	fmt.Fprintf(&b, "3. project  %s\n", strings.Join(items, ", "))
	target := p.Sink.Table
	if p.Sink.Backend == "stdout" {
		target = "stdout"
	}
	fmt.Fprintf(&b, "4. sink     %s %s mode %s", p.Sink.Backend, target, p.Sink.Mode)
	if len(p.Sink.Keys) > 0 {
		fmt.Fprintf(&b, " keys (%s)", strings.Join(p.Sink.Keys, ", "))
	}
	if p.Sink.Backend != "stdout" {
		fmt.Fprintf(&b, " via %s", p.Sink.Conn)
		if !p.Sink.TableExists {
			b.WriteString(" (table will be created)")
		}
	}
	b.WriteString("\n")
	switch {
	case p.Sink.Mode == ModeHistory:
		fmt.Fprintf(&b, "             one row per version of each key, plus %s TIMESTAMP (the commit that made it) and %s TIMESTAMP (the commit that replaced or deleted it; NULL while current)", ColValidFrom, ColValidTo)
		if p.Sink.TableExists {
			b.WriteString("; the existing target must have both")
		}
		if p.Source.Mode == "STANDARD" {
			b.WriteString("; a STANDARD stream nets out the changes between runs: one version per key per run")
		}
		b.WriteString("\n")
	case p.Sink.Mode == ModeMerge && p.Sink.OnDelete == OnDeleteSoft:
		fmt.Fprintf(&b, "             on delete: soft — the row stays, %s TIMESTAMP is set to the DELETE's commit time (a later INSERT clears it)", ColDeletedAt)
		if p.Sink.TableExists {
			b.WriteString("; the existing target must have it")
		}
		b.WriteString("\n")
	case p.Sink.Mode == ModeMerge && p.Sink.OnDelete == OnDeleteIgnore:
		b.WriteString("             on delete: ignore — a DELETE leaves the target row as it was\n")
	}
	if line := p.Sink.schemaPolicyLine(p.Job); line != "" {
		b.WriteString("             " + line + "\n")
	}
	if p.Sink.DeadLetter != "" {
		fmt.Fprintf(&b, "             dead letters: a row the sink rejects for its value (conversion, NOT NULL, CHECK, length, an unavoidable unique violation) goes to table %s of the sink database (created when missing), in the same transaction as the rows and the checkpoint", p.Sink.DeadLetter)
		if p.Pushdown {
			b.WriteString("; the pushdown stays: a window whose statement fails on a value runs again through sluice, batch by batch under savepoints")
		}
		b.WriteString("\n")
	}
	if p.Pushdown && p.Stepped {
		b.WriteString("execution: pushed down — in steps, each one transaction in the database with its checkpoint; rows never leave it\n")
	} else if p.Pushdown {
		b.WriteString("execution: pushed down — one transaction in the database; rows never leave it\n")
	} else {
		b.WriteString("execution: through sluice — sink rows and checkpoint commit in one sink transaction, then the stream offset moves\n")
	}
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "  step %d [%s] %s\n", i+1, s.Where, s.What)
		if s.SQL != "" {
			for _, l := range strings.Split(strings.TrimSpace(s.SQL), "\n") {
				fmt.Fprintf(&b, "      %s\n", l)
			}
		}
	}
	for _, wmsg := range p.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", wmsg)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func columnList(cols []cdc.Column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.Name + " " + c.Type.String()
	}
	return strings.Join(parts, ", ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// schemaPolicyLine describes the sink's on_schema_change when the job sets
// it or this run changes the target ("" otherwise, so that plans of jobs
// that never meet a schema change read as before).
func (st *SinkStage) schemaPolicyLine(job *Job) string {
	set := job != nil && job.Sink.OnSchemaChange != ""
	if !set && len(st.Evolve) == 0 {
		return ""
	}
	var line string
	switch st.OnSchemaChange {
	case SchemaEvolve:
		line = fmt.Sprintf("on schema change: evolve — a column the source table gains is added to %s, a widened type widens its column; a column it loses stays in %s, and later rows leave it out", st.Table, st.Table)
	case SchemaFail:
		line = fmt.Sprintf("on schema change: fail — a run stops before writing when the source table's columns differ from %s's", st.Table)
	case SchemaIgnore:
		line = fmt.Sprintf("on schema change: ignore — only the columns %s has are written; it is never altered", st.Table)
	default:
		return ""
	}
	if len(st.Evolve) > 0 {
		parts := make([]string, len(st.Evolve))
		for i, c := range st.Evolve {
			parts[i] = c.String()
		}
		line += "; this run: " + strings.Join(parts, "; ")
	}
	return line
}
