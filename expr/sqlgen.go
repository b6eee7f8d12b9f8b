package expr

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
)

// Dialect renders bound expressions for one SQL backend. The two dialects
// are the values SQLite and Postgres.
type Dialect interface {
	// Name is "sqlite" or "postgres".
	Name() string
	render(r *renderer, n *node) (string, error)
}

// SQL renders b in dialect d; columns are rendered by col(rel, idx), which
// must return a quoted identifier ("amount", s."id"). The SQL has the same
// semantics as Eval on the same rows (stored per the dialect's storage
// conventions): see the SQLite and Postgres dialect docs.
func (b *Bound) SQL(d Dialect, col func(rel, idx int) string) (string, error) {
	r := &renderer{b: b, col: col, d: d}
	return r.expr(b.root)
}

type renderer struct {
	b   *Bound
	col func(rel, idx int) string
	d   Dialect
}

func (r *renderer) expr(n *node) (string, error) {
	if (n.op == opAnd || n.op == opOr) && len(n.args) == 2 && n.args[0].op == n.op {
		return r.chain(n)
	}
	return r.d.render(r, n)
}

// chain renders a left-deep chain of one operator, AND or OR (a OR b OR c
// parses as ((a OR b) OR c)), as both dialects render it node by node,
// "((a OR b) OR c)", but in one builder: rendering each node as the
// concatenation of its operands' strings copied the chain's text once per
// level, quadratic in its length (a 5,000-term OR chain, the longest the
// limits allow, allocated 330 MB per dialect).
func (r *renderer) chain(n *node) (string, error) {
	word := " AND "
	if n.op == opOr {
		word = " OR "
	}
	var rights []*node
	m := n
	for (m.op == n.op) && len(m.args) == 2 {
		rights = append(rights, m.args[1])
		m = m.args[0]
	}
	first, err := r.expr(m)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	sb.WriteString(strings.Repeat("(", len(rights)))
	sb.WriteString(first)
	for i := len(rights) - 1; i >= 0; i-- {
		s, err := r.expr(rights[i])
		if err != nil {
			return "", err
		}
		sb.WriteString(word)
		sb.WriteString(s)
		sb.WriteByte(')')
	}
	return sb.String(), nil
}

func (r *renderer) all(ns []*node) ([]string, error) {
	out := make([]string, len(ns))
	for i, n := range ns {
		s, err := r.expr(n)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// QuoteString renders s as a SQL string literal (” doubles a quote).
func QuoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// QuoteIdent renders name as a double-quoted identifier ("" doubles a quote).
func QuoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// Column renders a column the usual way: "name" or alias."name".
func Column(alias, name string) string {
	if alias == "" {
		return QuoteIdent(name)
	}
	return QuoteIdent(alias) + "." + QuoteIdent(name)
}

// caseSQL renders a searched CASE from rendered parts.
func caseSQL(n *node, parts []string) string {
	var sb strings.Builder
	sb.WriteString("CASE")
	i := 0
	for ; i+1 < len(parts) && !(n.hasElse && i == len(parts)-1); i += 2 {
		fmt.Fprintf(&sb, " WHEN %s THEN %s", parts[i], parts[i+1])
	}
	if n.hasElse {
		fmt.Fprintf(&sb, " ELSE %s", parts[len(parts)-1])
	}
	sb.WriteString(" END")
	return sb.String()
}

func formatFloatSQL(f float64) string {
	s := strconv.FormatFloat(f, 'e', -1, 64)
	return s
}

// storageText renders a canonical value as the text SQLite stores for type
// t (fixed-scale DECIMAL, zoned TIMESTAMP, DATE).
func storageText(v any, t cdc.Type) string {
	switch x := v.(type) {
	case decimal.Decimal:
		if t.Kind == cdc.KindDecimal {
			return x.StringFixed(int32(t.Scale))
		}
		return x.String()
	case time.Time:
		if t.Kind == cdc.KindDate {
			return x.Format(time.DateOnly)
		}
		return cdc.FormatTimestamp(x)
	}
	return fmt.Sprint(v)
}

func hexLiteral(b []byte) string { return "X'" + strings.ToUpper(hex.EncodeToString(b)) + "'" }
