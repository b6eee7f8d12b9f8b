package dsl

import (
	"regexp"
	"strings"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// metaKeys are the metadata keys of a SQL job file's leading comment block.
var metaKeys = []string{"name", "connection", "sink_connection", "schedule", "timezone", "history_keys", "on_schema_change", "dead_letter"}

// ParseSQL parses a SQL job file: an optional leading comment block whose
// "key: value" lines set metadata (name, connection, sink_connection,
// schedule, timezone, history_keys, on_schema_change (an INSERT INTO t
// SELECT * job only), dead_letter; other comment text is ignored), setup
// statements,
// and exactly one consuming statement, which must be the last:
//
//	INSERT INTO t [(c, …)] SELECT items FROM stream [WHERE cond]
//	INSERT OVERWRITE [TABLE] t [(c, …)] SELECT items FROM stream [WHERE cond]
//	MERGE INTO t [AS a] USING stream_or_(subquery) [AS b] ON a.k = b.k [AND …]
//	    WHEN [NOT] MATCHED [AND cond] THEN …
//
// Every INSERT … SELECT, INSERT OVERWRITE and MERGE counts as consuming.
// "history_keys: k1, k2" makes an INSERT INTO job a history sink (mode
// history, SCD type 2) keyed by those target columns; "dead_letter: t"
// sends the rows the sink rejects for their value to table t of the sink
// database (plan.Sink.DeadLetter).
// Setup statements are checked with the statement parser and kept as text
// and position in Job.Setup. All errors of the file are returned together
// in a pos.List.
func ParseSQL(file string, src []byte) (*plan.Job, error) {
	job, err := parseSQL(file, src)
	if err != nil {
		return nil, err
	}
	return job, nil
}

// parseSQL is ParseSQL, returning the partial job with the errors.
func parseSQL(file string, src []byte) (*plan.Job, error) {
	text := string(src)
	s := newSource(file, text)
	if errs := checkText(s); len(errs) > 0 {
		return nil, errs.Err()
	}
	all := lex(text, 0, len(text))
	job := &plan.Job{File: file, Pos: s.pos(0), Format: "sql"}
	var errs pos.List

	meta := readMetadata(s, all, &errs)
	spans := splitScript(all)
	consumer := -1
	for i, sp := range spans {
		if !isConsuming(sp) {
			continue
		}
		if consumer >= 0 {
			errs = append(errs, errAt(s.pos(sp.off), ErrConsuming,
				"a second consuming statement (the first is at %s); a job file has exactly one INSERT … SELECT or MERGE", s.pos(spans[consumer].off)))
			continue
		}
		consumer = i
	}
	for i, sp := range spans {
		switch {
		case consumer >= 0 && i == consumer:
			errs = append(errs, parseConsumer(s, sp, job)...)
		case isConsuming(sp):
			// reported above
		case consumer >= 0 && i > consumer:
			errs = append(errs, errAt(s.pos(sp.off), ErrConsuming,
				"statement after the consuming statement (at %s); setup statements go before it", s.pos(spans[consumer].off)))
		default:
			if _, err := parseStatement(s, sp); err != nil {
				errs = append(errs, err...)
				continue
			}
			job.Setup = append(job.Setup, plan.Statement{Text: sp.text(s), Pos: s.pos(sp.off)})
		}
	}
	if consumer < 0 {
		errs = append(errs, errAt(s.pos(len(text)), ErrNoConsuming,
			"no consuming statement: a SQL job needs INSERT INTO t SELECT … FROM stream or MERGE INTO t USING stream …"))
	}

	name := meta["name"]
	setName(job, name.value, name.pos, &errs)
	if m, ok := meta["connection"]; ok {
		job.Conn, job.ConnPos = m.value, m.pos
	}
	if m, ok := meta["sink_connection"]; ok {
		job.Sink.Conn, job.Sink.ConnPos = m.value, m.pos
	}
	if m, ok := meta["schedule"]; ok {
		job.Schedule, job.SchedulePos = m.value, m.pos
	}
	if m, ok := meta["timezone"]; ok {
		job.ScheduleTZ = m.value
		if _, ok := meta["schedule"]; !ok {
			errs = append(errs, errAt(m.pos, ErrBadValue, "timezone applies to a schedule, but the job has none"))
		}
	}
	if m, ok := meta["history_keys"]; ok {
		historyKeys(job, m, &errs)
	}
	if m, ok := meta["on_schema_change"]; ok {
		job.Sink.OnSchemaChangePos = m.pos
		if d, ok := parseSchemaPolicy(m.value); !ok {
			errs = append(errs, errAt(m.pos, ErrBadValue, "unknown on_schema_change %q (known: evolve, fail, ignore)", m.value))
		} else if len(job.Select) > 0 || len(job.Sink.Columns) > 0 || job.Sink.Merge != nil {
			errs = append(errs, errAt(m.pos, ErrBadValue, "%s", schemaPolicySelect))
		} else {
			job.Sink.OnSchemaChange = d
		}
	}
	if m, ok := meta["dead_letter"]; ok {
		sqlDeadLetter(job, m, &errs)
	}
	return job, errs.Err()
}

// historyKeys makes job's INSERT INTO a history sink keyed by the columns
// of m ("id, region").
func historyKeys(job *plan.Job, m metaValue, errs *pos.List) {
	if job.Sink.Mode != plan.ModeAppend || job.Sink.Merge != nil {
		*errs = append(*errs, errAt(m.pos, ErrBadValue, "history_keys applies to an INSERT INTO … SELECT job (the consuming statement is %s)", describeMode(job.Sink.Mode)))
		return
	}
	seen := map[string]bool{}
	for _, k := range strings.Split(m.value, ",") {
		k = strings.Trim(strings.TrimSpace(k), "`\"")
		if k == "" {
			*errs = append(*errs, errAt(m.pos, ErrBadValue, "history_keys lists an empty column name"))
			return
		}
		if seen[strings.ToLower(k)] {
			*errs = append(*errs, errAt(m.pos, ErrDuplicate, "key column %q is listed twice", k))
			return
		}
		seen[strings.ToLower(k)] = true
		job.Sink.Keys = append(job.Sink.Keys, k)
	}
	job.Sink.Mode, job.Sink.KeysPos = plan.ModeHistory, m.pos
}

func describeMode(m plan.Mode) string {
	switch m {
	case plan.ModeOverwrite:
		return "INSERT OVERWRITE"
	case plan.ModeMerge:
		return "MERGE INTO"
	}
	return string(m)
}

// metaValue is one metadata value and the position of its first byte.
type metaValue struct {
	value string
	pos   pos.Pos
}

var metaLine = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(.*)$`)

// readMetadata reads "key: value" lines from the comments before the first
// statement. Keys are case-insensitive; '-' and '_' are the same.
func readMetadata(s *source, all []token, errs *pos.List) map[string]metaValue {
	meta := map[string]metaValue{}
	for _, t := range all {
		if t.kind != tComment {
			break
		}
		body, off := t.val, t.off
		switch {
		case strings.HasPrefix(body, "--"):
			body, off = body[2:], off+2
		case strings.HasPrefix(body, "#"):
			body, off = body[1:], off+1
		case strings.HasPrefix(body, "/*"):
			body, off = body[2:len(body)-2], off+2
		}
		for len(body) > 0 {
			line, rest, _ := strings.Cut(body, "\n")
			lineOff := off
			body, off = rest, off+len(line)+1
			trimmed := strings.TrimLeft(line, " \t*")
			start := lineOff + len(line) - len(trimmed)
			m := metaLine.FindStringSubmatchIndex(strings.TrimRight(trimmed, "\r"))
			if m == nil {
				continue
			}
			key := strings.ReplaceAll(strings.ToLower(trimmed[m[2]:m[3]]), "-", "_")
			known := false
			for _, k := range metaKeys {
				known = known || k == key
			}
			if !known {
				// Other "word: text" lines are comments, but a word a
				// typo away from a key ("conection", "schedul") is taken
				// for a misspelled key: left a comment, the job would
				// run against the default connection or unscheduled.
				if k := nearMetaKey(key); k != "" {
					*errs = append(*errs, errAt(s.pos(start), ErrUnknownKey, "unknown metadata key %q (did you mean %q?); the leading comments' \"key: value\" lines set %s", trimmed[m[2]:m[3]], k, strings.Join(metaKeys, ", ")))
				}
				continue
			}
			raw := trimmed[m[4]:m[5]]
			value := strings.TrimSpace(raw)
			vpos := s.pos(start + m[4] + len(raw) - len(strings.TrimLeft(raw, " \t")))
			if prev, dup := meta[key]; dup {
				*errs = append(*errs, errAt(s.pos(start), ErrDuplicate, "metadata %s is given twice (first at %s)", key, prev.pos))
				continue
			}
			if value == "" {
				*errs = append(*errs, errAt(vpos, ErrBadValue, "metadata %s is empty", key))
				continue
			}
			meta[key] = metaValue{value: value, pos: vpos}
		}
	}
	return meta
}

// nearMetaKey returns the metadata key a typo away from key (edit
// distance 1, or 2 for a key of six characters or more), or "" when none
// is: "-- note: …" or "-- date: …" stay comments.
func nearMetaKey(key string) string {
	limit := 1
	if len(key) >= 6 {
		limit = 2
	}
	for _, k := range metaKeys {
		if editDistance(key, k) <= limit {
			return k
		}
	}
	return ""
}

// isConsuming reports whether a statement is a job's consuming statement:
// MERGE, INSERT OVERWRITE, or INSERT with a SELECT outside parentheses.
func isConsuming(sp span) bool {
	if len(sp.toks) < 2 {
		return false
	}
	first := sp.toks[0]
	if first.isKw("MERGE") {
		return true
	}
	if !first.isKw("INSERT") {
		return false
	}
	if sp.toks[1].isKw("OVERWRITE") {
		return true
	}
	depth := 0
	for _, t := range sp.toks {
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			depth--
		case depth == 0 && t.isKw("SELECT"):
			return true
		case depth == 0 && t.isKw("VALUES"):
			return false
		}
	}
	return false
}

// parseConsumer parses the consuming statement into job.
func parseConsumer(s *source, sp span, job *plan.Job) pos.List {
	p := newParser(s, sp)
	return p.parse(func() {
		if p.peek().isKw("MERGE") {
			p.merge(job)
		} else {
			p.insertSelect(job)
		}
		p.expectEnd()
	})
}

// insertSelect parses INSERT INTO|OVERWRITE [TABLE] t [(cols)] SELECT ….
func (p *parser) insertSelect(job *plan.Job) {
	ins := p.expectKw("INSERT")
	sink := &job.Sink
	sink.Mode, sink.ModePos = plan.ModeAppend, p.posOf(ins)
	if p.acceptKw("OVERWRITE") {
		sink.Mode = plan.ModeOverwrite
	} else {
		p.expectKw("INTO")
	}
	p.acceptKw("TABLE")
	var tok token
	sink.Table, tok = p.objectName("target table")
	sink.TablePos = p.posOf(tok)
	var colToks []token
	if p.peek().isOp("(") {
		sink.Columns, colToks = p.nameList("target column")
		p.checkUnique(colToks, "target column")
	}
	q := p.query()
	job.Source = plan.Source{Stream: q.stream, Pos: p.posOf(q.streamTok)}
	job.Filter, job.Select = q.filter, q.items
	if len(sink.Columns) > 0 && len(q.items) > 0 && len(sink.Columns) != len(q.items) {
		p.report(colToks[0], ErrBadValue, "INSERT lists %d target columns but SELECT has %d items", len(sink.Columns), len(q.items))
	}
}

// checkUnique reports a name listed twice (case-insensitively).
func (p *parser) checkUnique(toks []token, what string) {
	seen := map[string]bool{}
	for _, t := range toks {
		k := strings.ToLower(t.val)
		if seen[k] {
			p.report(t, ErrDuplicate, "%s %q is listed twice", what, t.val)
		}
		seen[k] = true
	}
}

// query is a parsed "SELECT items FROM stream [WHERE cond]".
type query struct {
	items     []plan.SelectItem // empty for *
	stream    string
	streamTok token
	filter    *plan.Expr
}

// clauseWords are the SELECT clauses a consuming query cannot have.
var clauseWords = []string{"GROUP", "ORDER", "LIMIT", "HAVING", "UNION", "WINDOW", "QUALIFY", "EXCEPT", "INTERSECT", "OFFSET"}

// query parses SELECT items FROM stream [WHERE cond]. It stops before a ')'
// that closes an enclosing subquery.
func (p *parser) query() query {
	var q query
	p.expectKw("SELECT")
	if t := p.peek(); t.isKw("DISTINCT") {
		p.fail(t, ErrNotSupported, "SELECT DISTINCT is not supported in a consuming statement")
	}
	p.acceptKw("ALL")
	if p.peek().isOp("*") && (p.peekAt(1).isKw("FROM") || p.peekAt(1).isOp(",")) {
		star := p.next()
		if p.peek().isOp(",") {
			p.fail(star, ErrNotSupported, "* must be the only select item")
		}
	} else {
		for {
			item := p.expr("select item", stopAt(",", "FROM"))
			if strings.HasSuffix(item.Text, "*") && !strings.Contains(item.Text, "(") {
				p.fail(p.toks[p.i-1], ErrNotSupported, "%s: * must be the only select item, unqualified", item.Text)
			}
			q.items = append(q.items, plan.SelectItem{Expr: item})
			if !p.acceptOp(",") {
				break
			}
		}
	}
	p.expectKw("FROM")
	q.stream, q.streamTok = p.objectName("stream name")
	switch t := p.peek(); {
	case t.isKw("AS"), t.kind == tQIdent, t.kind == tIdent && !t.isKw("WHERE") && !isClauseWord(t):
		p.fail(t, ErrNotSupported, "an alias for the stream is not supported here; refer to its columns unqualified")
	case t.isOp(","), t.isKw("JOIN"):
		p.fail(t, ErrNotSupported, "a consuming statement reads one stream; joins are not supported")
	}
	if p.acceptKw("WHERE") {
		w := p.expr("WHERE condition", stopAt(clauseWords...))
		q.filter = &w
	}
	if t := p.peek(); isClauseWord(t) {
		p.fail(t, ErrNotSupported, "%s is not supported in a consuming statement", strings.ToUpper(t.val))
	}
	return q
}

func isClauseWord(t token) bool {
	for _, w := range clauseWords {
		if t.isKw(w) {
			return true
		}
	}
	return false
}
