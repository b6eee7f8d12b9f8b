package dsl

import (
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// The sections of a YAML job file: source, select and sink.

// source walks "source: stream" or "source: {stream: s, columns: {…}}".
func (y *yamlJob) source(job *plan.Job, pr pair) {
	if _, isMap := pr.value.(*ast.MappingNode); !isMap {
		if _, isMV := pr.value.(*ast.MappingValueNode); !isMV {
			if s, ok := y.str(pr, "source"); ok {
				if n, ok := y.name(s, pr); ok {
					job.Source.Stream, job.Source.Pos = n, pr.valPos
				}
			}
			return
		}
	}
	pairs, _ := y.mapping(pr.value, "source", pr.valPos)
	seen := false
	for _, sp := range pairs {
		switch sp.key {
		case "stream":
			seen = true
			if s, ok := y.str(sp, "source stream"); ok {
				if n, ok := y.name(s, sp); ok {
					job.Source.Stream, job.Source.Pos = n, sp.valPos
				}
			}
		case "columns":
			cols, ok := y.mapping(sp.value, "source columns", sp.valPos)
			if !ok {
				continue
			}
			for _, c := range cols {
				t, ok := y.str(c, "the type of column "+c.key)
				if !ok {
					continue
				}
				if _, err := cdc.ParseType(t); err != nil {
					y.errs = append(y.errs, errAtCause(c.valPos, ErrBadValue, err, "column %s: %v", c.key, err))
					continue
				}
				job.Source.Columns = append(job.Source.Columns, plan.ColumnDecl{Name: c.key, Type: t, Pos: c.keyPos})
			}
		default:
			y.unknownKey(sp, "in source", sourceKeys)
		}
	}
	if !seen {
		y.add(pr.keyPos, ErrMissingKey, "missing key \"stream\" in source")
	}
}

// selectList walks "select: [expr, …]".
func (y *yamlJob) selectList(job *plan.Job, pr pair) {
	seq, ok := pr.value.(*ast.SequenceNode)
	if !ok {
		if s, isStr := y.scalarText(pr.value); isStr && strings.TrimSpace(s) == "*" {
			return
		}
		y.add(pr.valPos, ErrBadValue, "select must be a list of expressions such as [id, \"upper(name) AS name_u\"], found %s", kindName(pr.value))
		return
	}
	if len(seq.Values) == 0 {
		y.add(pr.valPos, ErrBadValue, "select is empty; leave it out to select every column")
		return
	}
	var items []plan.SelectItem
	star := false
	for _, v := range seq.Values {
		n := y.resolve(v)
		e, ok := y.expr(n, "a select item", y.nodePos(v))
		if !ok {
			continue
		}
		if strings.TrimSpace(e.Text) == "*" {
			star = true
			if len(seq.Values) > 1 {
				y.add(e.Pos, ErrNotSupported, "* must be the only select item")
			}
			continue
		}
		items = append(items, plan.SelectItem{Expr: e})
	}
	if !star {
		job.Select = items
	}
}

// sink walks the sink mapping and checks its combinations.
func (y *yamlJob) sink(job *plan.Job, pr pair) {
	pairs, ok := y.mapping(pr.value, "sink", pr.keyPos)
	if !ok {
		return
	}
	s := &job.Sink
	have := map[string]pair{}
	modeBad := false // the mode is not one sluice knows
	for _, sp := range pairs {
		have[sp.key] = sp
		switch sp.key {
		case "table":
			if v, ok := y.str(sp, "sink table"); ok {
				if n, ok := y.name(v, sp); ok {
					s.Table, s.TablePos = n, sp.valPos
				}
			}
		case "stdout":
			b, ok := sp.value.(*ast.BoolNode)
			if !ok {
				y.add(sp.valPos, ErrBadValue, "stdout must be true or false, found %s", kindName(sp.value))
				continue
			}
			s.Stdout = b.Value
		case "format":
			if v, ok := y.str(sp, "format"); ok {
				switch f := strings.ToLower(strings.TrimSpace(v)); f {
				case "table", "jsonl":
					s.Format = f
				default:
					y.add(sp.valPos, ErrBadValue, "unknown format %q (known: table, jsonl)", v)
				}
			}
		case "mode":
			modeBad = true
			if v, ok := y.str(sp, "mode"); ok {
				s.ModePos = sp.valPos
				if m, ok := parseMode(v); ok {
					s.Mode, modeBad = m, false
				} else {
					y.add(sp.valPos, ErrBadValue, "unknown mode %q (known: %s)", v, modeNames())
				}
			}
		case "keys":
			s.Keys, s.KeysPos = y.keys(sp), sp.valPos
		case "on_delete":
			if v, ok := y.str(sp, "on_delete"); ok {
				s.OnDeletePos = sp.valPos
				if d, ok := parseOnDelete(v); ok {
					s.OnDelete = d
				} else {
					y.add(sp.valPos, ErrBadValue, "unknown on_delete %q (known: delete, soft, ignore)", v)
				}
			}
		case "on_schema_change":
			if v, ok := y.str(sp, "on_schema_change"); ok {
				s.OnSchemaChangePos = sp.valPos
				if d, ok := parseSchemaPolicy(v); ok {
					s.OnSchemaChange = d
				} else {
					y.add(sp.valPos, ErrBadValue, "unknown on_schema_change %q (known: evolve, fail, ignore)", v)
				}
			}
		case "connection":
			if v, ok := y.str(sp, "sink connection"); ok {
				s.Conn, s.ConnPos = v, sp.valPos
			}
		case "dead_letter":
			if v, ok := y.str(sp, "dead_letter"); ok {
				if n, ok := y.name(v, sp); ok {
					s.DeadLetter, s.DeadLetterPos = n, sp.valPos
				}
			}
		default:
			y.unknownKey(sp, "in sink", sinkKeys)
		}
	}
	_, hasTable := have["table"]
	switch {
	case s.Stdout && hasTable:
		y.add(have["table"].keyPos, ErrBadValue, "sink has both table and stdout: true; choose one")
	case !s.Stdout && !hasTable:
		y.add(pr.keyPos, ErrMissingKey, "missing key \"table\" in sink (or stdout: true)")
	}
	if f, ok := have["format"]; ok && !s.Stdout {
		y.add(f.keyPos, ErrBadValue, "format applies only to stdout: true")
	}
	if c, ok := have["on_schema_change"]; ok && s.Stdout {
		y.add(c.keyPos, ErrBadValue, "on_schema_change applies to a target table, not to stdout: true")
	}
	if c, ok := have["connection"]; ok && s.Stdout {
		y.add(c.keyPos, ErrBadValue, "connection does not apply to stdout: true")
	}
	if d, ok := have["dead_letter"]; ok {
		deadLetterChecks(y, s, d)
	}
	if modeBad {
		// An unknown mode is reported once; checks that depend on the
		// mode would only add follow-on errors.
		return
	}
	if s.Stdout && s.Mode != plan.ModeAppend {
		y.add(have["mode"].valPos, ErrBadValue, "stdout sinks only append; mode %s needs a table", s.Mode)
	}
	_, hasKeys := have["keys"]
	switch {
	case s.Mode.Keyed() && !hasKeys:
		y.add(pr.keyPos, ErrMissingKey, "mode %s needs keys: the target's key columns (keys: [id])", s.Mode)
	case !s.Mode.Keyed() && hasKeys:
		y.add(have["keys"].keyPos, ErrBadValue, "keys apply only to modes merge and history (the mode is %s)", s.Mode)
	}
	if d, ok := have["on_delete"]; ok && s.Mode != plan.ModeMerge {
		y.add(d.keyPos, ErrBadValue, "on_delete applies only to mode merge (the mode is %s)", s.Mode)
	}
}

// schemaPolicySelect is the error of on_schema_change on a job that names
// its columns.
const schemaPolicySelect = "on_schema_change applies to a job that projects every column of its source table (no select:, or SELECT *); a job that names its columns writes just those"

// parseSchemaPolicy parses an on_schema_change choice (case-insensitive).
func parseSchemaPolicy(s string) (plan.SchemaPolicy, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, d := range plan.SchemaPolicies {
		if string(d) == s {
			return d, true
		}
	}
	return "", false
}

// parseOnDelete parses an on_delete choice (case-insensitive).
func parseOnDelete(s string) (plan.OnDelete, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, d := range plan.OnDeletes {
		if string(d) == s {
			return d, true
		}
	}
	return "", false
}

// keys walks "keys: [a, b]" (a single name is accepted too).
func (y *yamlJob) keys(sp pair) []string {
	if s, ok := y.scalarText(sp.value); ok {
		if strings.TrimSpace(s) == "" {
			y.add(sp.valPos, ErrBadValue, "keys is empty")
			return nil
		}
		n, ok := y.name(s, sp)
		if !ok {
			return nil
		}
		return []string{n}
	}
	seq, ok := sp.value.(*ast.SequenceNode)
	if !ok || len(seq.Values) == 0 {
		y.add(sp.valPos, ErrBadValue, "keys must be a non-empty list of column names, found %s", kindName(sp.value))
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, v := range seq.Values {
		n := y.resolve(v)
		s, ok := y.scalarText(n)
		if !ok || strings.TrimSpace(s) == "" {
			y.add(y.nodePos(v), ErrBadValue, "a key must be a column name, found %s", kindName(n))
			continue
		}
		s, ok = y.name(s, pair{valPos: y.nodePos(v)})
		if !ok {
			continue
		}
		if seen[strings.ToLower(s)] {
			y.add(y.nodePos(v), ErrDuplicate, "key column %q is listed twice", s)
			continue
		}
		seen[strings.ToLower(s)] = true
		out = append(out, s)
	}
	return out
}

// parseMode parses a sink mode name (case-insensitive).
func parseMode(s string) (plan.Mode, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, m := range plan.Modes {
		if string(m) == s {
			return m, true
		}
	}
	return "", false
}

func modeNames() string {
	names := make([]string, len(plan.Modes))
	for i, m := range plan.Modes {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}
