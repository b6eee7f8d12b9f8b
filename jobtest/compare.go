package jobtest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/rowcmp"
	"github.com/sluicedata/sluice/pos"
	"github.com/sluicedata/sluice/runner"
)

// cmpRow is one row being compared: its key and compared values as
// rowcmp.Canon texts, and how to print it.
type cmpRow struct {
	key, vals string
	show      string
}

// compare reads the job's target and returns the diff against the case's
// expected rows (see Result.Diff).
func (cs *caseRun) compare(ctx context.Context) ([]string, error) {
	table := cs.job.Sink.Table
	target, exists, err := cs.target(ctx)
	if err != nil {
		return nil, err
	}
	if !exists {
		if len(cs.c.Expect) == 0 {
			return nil, nil
		}
		return []string{fmt.Sprintf("target %s does not exist (%d rows expected)", table, len(cs.c.Expect))}, nil
	}
	// The compared columns: those the expected rows name, else all.
	cols := target.Names()
	if len(cs.c.Expect) > 0 {
		cols = cs.c.Expect[0].Cols
		for _, r := range cs.c.Expect[1:] {
			if !sameFold(r.Cols, cols) {
				return nil, pos.Errorf(r.Pos, "%w: every expected row names the same columns (the first names %s)", ErrBadFile, strings.Join(cols, ", "))
			}
		}
	}
	types := make([]cdc.Type, len(cols))
	for i, n := range cols {
		c, ok := target.Column(n)
		if !ok {
			return nil, pos.Errorf(cs.c.Expect[0].Pos, "%w: target %s has no column %s (it has %s)", ErrBadFile, table, n, strings.Join(target.Names(), ", "))
		}
		cols[i], types[i] = c.Name, c.Type
	}
	keys := keyColumns(cols, cs.job.Sink.Keys, target.Key)

	want := make([]cmpRow, 0, len(cs.c.Expect))
	for _, r := range cs.c.Expect {
		vals := make([]any, len(cols))
		for i, n := range cols {
			if v := r.Vals[indexFold(r.Cols, n)]; v != nil {
				vals[i] = *v
			}
		}
		cr, err := canonRow(cols, types, keys, vals)
		if err != nil {
			return nil, pos.Errorf(r.Pos, "%w: %w", ErrBadFile, err)
		}
		want = append(want, cr)
	}
	got, err := cs.targetRows(ctx, table, cols, types, keys)
	if err != nil {
		return nil, err
	}
	return diffRows(want, got), nil
}

// targetRows reads the compared columns of every target row.
func (cs *caseRun) targetRows(ctx context.Context, table string, cols []string, types []cdc.Type, keys []int) ([]cmpRow, error) {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = ident(c)
	}
	stmts, err := dsl.ParseStatements("target", fmt.Sprintf("SELECT %s FROM %s", strings.Join(q, ", "), ident(table)))
	if err != nil {
		return nil, err
	}
	b, err := cs.r.Backend(ctx, "")
	if err != nil {
		return nil, err
	}
	rs, err := b.(runner.Executor).Exec(ctx, stmts[0])
	if err != nil {
		return nil, fmt.Errorf("read target %s: %w", table, err)
	}
	var out []cmpRow
	for _, row := range rs.Rows {
		cr, err := canonRow(cols, types, keys, row)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", table, err)
		}
		out = append(out, cr)
	}
	return out, nil
}

// keyColumns picks the positions in cols of the job's keys, else of the
// target's primary key, else all of cols.
func keyColumns(cols, sinkKeys, tableKey []string) []int {
	for _, ks := range [][]string{sinkKeys, tableKey} {
		var idx []int
		for _, k := range ks {
			if i := indexFold(cols, k); i >= 0 {
				idx = append(idx, i)
			}
		}
		if len(ks) > 0 && len(idx) == len(ks) {
			return idx
		}
	}
	idx := make([]int, len(cols))
	for i := range cols {
		idx[i] = i
	}
	return idx
}

func canonRow(cols []string, types []cdc.Type, keys []int, vals []any) (cmpRow, error) {
	canon := make([]string, len(vals))
	show := make([]string, len(vals))
	for i, v := range vals {
		c, err := rowcmp.Canon(v, types[i])
		if err != nil {
			return cmpRow{}, fmt.Errorf("column %s: %w", cols[i], err)
		}
		canon[i] = c
		show[i] = cols[i] + ": " + display(v, types[i])
	}
	var key []string
	for _, k := range keys {
		key = append(key, canon[k])
	}
	return cmpRow{key: strings.Join(key, "\x01"), vals: strings.Join(canon, "\x01"), show: "{" + strings.Join(show, ", ") + "}"}, nil
}

// display renders a value as YAML would read it back.
func display(v any, t cdc.Type) string {
	if v == nil {
		return "null"
	}
	s, ok := v.(string)
	if !ok {
		if c, err := cdc.Coerce(v, t); err == nil {
			v = c
		}
		return cdc.FormatValue(v, t)
	}
	if s == "" || strings.TrimSpace(s) != s || strings.ContainsAny(s, ",:{}[]#'\"\n\t") || s == "null" {
		return strconv.Quote(s)
	}
	return s
}

// diffRows returns "- " lines for expected rows not in got and "+ " lines
// for got rows not expected, by key: the rows of one key together, the
// expected first.
func diffRows(want, got []cmpRow) []string {
	byKey := map[string]*[2][]cmpRow{}
	var order []string
	add := func(side int, r cmpRow) {
		g := byKey[r.key]
		if g == nil {
			g = &[2][]cmpRow{}
			byKey[r.key] = g
			order = append(order, r.key)
		}
		g[side] = append(g[side], r)
	}
	for _, r := range want {
		add(0, r)
	}
	for _, r := range got {
		add(1, r)
	}
	slices.Sort(order)
	var out []string
	for _, k := range order {
		g := byKey[k]
		// drop the pairs that match (a multiset difference)
		for i := 0; i < len(g[0]); i++ {
			if j := slices.IndexFunc(g[1], func(r cmpRow) bool { return r.vals == g[0][i].vals }); j >= 0 {
				g[0] = slices.Delete(g[0], i, i+1)
				g[1] = slices.Delete(g[1], j, j+1)
				i--
			}
		}
		for _, r := range g[0] {
			out = append(out, "- "+r.show)
		}
		for _, r := range g[1] {
			out = append(out, "+ "+r.show)
		}
	}
	return out
}

func sameFold(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !containsFold(b, x) {
			return false
		}
	}
	return true
}
