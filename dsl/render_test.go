package dsl

import (
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// This file renders parsed jobs and statements as stable text for golden
// files: one fact per line, positions as line:col.

func at(p pos.Pos) string {
	if !p.IsValid() {
		return "@-"
	}
	return fmt.Sprintf("@%d:%d", p.Line, p.Col)
}

func renderExpr(e plan.Expr) string { return fmt.Sprintf("%q %s", e.Text, at(e.Pos)) }

func renderJob(j *plan.Job) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("job %s format=%s %s", j.Name, j.Format, at(j.Pos))
	if j.Conn != "" {
		w("connection %q %s", j.Conn, at(j.ConnPos))
	}
	w("source %s %s", j.Source.Stream, at(j.Source.Pos))
	for _, c := range j.Source.Columns {
		w("  column %s %s %s", c.Name, c.Type, at(c.Pos))
	}
	if j.Filter != nil {
		w("filter %s", renderExpr(*j.Filter))
	} else {
		w("filter (none)")
	}
	if len(j.Select) == 0 {
		w("select *")
	}
	for _, it := range j.Select {
		w("select %s alias=%q", renderExpr(it.Expr), it.Alias)
	}
	s := j.Sink
	if s.Stdout {
		w("sink stdout format=%q", s.Format)
	} else {
		w("sink table %s %s", s.Table, at(s.TablePos))
	}
	w("  mode %s %s", s.Mode, at(s.ModePos))
	if len(s.Keys) > 0 {
		w("  keys %s %s", strings.Join(s.Keys, ","), at(s.KeysPos))
		if s.OnDelete != "" {
			w("  on_delete %s %s", s.OnDelete, at(s.OnDeletePos))
		}
	}
	if s.OnSchemaChange != "" {
		w("  on_schema_change %s %s", s.OnSchemaChange, at(s.OnSchemaChangePos))
	}
	if len(s.Columns) > 0 {
		w("  columns %s", strings.Join(s.Columns, ","))
	}
	if s.DeadLetter != "" {
		w("  dead_letter %s %s", s.DeadLetter, at(s.DeadLetterPos))
	}
	if s.Conn != "" {
		w("  connection %q %s", s.Conn, at(s.ConnPos))
	}
	if m := s.Merge; m != nil {
		var on []string
		for _, kp := range m.On {
			on = append(on, m.TargetAlias+"."+kp.Target+" = "+m.SourceAlias+"."+kp.Source)
		}
		w("  merge target=%s source=%s on %s %s", m.TargetAlias, m.SourceAlias, strings.Join(on, " AND "), at(m.OnPos))
		for _, c := range m.Clauses {
			kind := "MATCHED"
			if !c.Matched {
				kind = "NOT MATCHED"
			}
			cond := ""
			if c.Cond != nil {
				cond = " AND " + renderExpr(*c.Cond)
			}
			w("  when %s%s then %s %s", kind, cond, c.Action, at(c.Pos))
			for _, a := range c.Set {
				w("    set %s = %s", a.Column, renderExpr(a.Value))
			}
			for i, col := range c.InsertColumns {
				v := "(missing)"
				if i < len(c.InsertValues) {
					v = renderExpr(c.InsertValues[i])
				}
				w("    insert %s = %s", col, v)
			}
		}
	}
	if j.Schedule != "" {
		w("schedule %q tz=%q %s", j.Schedule, j.ScheduleTZ, at(j.SchedulePos))
	}
	for _, st := range j.Setup {
		w("setup %q %s", st.Text, at(st.Pos))
	}
	return b.String()
}

func renderStatement(st Statement) string {
	head := fmt.Sprintf("%s %T", at(st.Position()), st)
	switch s := st.(type) {
	case *CreateTable:
		var cols []string
		for _, c := range s.Schema.Columns {
			col := c.Name + " " + c.Type.String()
			if c.NotNull {
				col += " NOT NULL"
			}
			cols = append(cols, col)
		}
		return fmt.Sprintf("%s table=%s ifNotExists=%v columns=[%s] key=[%s]", head, s.Table, s.IfNotExists, strings.Join(cols, ", "), strings.Join(s.Schema.Key, ","))
	case *SetChangeTracking:
		return fmt.Sprintf("%s table=%s enabled=%v", head, s.Table, s.Enabled)
	case *CreateStream:
		return fmt.Sprintf("%s stream=%s table=%s orReplace=%v ifNotExists=%v mode=%s showInitialRows=%v comment=%q", head, s.Stream, s.Table, s.OrReplace, s.IfNotExists, s.Mode, s.ShowInitialRows, s.Comment)
	case *DropStream:
		return fmt.Sprintf("%s stream=%s ifExists=%v", head, s.Stream, s.IfExists)
	case *DropTable:
		return fmt.Sprintf("%s table=%s ifExists=%v", head, s.Table, s.IfExists)
	case *ShowStreams:
		return head
	case *DescribeStream:
		return fmt.Sprintf("%s stream=%s", head, s.Stream)
	case *DML:
		return fmt.Sprintf("%s kind=%s text=%q", head, s.Kind, s.Text)
	}
	return head
}
