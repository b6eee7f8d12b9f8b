package jobtest

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
	yamlparser "github.com/goccy/go-yaml/parser"
	yamltoken "github.com/goccy/go-yaml/token"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/yamlnode"
	"github.com/sluicedata/sluice/pos"
)

// Suffix is the file name ending of test files: orders.yaml is tested by
// orders.test.yaml beside it.
const Suffix = ".test.yaml"

// IsTestFile reports whether name is a test file (dsl.IsTestFile).
func IsTestFile(name string) bool { return dsl.IsTestFile(name) }

// File is a parsed test file.
type File struct {
	Path       string
	Job        string // the job file, relative to the test file's directory as written
	JobPos     pos.Pos
	Setup      string   // statements run first
	SetupPos   pos.Pos  // where they start
	SetupFiles []string // files of statements, relative to the test file
	Requires   string   // "" or "postgres"
	Reason     string
	Cases      []Case
}

// Case is one test case.
type Case struct {
	Name   string
	Pos    pos.Pos
	Source []Row      // the source table's rows before
	Target []Row      // the target's rows before; nil: leave it as setup made it
	Runs   [][]Change // the changes before each run
	Expect []Row      // the target's rows after the last run
}

// Row is a row of a test file: column names and values (nil for NULL), in
// the order written.
type Row struct {
	Pos  pos.Pos
	Cols []string
	Vals []*string
}

// Change is one change of a run: a statement, or a row with its change
// type.
type Change struct {
	Pos pos.Pos
	SQL string // the statement; "" for a row
	Op  cdc.Op
	Row Row // the row without __change_type
}

var (
	fileKeys = []string{"job", "setup", "setup_files", "requires", "reason", "cases"}
	caseKeys = []string{"name", "source", "target", "changes", "runs", "expect"}
)

// Parse parses a test file. It does no I/O; path is used for positions
// and the default job file. All errors of the file are returned together
// in a pos.List, each at file:line:col and wrapping ErrBadFile.
func Parse(path string, src []byte) (f *File, err error) {
	p := &parser{file: path}
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, pos.List{p.errAt(pos.Pos{File: path, Line: 1, Col: 1}, "YAML parser failure: %v", r)}.Err()
		}
	}()
	doc, perr := yamlparser.ParseBytes(src, 0)
	if perr != nil {
		at := pos.Pos{File: path, Line: 1, Col: 1}
		msg := perr.Error()
		var e interface {
			GetToken() *yamltoken.Token
			GetMessage() string
		}
		if errors.As(perr, &e) && e.GetToken() != nil && e.GetToken().Position != nil {
			at, msg = p.tokPos(e.GetToken()), e.GetMessage()
		}
		return nil, pos.List{p.errAt(at, "%s", msg)}.Err()
	}
	f = &File{Path: path}
	var body ast.Node
	for _, d := range doc.Docs {
		if d != nil && d.Body != nil {
			if body != nil {
				p.add(p.nodePos(d.Body), "a test file holds one YAML document")
				break
			}
			body = d.Body
		}
	}
	p.file0(f, body)
	if f.Job == "" && len(p.errs) == 0 {
		base := filepath.Base(path)
		f.Job = base[:len(base)-len(filepath.Ext(base))]
		f.Job = strings.TrimSuffix(f.Job, ".test") + ".yaml"
	}
	slices.SortStableFunc(p.errs, func(a, b *pos.Error) int {
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Col - b.Pos.Col
	})
	if err := p.errs.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

type parser struct {
	file string
	errs pos.List
}

func (p *parser) errAt(at pos.Pos, format string, args ...any) *pos.Error {
	return pos.Errorf(at, "%w: "+format, append([]any{ErrBadFile}, args...)...)
}

func (p *parser) add(at pos.Pos, format string, args ...any) {
	p.errs = append(p.errs, p.errAt(at, format, args...))
}

func (p *parser) tokPos(t *yamltoken.Token) pos.Pos {
	if t == nil || t.Position == nil {
		return pos.Pos{File: p.file, Line: 1, Col: 1}
	}
	return pos.Pos{File: p.file, Line: t.Position.Line, Col: t.Position.Column}
}

func (p *parser) nodePos(n ast.Node) pos.Pos {
	switch v := n.(type) {
	case nil:
		return pos.Pos{File: p.file, Line: 1, Col: 1}
	case *ast.MappingNode:
		if v.IsFlowStyle && v.Start != nil {
			return p.tokPos(v.Start)
		}
		if len(v.Values) > 0 {
			return p.nodePos(v.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return p.nodePos(v.Key)
	}
	return p.tokPos(n.GetToken())
}

type kv struct {
	key   string
	at    pos.Pos
	value ast.Node // nil for null
	vat   pos.Pos
}

// mapping returns the pairs of a mapping node, reporting unknown keys
// (when known is not nil) and a node of another kind.
func (p *parser) mapping(n ast.Node, what string, at pos.Pos, known []string) ([]kv, bool) {
	var mvs []*ast.MappingValueNode
	switch v := n.(type) {
	case *ast.MappingNode:
		mvs = v.Values
	case *ast.MappingValueNode:
		mvs = []*ast.MappingValueNode{v}
	default:
		if n != nil {
			at = p.nodePos(n)
		}
		p.add(at, "%s must be a mapping, found %s", what, kind(n))
		return nil, false
	}
	var out []kv
	seen := map[string]bool{}
	for _, mv := range mvs {
		k, ok := scalar(mv.Key)
		if !ok {
			p.add(p.nodePos(mv.Key), "a key of %s must be a name", what)
			continue
		}
		e := kv{key: k, at: p.nodePos(mv.Key), value: mv.Value}
		if _, null := mv.Value.(*ast.NullNode); null {
			e.value = nil
		}
		e.vat = e.at
		if e.value != nil {
			e.vat = p.nodePos(e.value)
		}
		if seen[k] {
			p.add(e.at, "key %q is given twice in %s", k, what)
			continue
		}
		seen[k] = true
		if known != nil && !slices.Contains(known, k) {
			p.add(e.at, "unknown key %q in %s (known keys: %s)", k, what, strings.Join(known, ", "))
			continue
		}
		out = append(out, e)
	}
	return out, true
}

// scalar is yamlnode.Scalar, also for a mapping key node (the text of its
// value).
func scalar(n ast.Node) (string, bool) {
	if k, ok := n.(*ast.MappingKeyNode); ok {
		return scalar(k.Value)
	}
	return yamlnode.Scalar(n)
}

func kind(n ast.Node) string { return yamlnode.Kind(n) }

func (p *parser) str(e kv, what string) string {
	s, ok := scalar(e.value)
	if !ok || strings.TrimSpace(s) == "" {
		p.add(e.vat, "%s must be a non-empty string, found %s", what, kind(e.value))
		return ""
	}
	return s
}

func (p *parser) list(e kv, what string) []ast.Node {
	seq, ok := e.value.(*ast.SequenceNode)
	if !ok {
		if e.value == nil {
			return nil
		}
		p.add(e.vat, "%s must be a list, found %s", what, kind(e.value))
		return nil
	}
	return seq.Values
}

func (p *parser) file0(f *File, body ast.Node) {
	pairs, ok := p.mapping(body, "the test file", pos.Pos{File: p.file, Line: 1, Col: 1}, fileKeys)
	if !ok {
		return
	}
	hasCases := false
	for _, e := range pairs {
		switch e.key {
		case "job":
			f.Job, f.JobPos = p.str(e, "job"), e.vat
		case "setup":
			if _, isList := e.value.(*ast.SequenceNode); isList {
				p.add(e.vat, "setup must be one string of statements separated by ';' (a | block), found a list; setup_files takes a list of files")
				break
			}
			f.Setup, f.SetupPos = p.str(e, "setup"), e.vat
			if _, ok := e.value.(*ast.LiteralNode); ok {
				f.SetupPos.Line++ // a block scalar's text starts on the next line
				f.SetupPos.Col = 1
			}
		case "setup_files":
			for _, n := range p.list(e, "setup_files") {
				if s, ok := scalar(n); ok && s != "" {
					f.SetupFiles = append(f.SetupFiles, s)
				} else {
					p.add(p.nodePos(n), "a setup file must be a path, found %s", kind(n))
				}
			}
		case "requires":
			if r := p.str(e, "requires"); r != "" && r != "postgres" {
				p.add(e.vat, "requires %q: the only known requirement is postgres", r)
			} else {
				f.Requires = r
			}
		case "reason":
			f.Reason = p.str(e, "reason")
		case "cases":
			hasCases = true
			for _, n := range p.list(e, "cases") {
				if c, ok := p.testCase(n); ok {
					f.Cases = append(f.Cases, c)
				}
			}
		}
	}
	if !hasCases {
		p.add(pos.Pos{File: p.file, Line: 1, Col: 1}, "missing key \"cases\": the test cases of the job")
	}
	if f.Requires != "" && f.Reason == "" {
		p.add(pos.Pos{File: p.file, Line: 1, Col: 1}, "requires: %s needs a reason: what the cases use that SQLite has not", f.Requires)
	}
}

func (p *parser) testCase(n ast.Node) (Case, bool) {
	c := Case{Pos: p.nodePos(n)}
	pairs, ok := p.mapping(n, "a case", c.Pos, caseKeys)
	if !ok {
		return c, false
	}
	var hasChanges, hasRuns, hasExpect bool
	for _, e := range pairs {
		switch e.key {
		case "name":
			c.Name = p.str(e, "name")
		case "source":
			c.Source = p.rows(e, "source")
		case "target":
			c.Target = p.rows(e, "target")
			if c.Target == nil {
				c.Target = []Row{}
			}
		case "changes":
			hasChanges = true
			c.Runs = append(c.Runs, p.changes(e.value, e.vat))
		case "runs":
			hasRuns = true
			for _, r := range p.list(e, "runs") {
				c.Runs = append(c.Runs, p.changes(r, p.nodePos(r)))
			}
		case "expect":
			hasExpect = true
			c.Expect = p.rows(e, "expect")
		}
	}
	if c.Name == "" {
		c.Name = fmt.Sprintf("line %d", c.Pos.Line)
	}
	switch {
	case hasChanges && hasRuns:
		p.add(c.Pos, "case %q has both changes and runs; use runs: [[…], […]] for several runs", c.Name)
	case !hasChanges && !hasRuns:
		c.Runs = [][]Change{nil} // one run of what setup left pending
	}
	if !hasExpect {
		p.add(c.Pos, "case %q has no expect: the target's rows after the last run", c.Name)
	}
	return c, true
}

func (p *parser) rows(e kv, what string) []Row {
	var out []Row
	for _, n := range p.list(e, what) {
		if r, ok := p.row(n, "a row of "+what); ok {
			out = append(out, r)
		}
	}
	return out
}

func (p *parser) row(n ast.Node, what string) (Row, bool) {
	r := Row{Pos: p.nodePos(n)}
	pairs, ok := p.mapping(n, what, r.Pos, nil)
	if !ok {
		return r, false
	}
	for _, e := range pairs {
		r.Cols = append(r.Cols, e.key)
		if e.value == nil {
			r.Vals = append(r.Vals, nil)
			continue
		}
		s, ok := scalar(e.value)
		if !ok {
			p.add(e.vat, "column %s: a value must be a scalar or null, found %s", e.key, kind(e.value))
			return r, false
		}
		r.Vals = append(r.Vals, &s)
	}
	return r, true
}

func (p *parser) changes(n ast.Node, at pos.Pos) []Change {
	if n == nil {
		return nil
	}
	if _, null := n.(*ast.NullNode); null {
		return nil
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		p.add(at, "changes must be a list of statements or rows with __change_type, found %s", kind(n))
		return nil
	}
	var out []Change
	for _, v := range seq.Values {
		c := Change{Pos: p.nodePos(v)}
		if s, ok := scalar(v); ok {
			c.SQL = s
			out = append(out, c)
			continue
		}
		r, ok := p.row(v, "a changed row")
		if !ok {
			continue
		}
		i := slices.Index(r.Cols, cdc.ColChangeType)
		if i < 0 || r.Vals[i] == nil {
			p.add(r.Pos, "a changed row needs %s (INSERT, UPDATE_AFTER or DELETE)", cdc.ColChangeType)
			continue
		}
		op, err := cdc.ParseOp(strings.ToUpper(*r.Vals[i]))
		if err != nil || op == cdc.OpUpdateBefore {
			p.add(r.Pos, "%s %q: a change is INSERT, UPDATE_AFTER or DELETE", cdc.ColChangeType, *r.Vals[i])
			continue
		}
		c.Op = op
		c.Row = Row{Pos: r.Pos, Cols: slices.Delete(slices.Clone(r.Cols), i, i+1), Vals: slices.Delete(slices.Clone(r.Vals), i, i+1)}
		out = append(out, c)
	}
	return out
}
