package expr

import (
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/pos"
	"github.com/xwb1989/sqlparser"
)

// ParseDML parses an INSERT/UPDATE/DELETE/SELECT statement of `sluice sql`
// with sqlparser after the same token pre-pass as Parse: unquoted unicode
// identifiers are accepted and `||` is string concatenation (it reaches
// the AST as a BinaryExpr with operator "|", which TranslateDML renders as
// ||; a bitwise | in the text is rejected). Errors are *pos.Error.
func ParseDML(text string, p pos.Pos) (sqlparser.Statement, error) {
	toks, lerr := scan(text)
	if lerr != nil {
		return nil, errAt(text, p, lerr.off, lerr.err, "%s", lerr.msg)
	}
	var b strings.Builder
	for i, t := range toks {
		if t.kind == tkEOF {
			break
		}
		if i > 0 {
			b.WriteString(text[toks[i-1].end:t.start])
		}
		switch {
		case t.kind == tkOp && t.val == "|":
			return nil, errAt(text, p, t.start, ErrUnsupported, "bitwise | is not supported (|| is string concatenation)")
		case t.kind == tkOp && t.val == "||":
			b.WriteString("|")
		case t.kind == tkIdent && t.uni:
			b.WriteString("`" + t.val + "`")
		default:
			b.WriteString(t.text)
		}
	}
	stmt, err := sqlparser.Parse(b.String())
	if err != nil {
		off := 0
		if m := posRe.FindStringSubmatch(err.Error()); m != nil {
			fmt.Sscan(m[1], &off)
			off--
		}
		// Offsets shift only where identifiers were backquoted or || was
		// shortened; map by counting through the tokens.
		return nil, errAt(text, p, mapOffset(toks, text, off), ErrSyntax, "%s", strings.SplitN(err.Error(), " at position", 2)[0])
	}
	return stmt, nil
}

func mapOffset(toks []token, text string, rewOff int) int {
	shift := 0
	for _, t := range toks {
		if t.kind == tkEOF {
			break
		}
		if t.start+shift >= rewOff {
			return t.start
		}
		switch {
		case t.kind == tkOp && t.val == "||":
			shift--
		case t.kind == tkIdent && t.uni:
			shift += 2
		}
		if t.end+shift >= rewOff {
			return t.start
		}
	}
	return len(text)
}

// TranslateDML re-renders a statement of `sluice sql` (from ParseDML) for
// dialect d: identifiers double-quoted, string literals in standard SQL
// (” doubling, no backslash escapes), `||` as concatenation, LIMIT n
// OFFSET m. For SQLite, numeric literals with a fractional part or an
// exponent are rendered as text ('1000.00') so that DECIMAL_TEXT columns
// store them exactly (INTEGER and REAL affinity columns convert such text
// back to numbers); for PostgreSQL they stay numeric literals (numeric,
// exact). Statements other than INSERT/UPDATE/DELETE/SELECT, MySQL-only
// clauses (ON DUPLICATE KEY, REPLACE, UPDATE … LIMIT for PostgreSQL) and
// CAST/CONVERT are errors.
func TranslateDML(stmt sqlparser.Statement, d Dialect) (string, error) {
	switch s := stmt.(type) {
	case *sqlparser.Select, *sqlparser.Union:
	case *sqlparser.Insert:
		if len(s.OnDup) > 0 {
			return "", fmt.Errorf("%w: ON DUPLICATE KEY UPDATE (use MERGE)", ErrUnsupported)
		}
		if s.Action != sqlparser.InsertStr {
			return "", fmt.Errorf("%w: %s INTO", ErrUnsupported, strings.ToUpper(s.Action))
		}
	case *sqlparser.Update:
		if d.Name() == "postgres" && (s.Limit != nil || len(s.OrderBy) > 0) {
			return "", fmt.Errorf("%w: UPDATE … ORDER BY/LIMIT on PostgreSQL", ErrUnsupported)
		}
	case *sqlparser.Delete:
		if d.Name() == "postgres" && (s.Limit != nil || len(s.OrderBy) > 0) {
			return "", fmt.Errorf("%w: DELETE … ORDER BY/LIMIT on PostgreSQL", ErrUnsupported)
		}
	default:
		return "", fmt.Errorf("%w: only INSERT, UPDATE, DELETE and SELECT are translated, not %T", ErrUnsupported, stmt)
	}
	var failure error
	const dual = "\x00dual\x00"
	pg := d.Name() == "postgres"
	format := func(buf *sqlparser.TrackedBuffer, node sqlparser.SQLNode) {
		switch n := node.(type) {
		case sqlparser.ColIdent:
			buf.WriteString(QuoteIdent(n.String()))
			return
		case sqlparser.TableIdent:
			buf.WriteString(QuoteIdent(n.String()))
			return
		case sqlparser.TableExprs:
			if len(n) == 1 {
				if at, ok := n[0].(*sqlparser.AliasedTableExpr); ok {
					if tn, ok := at.Expr.(sqlparser.TableName); ok && tn.Qualifier.IsEmpty() && strings.EqualFold(tn.Name.String(), "dual") {
						buf.WriteString(dual)
						return
					}
				}
			}
		case *sqlparser.SQLVal:
			switch n.Type {
			case sqlparser.StrVal:
				buf.WriteString(QuoteString(string(n.Val)))
				return
			case sqlparser.FloatVal:
				if !pg {
					buf.WriteString(QuoteString(string(n.Val)))
					return
				}
			case sqlparser.HexVal:
				if pg {
					buf.WriteString(`'\x` + string(n.Val) + `'::bytea`)
					return
				}
			case sqlparser.ValArg, sqlparser.BitVal, sqlparser.HexNum:
				failure = fmt.Errorf("%w: literal %s", ErrUnsupported, sqlparser.String(n))
			}
		case sqlparser.BoolVal:
			if !pg {
				if n {
					buf.WriteString("1")
				} else {
					buf.WriteString("0")
				}
				return
			}
		case *sqlparser.BinaryExpr:
			if n.Operator == sqlparser.BitOrStr {
				buf.Myprintf("(%v || %v)", n.Left, n.Right)
				return
			}
			if n.Operator != "+" && n.Operator != "-" && n.Operator != "*" && n.Operator != "/" && n.Operator != "%" {
				failure = fmt.Errorf("%w: operator %s", ErrUnsupported, n.Operator)
			}
		case *sqlparser.FuncExpr:
			if !n.Qualifier.IsEmpty() {
				failure = fmt.Errorf("%w: qualified function %s", ErrUnsupported, sqlparser.String(n))
			}
			distinct := ""
			if n.Distinct {
				distinct = "distinct "
			}
			buf.Myprintf("%s(%s%v)", strings.ToLower(n.Name.String()), distinct, n.Exprs)
			return
		case *sqlparser.Limit:
			if n == nil {
				return
			}
			buf.Myprintf(" limit %v", n.Rowcount)
			if n.Offset != nil {
				buf.Myprintf(" offset %v", n.Offset)
			}
			return
		case *sqlparser.ConvertExpr, *sqlparser.ConvertUsingExpr:
			failure = fmt.Errorf("%w: CAST/CONVERT in a translated statement", ErrUnsupported)
		case *sqlparser.ComparisonExpr:
			switch n.Operator {
			case sqlparser.RegexpStr, sqlparser.NotRegexpStr, sqlparser.NullSafeEqualStr, sqlparser.JSONExtractOp, sqlparser.JSONUnquoteExtractOp:
				failure = fmt.Errorf("%w: operator %s", ErrUnsupported, n.Operator)
			}
		case *sqlparser.UnaryExpr:
			if v, ok := n.Expr.(*sqlparser.SQLVal); ok && !pg && v.Type == sqlparser.FloatVal && n.Operator == sqlparser.UMinusStr {
				buf.WriteString(QuoteString("-" + string(v.Val)))
				return
			}
			if n.Operator != sqlparser.UMinusStr && n.Operator != sqlparser.UPlusStr {
				failure = fmt.Errorf("%w: operator %s", ErrUnsupported, n.Operator)
			}
		case *sqlparser.IntervalExpr, *sqlparser.MatchExpr, *sqlparser.GroupConcatExpr, *sqlparser.CollateExpr:
			failure = fmt.Errorf("%w: %s", ErrUnsupported, sqlparser.String(n))
		}
		node.Format(buf)
	}
	buf := sqlparser.NewTrackedBuffer(format)
	buf.Myprintf("%v", stmt)
	if failure != nil {
		return "", failure
	}
	out := strings.ReplaceAll(buf.String(), " from "+dual, "")
	out = strings.ReplaceAll(out, dual, "")
	return out, nil
}
