package dsl

import (
	"strings"

	"github.com/sluicedata/sluice/plan"
)

// onHelp explains the ON conditions sluice accepts.
const onHelp = "MERGE ON must be a conjunction of equalities between a target column and a source column (t.k = s.k [AND t.k2 = s.k2])"

// merge parses
//
//	MERGE INTO target [[AS] a] USING (stream | (SELECT … FROM stream [WHERE …])) [[AS] b]
//	ON a.k = b.k [AND …] WHEN … [WHEN …]
//
// into job: the source stream, the subquery's filter and select list, and a
// merge sink keyed by the target columns of ON.
func (p *parser) merge(job *plan.Job) {
	mergeTok := p.expectKw("MERGE", "INTO")
	m := &plan.Merge{}
	sink := &job.Sink
	sink.Mode, sink.ModePos, sink.Merge = plan.ModeMerge, p.posOf(mergeTok), m

	var tok token
	sink.Table, tok = p.objectName("target table")
	sink.TablePos = p.posOf(tok)
	m.TargetAlias = p.alias("USING", sink.Table)

	usingTok := p.expectKw("USING")
	if p.acceptOp("(") {
		q := p.query()
		p.expectOp(")")
		job.Source = plan.Source{Stream: q.stream, Pos: p.posOf(q.streamTok)}
		job.Filter, job.Select = q.filter, q.items
		if t := p.peek(); t.isKw("ON") {
			p.fail(t, ErrSyntax, "a subquery in USING needs an alias: USING (SELECT …) AS s")
		}
		m.SourceAlias = p.alias("ON", "")
	} else {
		job.Source.Stream, tok = p.objectName("source stream or (subquery)")
		job.Source.Pos = p.posOf(tok)
		m.SourceAlias = p.alias("ON", job.Source.Stream)
	}
	if strings.EqualFold(m.TargetAlias, m.SourceAlias) {
		p.fail(usingTok, ErrBadValue, "target and source are both named %q; give one an alias", m.SourceAlias)
	}

	p.expectKw("ON")
	m.OnPos = p.posOf(p.peek())
	sink.KeysPos = m.OnPos
	m.On = p.onCondition(m.TargetAlias, m.SourceAlias)
	for _, kp := range m.On {
		sink.Keys = append(sink.Keys, kp.Target)
	}

	if !p.peek().isKw("WHEN") {
		if p.peek().kind == tEOF {
			p.unexpected("WHEN [NOT] MATCHED")
		}
		p.fail(p.peek(), ErrNotSupported, "%s; found %s", onHelp, p.src.describe(p.peek()))
	}
	for p.peek().isKw("WHEN") {
		m.Clauses = append(m.Clauses, p.whenClause(m.TargetAlias))
	}
	p.checkClauses(m.Clauses)
}

// alias parses an optional "[AS] name" before the keyword next and returns
// it, or def when there is none.
func (p *parser) alias(next, def string) string {
	if p.acceptKw("AS") {
		n, _ := p.name("alias")
		return n
	}
	if t := p.peek(); t.isName() && !t.isKw(next) {
		n, _ := p.name("alias")
		return n
	}
	return def
}

// colRef is a possibly qualified column reference.
type colRef struct {
	qual, col string
	tok       token // the first token
}

func (p *parser) colRef() colRef {
	t := p.peek()
	if !t.isName() {
		p.fail(t, ErrNotSupported, "%s; found %s", onHelp, p.src.describe(t))
	}
	n, _ := p.name("column")
	if p.acceptOp(".") {
		c, _ := p.name("column")
		return colRef{qual: n, col: c, tok: t}
	}
	return colRef{col: n, tok: t}
}

// onCondition parses "a.k = b.k [AND …]" (terms may be parenthesised) and
// pairs target and source columns.
func (p *parser) onCondition(target, source string) []plan.KeyPair {
	var pairs []plan.KeyPair
	seen := map[string]bool{}
	var term func()
	term = func() {
		if p.acceptOp("(") {
			term()
			for p.acceptKw("AND") {
				term()
			}
			p.expectOp(")")
			return
		}
		l := p.colRef()
		if t := p.peek(); !t.isOp("=") {
			p.fail(t, ErrNotSupported, "%s; found %s", onHelp, p.src.describe(t))
		}
		p.next()
		r := p.colRef()
		kp, ok := p.keyPair(l, r, target, source)
		if !ok {
			return
		}
		if seen[strings.ToLower(kp.Target)] {
			p.report(l.tok, ErrDuplicate, "target column %q appears twice in ON", kp.Target)
			return
		}
		seen[strings.ToLower(kp.Target)] = true
		pairs = append(pairs, kp)
	}
	term()
	for p.acceptKw("AND") {
		term()
	}
	return pairs
}

// keyPair decides which side of an equality is the target column.
func (p *parser) keyPair(l, r colRef, target, source string) (plan.KeyPair, bool) {
	side := func(c colRef) int { // 1 target, 2 source, 0 unqualified, -1 unknown
		switch {
		case c.qual == "":
			return 0
		case strings.EqualFold(c.qual, target):
			return 1
		case strings.EqualFold(c.qual, source):
			return 2
		}
		return -1
	}
	ls, rs := side(l), side(r)
	for _, c := range []colRef{l, r} {
		if side(c) < 0 {
			p.report(c.tok, ErrBadValue, "unknown qualifier %q in ON: use %s (the target) or %s (the source)", c.qual, target, source)
			return plan.KeyPair{}, false
		}
	}
	switch {
	case ls == 0 && rs == 0:
		p.report(l.tok, ErrBadValue, "qualify the columns of ON: %s.%s = %s.%s", target, l.col, source, r.col)
	case ls == rs:
		p.report(l.tok, ErrNotSupported, "%s; both sides name the %s", onHelp, map[int]string{1: "target", 2: "source"}[ls])
	case ls == 1 || rs == 2:
		return plan.KeyPair{Target: l.col, Source: r.col}, true
	default:
		return plan.KeyPair{Target: r.col, Source: l.col}, true
	}
	return plan.KeyPair{}, false
}

// whenClause parses one WHEN [NOT] MATCHED [AND cond] THEN action.
func (p *parser) whenClause(target string) plan.WhenClause {
	whenTok := p.expectKw("WHEN")
	wc := plan.WhenClause{Pos: p.posOf(whenTok), Matched: true}
	if p.acceptKw("NOT") {
		wc.Matched = false
	}
	p.expectKw("MATCHED")
	if t := p.peek(); t.isKw("BY") {
		if !wc.Matched && p.isKw("BY", "TARGET") {
			p.i += 2
		} else {
			p.fail(t, ErrNotSupported, "WHEN NOT MATCHED BY SOURCE is not supported")
		}
	}
	if p.acceptKw("AND") {
		c := p.expr("WHEN condition", stopAt("THEN"))
		wc.Cond = &c
	}
	p.expectKw("THEN")
	act := p.peek()
	switch {
	case act.isKw("UPDATE"):
		p.next()
		wc.Action = plan.ActionUpdate
		p.expectKw("SET")
		if t := p.peek(); t.isOp("*") {
			p.fail(t, ErrNotSupported, "UPDATE SET * is not supported; list the assignments")
		}
		var cols []token
		for {
			c := p.colRef()
			if c.qual != "" && !strings.EqualFold(c.qual, target) {
				p.report(c.tok, ErrBadValue, "SET assigns target columns: write %s.%s or %s, not %s.%s", target, c.col, c.col, c.qual, c.col)
			}
			p.expectOp("=")
			v := p.expr("SET value", stopAt(",", "WHEN"))
			wc.Set = append(wc.Set, plan.Assignment{Column: c.col, Value: v})
			ct := c.tok
			ct.val = c.col
			cols = append(cols, ct)
			if !p.acceptOp(",") {
				break
			}
		}
		p.checkUnique(cols, "SET column")
	case act.isKw("DELETE"):
		p.next()
		wc.Action = plan.ActionDelete
	case act.isKw("INSERT"):
		p.next()
		wc.Action = plan.ActionInsert
		if t := p.peek(); t.isOp("*") {
			p.fail(t, ErrNotSupported, "INSERT * is not supported; list the columns and values")
		}
		if t := p.peek(); !t.isOp("(") {
			p.fail(t, ErrNotSupported, "list the target columns: INSERT (c1, c2) VALUES (…)")
		}
		var colToks []token
		wc.InsertColumns, colToks = p.nameList("target column")
		p.checkUnique(colToks, "INSERT column")
		valuesTok := p.expectKw("VALUES")
		p.expectOp("(")
		for {
			wc.InsertValues = append(wc.InsertValues, p.expr("INSERT value", stopAt(",")))
			if !p.acceptOp(",") {
				break
			}
		}
		p.expectOp(")")
		if len(wc.InsertValues) != len(wc.InsertColumns) {
			p.report(valuesTok, ErrBadValue, "INSERT lists %d columns but %d values", len(wc.InsertColumns), len(wc.InsertValues))
		}
	default:
		p.unexpected("UPDATE SET, DELETE or INSERT")
	}
	switch {
	case wc.Matched && wc.Action == plan.ActionInsert:
		p.report(act, ErrBadValue, "WHEN MATCHED cannot INSERT (use UPDATE SET or DELETE)")
	case !wc.Matched && wc.Action != plan.ActionInsert:
		p.report(act, ErrBadValue, "WHEN NOT MATCHED can only INSERT")
	}
	return wc
}

// checkClauses reports clauses that can never apply: those after a clause
// of the same kind (MATCHED / NOT MATCHED) without an AND condition.
func (p *parser) checkClauses(cs []plan.WhenClause) {
	var catchAll [2]*plan.WhenClause
	for i := range cs {
		c := &cs[i]
		k := 0
		if c.Matched {
			k = 1
		}
		if prev := catchAll[k]; prev != nil {
			p.errs = append(p.errs, errAt(c.Pos, ErrBadValue, "this WHEN clause can never apply: the clause at %s has no AND condition and comes first", prev.Pos))
			continue
		}
		if c.Cond == nil {
			catchAll[k] = c
		}
	}
}
