package dsl

import (
	"errors"
	"strings"

	"github.com/goccy/go-yaml/ast"
	yamlparser "github.com/goccy/go-yaml/parser"
	yamltoken "github.com/goccy/go-yaml/token"
	"github.com/sluicedata/sluice/internal/yamlnode"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// Keys of a YAML job file, in documentation order.
var (
	jobKeys    = []string{"name", "connection", "source", "filter", "select", "sink", "schedule", "timezone"}
	sourceKeys = []string{"stream", "columns"}
	sinkKeys   = []string{"table", "stdout", "format", "mode", "keys", "on_delete", "on_schema_change", "connection", "dead_letter"}
)

// ParseYAML parses a YAML job file (see the package documentation for the
// schema). The walk is strict: an unknown key, a value of the wrong kind
// (a list where a string belongs) or a missing required key is an error at
// its position, and every such error of the file is returned together in a
// pos.List. Expression positions (filter, select items) are those of the
// first byte of the expression text itself, after any opening quote.
func ParseYAML(file string, src []byte) (*plan.Job, error) {
	job, err := parseYAML(file, src)
	if err != nil {
		return nil, err
	}
	return job, nil
}

// parseYAML is ParseYAML, returning the partial job with the errors.
func parseYAML(file string, src []byte) (job *plan.Job, err error) {
	y := &yamlJob{src: newSource(file, string(src)), anchors: map[string]ast.Node{}}
	defer func() {
		// goccy/go-yaml is not expected to panic, but a job file must never
		// crash the CLI.
		if r := recover(); r != nil {
			job, err = nil, pos.List{errAt(pos.Pos{File: file, Line: 1, Col: 1}, ErrSyntax, "YAML parser failure: %v", r)}.Err()
		}
	}()
	if errs := checkText(y.src); len(errs) > 0 {
		return nil, errs.Err()
	}
	if err := checkYAMLNesting(y.src); err != nil {
		return nil, pos.List{err}.Err()
	}
	f, perr := yamlparser.ParseBytes(src, 0)
	if perr != nil {
		return nil, pos.List{y.syntaxError(perr)}.Err()
	}
	job = &plan.Job{File: file, Pos: y.src.pos(0), Format: "yaml", Sink: plan.Sink{Mode: plan.ModeAppend}}
	var body ast.Node
	for i, d := range f.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if body != nil {
			y.add(y.nodePos(d.Body), ErrSyntax, "a job file holds one YAML document; found a second (document %d)", i+1)
			break
		}
		body = d.Body
	}
	y.job(job, body)
	if job.Sink.OnSchemaChange != "" && len(job.Select) > 0 {
		y.add(job.Sink.OnSchemaChangePos, ErrBadValue, "%s", schemaPolicySelect)
	}
	return job, y.errs.Err()
}

// yamlJob walks one YAML job file.
type yamlJob struct {
	src     *source
	errs    pos.List
	anchors map[string]ast.Node
	// runeCols caches lineRunes.
	runeCols map[int][]int
}

func (y *yamlJob) add(p pos.Pos, sentinel error, format string, args ...any) {
	y.errs = append(y.errs, errAt(p, sentinel, format, args...))
}

// syntaxError converts a goccy/go-yaml error.
func (y *yamlJob) syntaxError(err error) *pos.Error {
	var e interface {
		GetToken() *yamltoken.Token
		GetMessage() string
	}
	if errors.As(err, &e) && e.GetToken() != nil && e.GetToken().Position != nil {
		msg := e.GetMessage()
		if strings.Contains(msg, "'`' is a reserved character") {
			msg += "; a value starting with a backquoted identifier must be quoted: \"`__change_type` = 'INSERT'\""
		}
		return errAtCause(y.tokPos(e.GetToken()), ErrSyntax, err, "YAML: %s", msg)
	}
	return errAtCause(y.src.pos(0), ErrSyntax, err, "YAML: %v", err)
}

// tokPos converts a token position (rune columns) to a pos.Pos (byte
// columns).
func (y *yamlJob) tokPos(t *yamltoken.Token) pos.Pos {
	if t == nil || t.Position == nil {
		return y.src.pos(0)
	}
	line, col := t.Position.Line, t.Position.Column
	if line < 1 || line > len(y.src.lineStarts) {
		return y.src.pos(0)
	}
	runes := y.lineRunes(line)
	if col < 1 {
		col = 1
	}
	if runes == nil { // an ASCII line: columns are bytes
		return y.src.pos(min(y.src.lineStarts[line-1]+col-1, y.lineEnd(line)))
	}
	if col > len(runes) {
		return y.src.pos(y.lineEnd(line))
	}
	return y.src.pos(y.src.lineStarts[line-1] + runes[col-1])
}

// lineEnd is the offset of the end of a line (its '\n' or the text end).
func (y *yamlJob) lineEnd(line int) int {
	if line < len(y.src.lineStarts) {
		return y.src.lineStarts[line] - 1
	}
	return len(y.src.text)
}

// lineRunes returns the byte offset within the line of each rune of a
// non-ASCII line, or nil for an ASCII line. Results are cached: long flow
// sequences put many nodes on one line.
func (y *yamlJob) lineRunes(line int) []int {
	if r, ok := y.runeCols[line]; ok {
		return r
	}
	text := y.src.text[y.src.lineStarts[line-1]:y.lineEnd(line)]
	var r []int
	if !isASCII(text) {
		for off := range text {
			r = append(r, off)
		}
	}
	if y.runeCols == nil {
		y.runeCols = map[int][]int{}
	}
	y.runeCols[line] = r
	return r
}

// resolve strips anchors and tags and follows aliases.
func (y *yamlJob) resolve(n ast.Node) ast.Node {
	for i := 0; i < 100 && n != nil; i++ {
		switch v := n.(type) {
		case *ast.AnchorNode:
			if name, ok := v.Name.(*ast.StringNode); ok {
				y.anchors[name.Value] = v.Value
			}
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.AliasNode:
			name, _ := v.Value.(*ast.StringNode)
			if name == nil || y.anchors[name.Value] == nil {
				y.add(y.nodePos(v), ErrBadValue, "unknown YAML alias")
				return nil
			}
			n = y.anchors[name.Value]
		default:
			return n
		}
	}
	return n
}

// nodePos is the position of a node: its first key for a mapping.
func (y *yamlJob) nodePos(n ast.Node) pos.Pos {
	if m, ok := n.(*ast.MappingNode); ok && len(m.Values) > 0 {
		return y.nodePos(m.Values[0].Key)
	}
	if mv, ok := n.(*ast.MappingValueNode); ok {
		return y.nodePos(mv.Key)
	}
	if n == nil {
		return y.src.pos(0)
	}
	return y.tokPos(n.GetToken())
}

// kindName describes a node for "want X, found Y" errors.
func kindName(n ast.Node) string { return yamlnode.Kind(n) }

// pair is one key: value of a mapping.
type pair struct {
	key    string
	keyPos pos.Pos
	value  ast.Node // resolved; nil for an empty value
	valPos pos.Pos
}

// mapping returns the pairs of a mapping node, or false (after reporting
// "what must be a mapping") for any other node. at is where to report a
// missing value.
func (y *yamlJob) mapping(n ast.Node, what string, at pos.Pos) ([]pair, bool) {
	var mvs []*ast.MappingValueNode
	switch v := n.(type) {
	case *ast.MappingNode:
		mvs = v.Values
	case *ast.MappingValueNode:
		mvs = []*ast.MappingValueNode{v}
	default:
		p := at
		if n != nil {
			p = y.nodePos(n)
		}
		y.add(p, ErrBadValue, "%s must be a mapping, found %s", what, kindName(n))
		return nil, false
	}
	out := make([]pair, 0, len(mvs))
	for _, mv := range mvs {
		if mv.Key != nil && mv.Key.IsMergeKey() {
			y.add(y.nodePos(mv.Key), ErrNotSupported, "YAML merge keys (<<) are not supported in job files")
			continue
		}
		var keyNode ast.Node = mv.Key
		if mk, ok := keyNode.(*ast.MappingKeyNode); ok {
			keyNode = mk.Value
		}
		keyNode = y.resolve(keyNode)
		k, ok := y.scalarText(keyNode)
		if !ok {
			y.add(y.nodePos(mv.Key), ErrBadValue, "a key of %s must be a string, found %s", what, kindName(keyNode))
			continue
		}
		pr := pair{key: k, keyPos: y.nodePos(keyNode), value: y.resolve(mv.Value)}
		pr.valPos = pr.keyPos
		if pr.value != nil {
			if _, null := pr.value.(*ast.NullNode); null {
				pr.value = nil
			} else {
				pr.valPos = y.nodePos(pr.value)
			}
		}
		out = append(out, pr)
	}
	return out, true
}

// scalarText returns the text of a scalar node (strings, numbers,
// booleans), or false.
func (y *yamlJob) scalarText(n ast.Node) (string, bool) { return yamlnode.Scalar(n) }

// str returns the string value of pr, reporting a non-scalar or empty one.
func (y *yamlJob) str(pr pair, what string) (string, bool) {
	s, ok := y.scalarText(pr.value)
	if !ok {
		y.add(pr.valPos, ErrBadValue, "%s must be a string, found %s", what, kindName(pr.value))
		return "", false
	}
	if strings.TrimSpace(s) == "" {
		y.add(pr.valPos, ErrBadValue, "%s is empty", what)
		return "", false
	}
	return s, true
}

// expr returns a scalar as an expression whose position is that of the
// first byte of its text: after the quote of a quoted scalar, on the first
// content line of a block scalar.
func (y *yamlJob) expr(n ast.Node, what string, at pos.Pos) (plan.Expr, bool) {
	text, ok := y.scalarText(n)
	if !ok {
		y.add(at, ErrBadValue, "%s must be a string, found %s", what, kindName(n))
		return plan.Expr{}, false
	}
	if strings.TrimSpace(text) == "" {
		y.add(at, ErrBadValue, "%s is empty", what)
		return plan.Expr{}, false
	}
	p := y.nodePos(n)
	switch v := n.(type) {
	case *ast.StringNode:
		if v.Token != nil && (v.Token.Type == yamltoken.SingleQuoteType || v.Token.Type == yamltoken.DoubleQuoteType) {
			p.Col++
		}
	case *ast.LiteralNode:
		p = y.blockStart(v)
		for {
			line, rest, ok := strings.Cut(text, "\n")
			if !ok || strings.TrimSpace(line) != "" {
				break
			}
			text = rest
		}
		text = strings.TrimRight(text, "\n")
	}
	return plan.Expr{Text: text, Pos: p}, true
}

// blockStart is the position of the first content character of a block
// scalar (| or >): the first non-blank line after its header.
func (y *yamlJob) blockStart(v *ast.LiteralNode) pos.Pos {
	hdr := y.tokPos(v.Start)
	for line := hdr.Line + 1; line <= len(y.src.lineStarts); line++ {
		off := y.src.lineStarts[line-1]
		end := len(y.src.text)
		if line < len(y.src.lineStarts) {
			end = y.src.lineStarts[line] - 1
		}
		content := strings.TrimLeft(y.src.text[off:end], " \t")
		if strings.TrimSpace(content) != "" {
			return y.src.pos(end - len(content))
		}
	}
	return hdr
}

// unknownKey reports a key outside known.
func (y *yamlJob) unknownKey(pr pair, where string, known []string) {
	y.add(pr.keyPos, ErrUnknownKey, "unknown key %q %s%s (known keys: %s)", pr.key, where, suggest(pr.key, known), strings.Join(known, ", "))
}

// job walks the document body into job.
func (y *yamlJob) job(job *plan.Job, body ast.Node) {
	start := y.src.pos(0)
	body = y.resolve(body)
	if body == nil {
		y.add(start, ErrMissingKey, "the job file is empty: it needs at least source and sink")
		return
	}
	pairs, ok := y.mapping(body, "a job file", start)
	if !ok {
		return
	}
	have := map[string]pair{}
	for _, pr := range pairs {
		have[pr.key] = pr
		switch pr.key {
		case "name":
			if s, ok := y.str(pr, "name"); ok {
				job.Name = s
			}
		case "connection":
			if s, ok := y.str(pr, "connection"); ok {
				job.Conn, job.ConnPos = s, pr.valPos
			}
		case "source":
			y.source(job, pr)
		case "filter":
			if e, ok := y.expr(pr.value, "filter", pr.valPos); ok {
				job.Filter = &e
			}
		case "select":
			y.selectList(job, pr)
		case "sink":
			y.sink(job, pr)
		case "schedule":
			if s, ok := y.str(pr, "schedule"); ok {
				job.Schedule, job.SchedulePos = strings.TrimSpace(s), pr.valPos
			}
		case "timezone":
			if s, ok := y.str(pr, "timezone"); ok {
				job.ScheduleTZ = strings.TrimSpace(s)
			}
		default:
			y.unknownKey(pr, "in the job", jobKeys)
		}
	}
	namePos := start
	if pr, ok := have["name"]; ok {
		namePos = pr.valPos
	}
	if _, ok := have["name"]; !ok || job.Name != "" {
		setName(job, job.Name, namePos, &y.errs)
	}
	if _, ok := have["source"]; !ok {
		y.add(start, ErrMissingKey, "missing key \"source\": the table stream the job consumes (source: my_stream)")
	}
	if _, ok := have["sink"]; !ok {
		y.add(start, ErrMissingKey, "missing key \"sink\": where rows go (sink: {table: t} or sink: {stdout: true})")
	}
	if pr, ok := have["timezone"]; ok {
		if _, ok := have["schedule"]; !ok {
			y.add(pr.keyPos, ErrBadValue, "timezone applies to a schedule, but the job has none")
		}
	}
}
