package expr

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/pos"
	"github.com/xwb1989/sqlparser"
)

// Parse parses one expression written at p (the position of text's first
// byte). Errors are *pos.Error at the offending token, wrapping ErrSyntax,
// ErrUnsupported or ErrUnknownFunction.
//
// The grammar is sqlparser's (MySQL-flavoured) expression grammar, with
// these changes made by a pre-pass over the tokens:
//   - `||` is string concatenation (not OR); it binds tighter than
//     comparisons and looser than + and -, as in PostgreSQL;
//   - CAST(x AS t) accepts every type of the dialect (cdc.ParseType);
//   - unquoted identifiers may contain unicode letters (金额, prénom);
//   - "…" is a string literal, like '…' (MySQL, ClickZetta);
//   - subqueries, bitwise operators, REGEXP, CONVERT, INTERVAL, window
//     functions and placeholders are rejected with ErrUnsupported.
func Parse(text string, p pos.Pos) (*Expr, error) {
	e, _, _, err := parseItem(text, p, false)
	return e, err
}

// ParseSelectItem parses a projection item "expr [AS alias]" and returns the
// expression and its output name: the alias, else the column name of a bare
// column reference (`order` → "order", s.id → "id"), else an error wrapping
// ErrNeedAlias at the item that asks for "AS name".
func ParseSelectItem(text string, p pos.Pos) (*Expr, string, error) {
	e, alias, _, err := parseItem(text, p, true)
	if err != nil {
		return nil, "", err
	}
	if alias != "" {
		return e, alias, nil
	}
	if e.root.op == opCol {
		return e, e.root.name, nil
	}
	return nil, "", e.errAt(0, ErrNeedAlias, "projection %q needs a name: write %s AS name", strings.TrimSpace(text), strings.TrimSpace(text))
}

// prepared is the result of the token pre-pass.
type prepared struct {
	toks     []token
	rewStart []int // offset of each token in the rewritten text (-1: dropped)
	rewEnd   []int
	rewText  string
	casts    []cdc.Type // CAST target types, in source order
}

const selectPrefix = "select "

var unsupportedWords = map[string]string{
	"select":   "subqueries are not supported",
	"exists":   "subqueries (EXISTS) are not supported",
	"regexp":   "REGEXP is not supported; use LIKE",
	"rlike":    "RLIKE is not supported; use LIKE",
	"convert":  "CONVERT is not supported; use CAST(x AS type)",
	"interval": "INTERVAL is not supported",
	"collate":  "COLLATE is not supported",
	"over":     "window functions (OVER) are not supported",
	"xor":      "XOR is not supported; use AND/OR/NOT",
	"div":      "integer DIV is not supported; use CAST(a / b AS BIGINT)",
	"match":    "MATCH … AGAINST is not supported",
	"default":  "DEFAULT is not supported in an expression",
	"values":   "VALUES() is not supported in an expression",
	"binary":   "the BINARY operator is not supported; use CAST(x AS BINARY)",
	"distinct": "DISTINCT is not supported in an expression",
}

var clauseWords = map[string]bool{
	"from": true, "where": true, "group": true, "having": true, "order": true,
	"limit": true, "union": true, "into": true, "lock": true, "for": true,
}

var unsupportedOps = map[string]string{
	"|":   "bitwise | is not supported (|| is string concatenation)",
	"&":   "bitwise & is not supported",
	"&&":  "&& is not supported; use AND",
	"^":   "bitwise ^ is not supported",
	"~":   "bitwise ~ is not supported",
	"<<":  "<< is not supported",
	">>":  ">> is not supported",
	"<=>": "<=> is not supported; use IS NULL / = ",
	"->":  "JSON operator -> is not supported",
	"->>": "JSON operator ->> is not supported",
	"::":  ":: casts are not supported; use CAST(x AS type)",
	":=":  ":= is not supported",
	":":   "placeholders are not supported",
	"?":   "placeholders are not supported",
	";":   "an expression cannot contain ';'",
	"!":   "! is not supported; use NOT",
	"@":   "variables are not supported",
	"[":   "'[' is not supported",
	"]":   "']' is not supported",
	"{":   "'{' is not supported",
	"}":   "'}' is not supported",
}

// prepass checks the tokens and builds the text handed to sqlparser.
func prepass(text string, p pos.Pos, toks []token, allowAlias bool) (*prepared, error) {
	pr := &prepared{toks: toks, rewStart: make([]int, len(toks)), rewEnd: make([]int, len(toks))}
	fail := func(t token, sentinel error, format string, args ...any) error {
		return errAt(text, p, t.start, sentinel, format, args...)
	}
	skip := make([]bool, len(toks))
	// castAt[i] holds the "SIGNED" placeholder index for the first type
	// token of a CAST.
	castAt := map[int]bool{}
	depth := 0
	for i, t := range toks {
		if t.kind == tkEOF {
			break
		}
		next := toks[i+1]
		lw := strings.ToLower(t.val)
		switch t.kind {
		case tkOp:
			if msg, bad := unsupportedOps[t.val]; bad {
				return nil, fail(t, ErrUnsupported, "%s", msg)
			}
			switch t.val {
			case "(":
				depth++
			case ")":
				depth--
			case ",":
				if depth == 0 {
					return nil, fail(t, ErrSyntax, "expected one expression, found ','")
				}
			}
		case tkIdent:
			if msg, bad := unsupportedWords[lw]; bad && !skip[i] {
				return nil, fail(t, ErrUnsupported, "%s", msg)
			}
			if clauseWords[lw] {
				return nil, fail(t, ErrSyntax, "unexpected %s: an expression cannot contain clauses (quote a column named %s as `%s`)", strings.ToUpper(lw), t.val, t.val)
			}
			if lw == "as" && depth == 0 {
				if !allowAlias {
					return nil, fail(t, ErrSyntax, "an alias (AS …) is not allowed here")
				}
				if (next.kind != tkIdent && next.kind != tkQIdent) || toks[i+2].kind != tkEOF {
					return nil, fail(next, ErrSyntax, "expected one name after AS")
				}
			}
			if lw == "cast" && next.val == "(" && !skip[i] {
				asIdx, closeIdx := -1, -1
				d := 0
				for j := i + 1; j < len(toks) && toks[j].kind != tkEOF; j++ {
					if toks[j].kind == tkOp && toks[j].val == "(" {
						d++
					} else if toks[j].kind == tkOp && toks[j].val == ")" {
						d--
						if d == 0 {
							closeIdx = j
							break
						}
					} else if d == 1 && toks[j].kind == tkIdent && strings.EqualFold(toks[j].val, "as") {
						asIdx = j
					}
				}
				if asIdx < 0 || closeIdx < 0 || closeIdx == asIdx+1 {
					return nil, fail(t, ErrSyntax, "CAST needs the form CAST(expression AS type)")
				}
				typText := text[toks[asIdx+1].start:toks[closeIdx-1].end]
				typ, err := cdc.ParseType(typText)
				if err != nil {
					return nil, fail(toks[asIdx+1], ErrUnsupported, "CAST: %v", err)
				}
				pr.casts = append(pr.casts, typ)
				castAt[asIdx+1] = true
				for j := asIdx + 1; j < closeIdx; j++ {
					skip[j] = true
				}
			}
		}
	}
	var b strings.Builder
	b.WriteString(selectPrefix)
	for i, t := range toks {
		pr.rewStart[i], pr.rewEnd[i] = -1, -1
		if t.kind == tkEOF {
			pr.rewStart[i], pr.rewEnd[i] = b.Len(), b.Len()
			break
		}
		if skip[i] {
			if castAt[i] {
				pr.rewStart[i] = b.Len()
				b.WriteString("signed")
				pr.rewEnd[i] = b.Len()
				b.WriteByte(' ')
			}
			continue
		}
		rep := t.text
		switch {
		case t.kind == tkIdent && t.uni:
			rep = "`" + t.val + "`"
		case t.kind == tkIdent && toks[i+1].val == "(" && isFunctionName(t.val):
			rep = "`" + t.val + "`"
		case t.kind == tkOp && t.val == "||":
			rep = "|"
		}
		pr.rewStart[i] = b.Len()
		b.WriteString(rep)
		pr.rewEnd[i] = b.Len()
		b.WriteByte(' ')
	}
	pr.rewText = b.String()
	return pr, nil
}

var posRe = regexp.MustCompile(`at position (\d+)`)

// parseItem parses "expr" or (allowAlias) "expr [AS] alias".
func parseItem(text string, p pos.Pos, allowAlias bool) (*Expr, string, int, error) {
	e := &Expr{text: text, pos: p}
	toks, lerr := scan(text)
	if lerr != nil {
		return nil, "", 0, e.errAt(lerr.off, lerr.err, "%s", lerr.msg)
	}
	if toks[0].kind == tkEOF {
		return nil, "", 0, e.errAt(0, ErrSyntax, "empty expression")
	}
	if err := e.checkShape(toks); err != nil {
		return nil, "", 0, err
	}
	pr, err := prepass(text, p, toks, allowAlias)
	if err != nil {
		return nil, "", 0, err
	}
	stmt, perr := sqlparser.Parse(pr.rewText)
	if perr != nil {
		return nil, "", 0, pr.syntaxError(e, perr)
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok || len(sel.SelectExprs) != 1 {
		return nil, "", 0, e.errAt(0, ErrSyntax, "not a single expression")
	}
	ae, ok := sel.SelectExprs[0].(*sqlparser.AliasedExpr)
	if !ok {
		return nil, "", 0, e.errAt(toks[0].start, ErrUnsupported, "* is not supported here; name the columns")
	}
	alias := ae.As.String()
	if alias != "" {
		last := toks[len(toks)-2]
		if !allowAlias {
			return nil, "", 0, e.errAt(last.start, ErrSyntax, "unexpected %s after the expression (an alias is not allowed here)", last.text)
		}
		if last.kind == tkIdent || last.kind == tkQIdent {
			alias = last.val
		}
	}
	c := &conv{e: e, pr: pr, cur: map[string]int{}}
	root, err := c.expr(ae.Expr)
	if err != nil {
		return nil, "", 0, err
	}
	e.root = root
	return e, alias, 0, nil
}

// syntaxError maps a sqlparser error ("syntax error at position N near
// 'x'") to the offending token of the original text.
func (pr *prepared) syntaxError(e *Expr, perr error) error {
	m := posRe.FindStringSubmatch(perr.Error())
	end := -1
	if m != nil {
		n, _ := strconv.Atoi(m[1])
		end = n - 1
	}
	for i, t := range pr.toks {
		if t.kind == tkEOF {
			return e.errAt(len(e.text), ErrSyntax, "unexpected end of expression")
		}
		if pr.rewStart[i] >= 0 && pr.rewEnd[i] >= end {
			msg := "syntax error near " + quoteTok(t.text)
			if t.kind == tkIdent && isReservedWord(t.val) {
				msg += "; " + t.text + " is a reserved word: quote it as `" + t.val + "` to use it as a column name"
			}
			return e.errAt(t.start, ErrSyntax, "%s", msg)
		}
	}
	return e.errAt(len(e.text), ErrSyntax, "unexpected end of expression")
}

// isReservedWord reports whether sqlparser rejects w as a plain identifier.
func isReservedWord(w string) bool {
	_, err := sqlparser.Parse("select " + w + " from dual")
	return err != nil
}
