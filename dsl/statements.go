package dsl

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/pos"
)

// ParseStatements parses a script of statements separated by ';' (a ';'
// inside a string, a quoted identifier or a comment does not separate).
// file names the script in positions ("" for text typed on a command line).
// It returns the statements in order, or nil and a pos.List holding the
// errors of every statement that failed to parse.
func ParseStatements(file string, src string) ([]Statement, error) {
	return parseStatements(newSource(file, src))
}

// ParseStatementsAt is ParseStatements for text that starts at position
// start of a file, such as a plan.Statement of Job.Setup: positions of the
// statements and errors are those in that file.
func ParseStatementsAt(start pos.Pos, src string) ([]Statement, error) {
	return parseStatements(newSourceAt(start, src))
}

func parseStatements(s *source) ([]Statement, error) {
	src := s.text
	var out []Statement
	var errs pos.List
	for _, sp := range splitScript(lex(src, 0, len(src))) {
		st, err := parseStatement(s, sp)
		if err != nil {
			errs = append(errs, err...)
			continue
		}
		out = append(out, st)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ParseStatement parses exactly one statement (a trailing ';' is allowed).
// Errors are a pos.List as for ParseStatements; no statement, or more than
// one, is an ErrSyntax error.
func ParseStatement(file string, src string) (Statement, error) {
	s := newSource(file, src)
	spans := splitScript(lex(src, 0, len(src)))
	switch {
	case len(spans) == 0:
		return nil, pos.List{errAt(s.pos(len(src)), ErrSyntax, "no statement")}.Err()
	case len(spans) > 1:
		return nil, pos.List{errAt(s.pos(spans[1].off), ErrSyntax, "expected one statement, found %d", len(spans))}.Err()
	}
	st, err := parseStatement(s, spans[0])
	if err != nil {
		return nil, err.Err()
	}
	return st, nil
}

// statementKinds is the list of statements for "unsupported statement"
// errors.
const statementKinds = "CREATE TABLE, ALTER TABLE … SET PROPERTIES, CREATE TABLE STREAM, DROP TABLE STREAM, SHOW TABLE STREAMS, DESCRIBE TABLE STREAM, DROP TABLE, INSERT, UPDATE, DELETE, SELECT"

// parseStatement parses one statement of a script.
func parseStatement(s *source, sp span) (Statement, pos.List) {
	p := newParser(s, sp)
	base := Base{Text: sp.text(s), Pos: s.pos(sp.off)}
	var st Statement
	errs := p.parse(func() {
		first := p.peek()
		switch {
		case first.isKw("CREATE"):
			st = p.create(base)
		case first.isKw("ALTER"):
			st = p.alterTable(base)
		case first.isKw("DROP"):
			st = p.drop(base)
		case first.isKw("SHOW"):
			p.next()
			p.expectKw("TABLE", "STREAMS")
			p.expectEnd()
			st = &ShowStreams{Base: base}
		case first.isKw("DESCRIBE"), first.isKw("DESC"):
			p.next()
			p.acceptKw("TABLE")
			p.expectKw("STREAM")
			name, _ := p.objectName("stream name")
			p.expectEnd()
			st = &DescribeStream{Base: base, Stream: name}
		case first.isKw("INSERT"), first.isKw("UPDATE"), first.isKw("DELETE"), first.isKw("SELECT"), first.isOp("("):
			st = p.dml(base, sp)
		case first.isKw("MERGE"):
			p.fail(first, ErrNotSupported, "MERGE INTO is supported only as the consuming statement of a SQL job file")
		case first.kind == tIllegal:
			p.fail(first, ErrSyntax, "%s", first.val)
		default:
			p.fail(first, ErrNotSupported, "unsupported statement starting with %s; supported: %s", s.describe(first), statementKinds)
		}
	})
	if len(errs) > 0 {
		return nil, errs
	}
	return st, nil
}

// create parses CREATE TABLE and CREATE TABLE STREAM.
func (p *parser) create(base Base) Statement {
	p.expectKw("CREATE")
	orReplace := p.isKw("OR")
	orTok := p.peek()
	if orReplace {
		p.expectKw("OR", "REPLACE")
	}
	p.expectKw("TABLE")
	// TABLE STREAM s … versus a table named stream: CREATE TABLE stream (…).
	if p.peek().isKw("STREAM") && !p.peekAt(1).isOp("(") && !p.peekAt(1).isOp(".") && p.peekAt(1).kind != tEOF {
		p.next()
		return p.createStream(base, orReplace, orTok)
	}
	if orReplace {
		p.fail(orTok, ErrNotSupported, "CREATE OR REPLACE TABLE is not supported; DROP TABLE first")
	}
	return p.createTable(base)
}

// createTable parses the rest of CREATE TABLE [IF NOT EXISTS] t (…).
func (p *parser) createTable(base Base) Statement {
	ct := &CreateTable{Base: base}
	ct.IfNotExists = p.acceptKw("IF", "NOT", "EXISTS")
	ct.Table, _ = p.objectName("table name")
	if p.isKw("AS") || p.isKw("LIKE") {
		p.fail(p.peek(), ErrNotSupported, "CREATE TABLE … %s is not supported; list the columns", strings.ToUpper(p.peek().val))
	}
	p.expectOp("(")
	var inlineKey []token // columns declared PRIMARY KEY inline
	var tableKey []token  // names of a PRIMARY KEY (…) clause
	var keyClause token
	seen := map[string]token{}
	for {
		switch {
		case p.isKw("PRIMARY"), p.isKw("CONSTRAINT"):
			t := p.next()
			if t.isKw("CONSTRAINT") {
				p.name("constraint name")
				t = p.expectKw("PRIMARY")
			}
			p.expectKw("KEY")
			if tableKey != nil {
				p.report(t, ErrDuplicate, "a second PRIMARY KEY clause")
			}
			_, toks := p.nameList("key column")
			tableKey, keyClause = toks, t
		default:
			col, tok, inKey := p.columnDef()
			if prev, dup := seen[strings.ToLower(col.Name)]; dup {
				p.report(tok, ErrDuplicate, "column %q is declared twice (first at %s)", col.Name, p.posOf(prev))
			}
			seen[strings.ToLower(col.Name)] = tok
			ct.Schema.Columns = append(ct.Schema.Columns, col)
			if inKey {
				inlineKey = append(inlineKey, tok)
			}
		}
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp(")")
	p.tableOptions()
	p.expectEnd()

	switch {
	case tableKey != nil && len(inlineKey) > 0:
		p.report(keyClause, ErrDuplicate, "PRIMARY KEY is declared both on column %q and as a clause", inlineKey[0].val)
	case len(inlineKey) > 1:
		p.report(inlineKey[1], ErrDuplicate, "several columns are declared PRIMARY KEY; for a composite key write PRIMARY KEY (%s, %s, …)", inlineKey[0].val, inlineKey[1].val)
	case len(inlineKey) == 1:
		tableKey = inlineKey
	}
	keySeen := map[string]bool{}
	for _, t := range tableKey {
		i := ct.Schema.Index(t.val)
		if i < 0 {
			p.report(t, ErrBadValue, "PRIMARY KEY column %q is not a column of %s", t.val, ct.Table)
			continue
		}
		name := ct.Schema.Columns[i].Name
		if keySeen[strings.ToLower(name)] {
			p.report(t, ErrDuplicate, "column %q appears twice in the PRIMARY KEY", t.val)
			continue
		}
		keySeen[strings.ToLower(name)] = true
		ct.Schema.Key = append(ct.Schema.Key, name)
		ct.Schema.Columns[i].NotNull = true // a key column is never NULL
	}
	return ct
}

// columnDef parses "name TYPE [NOT NULL | NULL | PRIMARY KEY | COMMENT '…']…".
func (p *parser) columnDef() (col cdc.Column, tok token, primaryKey bool) {
	col.Name, tok = p.name("column name or PRIMARY KEY")
	col.Type = p.columnType()
	for {
		t := p.peek()
		switch {
		case p.acceptKw("NOT", "NULL"):
			col.NotNull = true
		case p.acceptKw("NULL"):
		case p.acceptKw("PRIMARY", "KEY"):
			primaryKey = true
		case p.acceptKw("COMMENT"):
			p.stringLit("column comment")
		case t.isKw("DEFAULT"), t.isKw("UNIQUE"), t.isKw("CHECK"), t.isKw("REFERENCES"), t.isKw("IDENTITY"), t.isKw("AUTO_INCREMENT"), t.isKw("GENERATED"):
			p.fail(t, ErrNotSupported, "column option %s is not supported", strings.ToUpper(t.val))
		default:
			return col, tok, primaryKey
		}
	}
}

// columnType parses a type name with optional parameters and checks it
// with cdc.ParseType. A bad type is reported at the type's position and
// parsing goes on.
func (p *parser) columnType() cdc.Type {
	t := p.peek()
	if t.kind != tIdent {
		p.unexpected("column type")
	}
	p.next()
	text := t.val
	if t.isKw("DOUBLE") && p.acceptKw("PRECISION") {
		text = "DOUBLE"
	}
	if p.acceptOp("(") {
		var params []string
		for {
			n := p.peek()
			if n.kind != tNumber {
				p.unexpected("type parameter (a number)")
			}
			params = append(params, p.next().val)
			if !p.acceptOp(",") {
				break
			}
		}
		p.expectOp(")")
		text += "(" + strings.Join(params, ",") + ")"
	}
	if nt := p.peek(); nt.isOp("<") {
		p.fail(t, ErrNotSupported, "type %s<…> is not supported; use one of TINYINT, SMALLINT, INT, BIGINT, BOOLEAN, FLOAT, DOUBLE, DECIMAL(p,s), STRING, VARCHAR(n), CHAR(n), DATE, TIMESTAMP, BINARY", strings.ToUpper(t.val))
	}
	typ, err := cdc.ParseType(text)
	if err != nil {
		p.errs = append(p.errs, errAtCause(p.posOf(t), ErrBadValue, err, "%v", err))
	}
	return typ
}

// tableOptions accepts the table options after CREATE TABLE's column list
// that sluice ignores: COMMENT [=] '…'.
func (p *parser) tableOptions() {
	for {
		switch t := p.peek(); {
		case p.acceptKw("COMMENT"):
			p.acceptOp("=")
			p.stringLit("table comment")
		case t.kind == tEOF:
			return
		default:
			p.fail(t, ErrNotSupported, "unsupported table option %s after the column list (only COMMENT '…' is accepted)", p.src.describe(t))
		}
	}
}

// stringLit consumes a string literal and returns its value.
func (p *parser) stringLit(what string) (string, token) {
	t := p.peek()
	if t.kind != tString {
		p.unexpected(what + " (a quoted string)")
	}
	return p.next().val, t
}

// property is one 'key' = 'value' of a PROPERTIES list.
type property struct {
	key, value string
	keyTok     token
	valTok     token
}

// properties parses "( 'k' = 'v', … )". Keys and values may be quoted
// strings or bare words (TRUE, STANDARD).
func (p *parser) properties() []property {
	p.expectOp("(")
	var out []property
	for {
		var pr property
		pr.keyTok = p.peek()
		switch pr.keyTok.kind {
		case tString, tIdent, tQIdent:
			pr.key = p.next().val
		default:
			p.unexpected("property name")
		}
		p.expectOp("=")
		pr.valTok = p.peek()
		switch pr.valTok.kind {
		case tString, tIdent, tNumber:
			pr.value = p.next().val
		default:
			p.unexpected("property value")
		}
		out = append(out, pr)
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp(")")
	return out
}

// boolProperty reads a 'true'/'false' property value.
func (p *parser) boolProperty(pr property) bool {
	switch strings.ToLower(pr.value) {
	case "true":
		return true
	case "false":
		return false
	}
	p.report(pr.valTok, ErrBadValue, "property %s must be 'true' or 'false', not %q", pr.key, pr.value)
	return false
}

// alterTable parses ALTER TABLE t SET PROPERTIES ('change_tracking' = …).
func (p *parser) alterTable(base Base) Statement {
	p.expectKw("ALTER", "TABLE")
	st := &SetChangeTracking{Base: base}
	st.Table, _ = p.objectName("table name")
	if !p.acceptKw("SET", "PROPERTIES") && !p.acceptKw("SET", "TBLPROPERTIES") {
		p.fail(p.peek(), ErrNotSupported, "ALTER TABLE supports only SET PROPERTIES ('change_tracking' = 'true'|'false')")
	}
	props := p.properties()
	p.expectEnd()
	var seen *property
	for i, pr := range props {
		if !strings.EqualFold(pr.key, "change_tracking") {
			p.report(pr.keyTok, ErrUnknownKey, "unknown table property %q (known: change_tracking)", pr.key)
			continue
		}
		if seen != nil {
			p.report(pr.keyTok, ErrDuplicate, "property change_tracking is given twice")
			continue
		}
		seen = &props[i]
		st.Enabled = p.boolProperty(pr)
	}
	if seen == nil && len(p.errs) == 0 {
		p.report(p.toks[0], ErrMissingKey, "ALTER TABLE … SET PROPERTIES needs 'change_tracking' = 'true'|'false'")
	}
	return st
}

// createStream parses the rest of CREATE [OR REPLACE] TABLE STREAM.
func (p *parser) createStream(base Base, orReplace bool, orTok token) Statement {
	st := &CreateStream{Base: base, OrReplace: orReplace, Mode: ModeStandard}
	if t := p.peek(); p.acceptKw("IF", "NOT", "EXISTS") {
		st.IfNotExists = true
		if orReplace {
			p.report(t, ErrBadValue, "OR REPLACE and IF NOT EXISTS cannot be used together")
		}
	}
	st.Stream, _ = p.objectName("stream name")
	p.expectKw("ON", "TABLE")
	st.Table, _ = p.objectName("table name")
	var comment, with bool
	for {
		t := p.peek()
		switch {
		case t.kind == tEOF:
			return st
		case t.isKw("TIMESTAMP"):
			p.fail(t, ErrNotSupported, "TIMESTAMP AS OF is not supported yet; the stream starts at the table's current version")
		case p.acceptKw("COMMENT"):
			if comment {
				p.report(t, ErrDuplicate, "COMMENT is given twice")
			}
			comment = true
			p.acceptOp("=")
			st.Comment, _ = p.stringLit("stream comment")
		case p.acceptKw("WITH", "PROPERTIES"), p.acceptKw("PROPERTIES"):
			if with {
				p.report(t, ErrDuplicate, "WITH PROPERTIES is given twice")
			}
			with = true
			p.streamProperties(st, p.properties())
		default:
			p.fail(t, ErrSyntax, "expected COMMENT, WITH PROPERTIES or the end of the statement, found %s", p.src.describe(t))
		}
	}
}

// streamProperties applies TABLE_STREAM_MODE, SHOW_INITIAL_ROWS and
// STALE_AFTER.
func (p *parser) streamProperties(st *CreateStream, props []property) {
	seen := map[string]bool{}
	for _, pr := range props {
		key := strings.ToUpper(pr.key)
		if key != "TABLE_STREAM_MODE" && key != "SHOW_INITIAL_ROWS" && key != "STALE_AFTER" {
			p.report(pr.keyTok, ErrUnknownKey, "unknown stream property %q (known: TABLE_STREAM_MODE, SHOW_INITIAL_ROWS, STALE_AFTER)", pr.key)
			continue
		}
		if seen[key] {
			p.report(pr.keyTok, ErrDuplicate, "property %s is given twice", key)
			continue
		}
		seen[key] = true
		switch key {
		case "TABLE_STREAM_MODE":
			switch v := strings.ToUpper(pr.value); v {
			case ModeStandard, ModeAppendOnly:
				st.Mode = v
			default:
				p.report(pr.valTok, ErrBadValue, "TABLE_STREAM_MODE must be 'STANDARD' or 'APPEND_ONLY', not %q", pr.value)
			}
		case "SHOW_INITIAL_ROWS":
			st.ShowInitialRows = p.boolProperty(pr)
		case "STALE_AFTER":
			d, err := ParseRetention(pr.value)
			if err != nil {
				p.report(pr.valTok, ErrBadValue, "STALE_AFTER: %v", err)
			}
			st.StaleAfter = d
		}
	}
}

// ParseRetention reads a stream retention (STALE_AFTER): a whole number of
// days ("14d") or a Go duration ("36h", "90m"); it must be at least a
// second. Days are 24 hours.
func ParseRetention(s string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(strings.TrimSpace(s), "d"); ok {
		days, err := strconv.ParseInt(n, 10, 32)
		if err != nil || days <= 0 {
			return 0, fmt.Errorf("%q is not a number of days such as '14d'", s)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(strings.TrimSpace(s)); err != nil {
			return 0, fmt.Errorf("%q is neither days ('14d') nor a duration ('36h')", s)
		}
	}
	if d < time.Second {
		return 0, fmt.Errorf("%q is shorter than a second", s)
	}
	return d, nil
}

// drop parses DROP TABLE STREAM and DROP TABLE.
func (p *parser) drop(base Base) Statement {
	p.expectKw("DROP", "TABLE")
	// DROP TABLE STREAM s versus dropping a table named stream.
	if p.peek().isKw("STREAM") && p.peekAt(1).kind != tEOF && !p.peekAt(1).isOp(".") {
		p.next()
		st := &DropStream{Base: base}
		st.IfExists = p.acceptKw("IF", "EXISTS")
		st.Stream, _ = p.objectName("stream name")
		p.expectEnd()
		return st
	}
	st := &DropTable{Base: base}
	st.IfExists = p.acceptKw("IF", "EXISTS")
	st.Table, _ = p.objectName("table name")
	p.expectEnd()
	return st
}
