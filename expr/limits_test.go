package expr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// orChain is "id = 0 OR id = 1 OR … OR id = n-1": 2n-1 operators.
func orChain(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString("id = " + strconv.Itoa(i))
	}
	return b.String()
}

func TestShapeLimits(t *testing.T) {
	deep := strings.Repeat("(", MaxDepth+1) + "1" + strings.Repeat(")", MaxDepth+1)
	long := orChain(MaxOperators/2 + 1)
	// The operator past the limit: the '=' of term MaxOperators/2 (each
	// term before it holds '=' and all but the first an OR before it).
	off := strings.Index(long, "id = "+strconv.Itoa(MaxOperators/2)) + 3
	for _, tc := range []struct {
		name, in string
		sentinel error
		want     string
	}{
		{"nested parentheses", deep, ErrTooDeep, fmt.Sprintf("job.yaml:3:%d: expression too deeply nested (limit %d)", 9+MaxDepth, MaxDepth)},
		{"nested function calls", strings.Repeat("abs(", MaxDepth+1) + "1" + strings.Repeat(")", MaxDepth+1), ErrTooDeep, "expression too deeply nested"},
		{"a long OR chain", long, ErrTooLarge, fmt.Sprintf("job.yaml:3:%d: expression too large: more than %d operators", 9+off, MaxOperators)},
		{"a million-term OR chain", orChain(1_000_000), ErrTooLarge, "expression too large"},
		{"too many tokens", "id IN (" + strings.Repeat("1,", MaxTokens) + "1)", ErrTooLarge, fmt.Sprintf("more than %d tokens", MaxTokens)},
		{"a long NOT chain", strings.Repeat("NOT ", MaxOperators+1) + "flag", ErrTooLarge, "expression too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.in, at)
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %.300v, want %q", err, tc.want)
			}
		})
	}
}

// TestLargestShapes parses, binds, evaluates and renders the largest
// expressions the limits allow and checks the result of each.
func TestLargestShapes(t *testing.T) {
	scope := Scope{{Schema: testSchema}}
	id := testSchema.Index("id")
	row := make([]any, len(testSchema.Columns))
	for _, tc := range []struct {
		name string
		in   string
		id   int64
		want bool
	}{
		{"OR chain at the limit, last term true", orChain(MaxOperators / 2), MaxOperators/2 - 1, true},
		{"OR chain at the limit, no term true", orChain(MaxOperators / 2), -5, false},
		{"nesting at the limit", strings.Repeat("(", MaxDepth) + "id = 3" + strings.Repeat(")", MaxDepth), 3, true},
		{"NOT chain at the limit", strings.Repeat("NOT ", MaxOperators-1) + "id = 3", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Parse(tc.in, at)
			if err != nil {
				t.Fatalf("%.200v", err)
			}
			b, err := e.Bind(scope)
			if err != nil {
				t.Fatalf("%.200v", err)
			}
			row[id] = tc.id
			got, err := b.EvalBool(Values(row))
			if err != nil || got != tc.want {
				t.Fatalf("EvalBool = %v, %v; want %v", got, err, tc.want)
			}
			col := func(_, i int) string { return QuoteIdent(testSchema.Columns[i].Name) }
			for _, d := range []Dialect{SQLite, Postgres} {
				if s, err := b.SQL(d, col); err != nil || !strings.Contains(s, "3") {
					t.Fatalf("%s: %d bytes, %v", d.Name(), len(s), err)
				}
			}
		})
	}
}

// BenchmarkLargestOrChain reports the cost of the largest OR chain the
// limits allow (MaxOperators/2 terms, 64 KB of text): "parse+bind+eval"
// parses, binds and evaluates it once; "sql" renders the bound expression
// in both dialects. Run with -benchmem for the bytes allocated per
// operation.
func BenchmarkLargestOrChain(b *testing.B) {
	in := orChain(MaxOperators / 2)
	scope := Scope{{Schema: testSchema}}
	row := make([]any, len(testSchema.Columns))
	row[testSchema.Index("id")] = int64(MaxOperators/2 - 1) // the last term is the true one
	col := func(_, i int) string { return QuoteIdent(testSchema.Columns[i].Name) }
	b.Run("parse+bind+eval", func(b *testing.B) {
		b.ReportMetric(float64(len(in)), "bytes-of-text")
		for b.Loop() {
			e, err := Parse(in, at)
			if err != nil {
				b.Fatal(err)
			}
			bd, err := e.Bind(scope)
			if err != nil {
				b.Fatal(err)
			}
			if ok, err := bd.EvalBool(Values(row)); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("sql", func(b *testing.B) {
		e, err := Parse(in, at)
		if err != nil {
			b.Fatal(err)
		}
		bd, err := e.Bind(scope)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			for _, d := range []Dialect{SQLite, Postgres} {
				if _, err := bd.SQL(d, col); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// TestChainSQLUnchanged: a long AND/OR chain renders as the node-by-node
// rendering did, "((a OR b) OR c)", mixed chains included.
func TestChainSQLUnchanged(t *testing.T) {
	scope := Scope{{Schema: testSchema}}
	col := func(_, i int) string { return QuoteIdent(testSchema.Columns[i].Name) }
	for _, tc := range []struct{ in, want string }{
		{"id = 1 OR id = 2 OR id = 3", `((("id" = 1) OR ("id" = 2)) OR ("id" = 3))`},
		{"id = 1 AND id = 2 AND id = 3 OR id = 4", `(((("id" = 1) AND ("id" = 2)) AND ("id" = 3)) OR ("id" = 4))`},
		{"id = 1 OR (id = 2 OR id = 3)", `(("id" = 1) OR (("id" = 2) OR ("id" = 3)))`},
	} {
		e, err := Parse(tc.in, at)
		if err != nil {
			t.Fatal(err)
		}
		bd, err := e.Bind(scope)
		if err != nil {
			t.Fatal(err)
		}
		got, err := bd.SQL(Postgres, col)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
