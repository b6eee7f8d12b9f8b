package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
)

var _ runner.NewKeysSink = (*Tx)(nil)

// NoKeysIn implements runner.NewKeysSink for a merge backfill's
// pass-through (copytext.go): it reports whether a chunk whose rows have
// source primary keys in (after, upTo] (row comparison in the order of
// keys, the source's key columns; nil bounds are open; values as
// runner.Snapshot returns them, of types types) may be loaded with COPY
// straight into the target instead of through a TEMP table and
// INSERT … ON CONFLICT. It says yes only when
//   - the job merges on exactly those columns, which the target has, and
//   - a unique, immediately checked, non-partial index of the target on
//     exactly those columns makes a COPY that would repeat a key fail at
//     once (unique_violation) instead of storing it twice, and
//   - the target holds no row whose key lies in the range, by the
//     target's own comparison.
//
// The comparison may disagree with the source's order (another collation
// of a text key): a key of the chunk outside the range by the target's
// order but in the target then fails the COPY with a unique violation, and
// runner.Backfill stages the chunk instead (it never stores a second row
// of a key). A failure of the check itself (a key value the target's
// type does not take) answers false, in a savepoint, leaving the
// transaction usable. Errors: the context's, or the transaction's.
func (t *Tx) NoKeysIn(ctx context.Context, keys []string, types []cdc.Type, after, upTo []any) (bool, error) {
	st := t.p.st
	if st.Merge != nil || !sameSet(st.Keys, keys) || len(types) != len(keys) ||
		(after != nil && len(after) != len(keys)) || (upTo != nil && len(upTo) != len(keys)) {
		return false, nil
	}
	cols := make([]string, len(keys))
	for i, k := range keys {
		j := st.Schema.Index(k)
		if j < 0 {
			return false, nil
		}
		cols[i] = t.c.columns[j]
	}
	ok, err := uniqueImmediate(ctx, t.tx, st.Table, cols)
	if err != nil || !ok {
		return false, err
	}
	var conds []string
	var args []any
	bound := func(op string, key []any) {
		ps := make([]string, len(key))
		for i, v := range key {
			args = append(args, Encode(v, types[i]))
			ps[i] = fmt.Sprintf("$%d", len(args))
		}
		conds = append(conds, fmt.Sprintf("(%s) %s (%s)", QuoteList("", cols), op, strings.Join(ps, ", ")))
	}
	if after != nil {
		bound(">", after)
	}
	if upTo != nil {
		bound("<=", upTo)
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	if _, err := t.tx.Exec(ctx, "SAVEPOINT sluice_keys"); err != nil {
		return false, fmt.Errorf("postgres sink: %w", err)
	}
	var none bool
	qerr := t.tx.QueryRow(ctx, "SELECT NOT EXISTS (SELECT FROM "+Quote(st.Table)+" AS t"+where+")", args...).Scan(&none)
	if qerr != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if _, err := t.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT sluice_keys"); err != nil {
			return false, fmt.Errorf("postgres sink: %w", err)
		}
		none = false
	}
	if _, err := t.tx.Exec(ctx, "RELEASE SAVEPOINT sluice_keys"); err != nil {
		return false, fmt.Errorf("postgres sink: %w", err)
	}
	return none, nil
}

// uniqueImmediate reports whether table has a unique index, checked
// immediately (not deferrable), without predicate or expressions, on
// exactly the columns cols (in any order).
func uniqueImmediate(ctx context.Context, q Querier, table string, cols []string) (bool, error) {
	sets, err := uniqueIndexes(ctx, q, table, true)
	if err != nil {
		return false, err
	}
	for _, s := range sets {
		if len(s) == len(cols) && sameExact(s, cols) {
			return true, nil
		}
	}
	return false, nil
}

// sameExact reports whether a and b hold the same names (case-sensitive:
// PostgreSQL's attribute names), in any order.
func sameExact(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
