package expr

import "github.com/sluicedata/sluice/cdc"

// PossibleOps returns the change types (INSERT, UPDATE_BEFORE,
// UPDATE_AFTER, DELETE, in that order) that filter b may keep, given that
// column changeTypeCol of relation changeTypeRel is `__change_type`.
//
// Each op is tried with `__change_type` fixed to its name and every other
// column unknown; three-valued logic decides: unknown AND FALSE is FALSE,
// unknown OR TRUE is TRUE, anything else involving an unknown is unknown.
// An op is dropped only when the filter is definitely FALSE or NULL for
// every value of the other columns (the plan then warns that such changes
// are consumed for good). The analysis is sound but not complete: a filter
// like `id = 1 AND id = 2` keeps every op.
func PossibleOps(b *Bound, changeTypeRel, changeTypeCol int) []cdc.Op {
	var out []cdc.Op
	for _, o := range []cdc.Op{cdc.OpInsert, cdc.OpUpdateBefore, cdc.OpUpdateAfter, cdc.OpDelete} {
		ev := evaluator{b: b, known: func(rel, col int) (any, bool) {
			if rel == changeTypeRel && col == changeTypeCol {
				return o.String(), true
			}
			return nil, false
		}}
		v, err := ev.eval(b.root)
		if err != nil || v == true {
			// unknown, or an evaluation error that depends on the data:
			// the op may be kept.
			out = append(out, o)
		}
	}
	return out
}

// DroppedOps is the complement of PossibleOps: the change types filter b
// can never keep.
func DroppedOps(b *Bound, changeTypeRel, changeTypeCol int) []cdc.Op {
	keep := map[cdc.Op]bool{}
	for _, o := range PossibleOps(b, changeTypeRel, changeTypeCol) {
		keep[o] = true
	}
	var out []cdc.Op
	for _, o := range []cdc.Op{cdc.OpInsert, cdc.OpUpdateBefore, cdc.OpUpdateAfter, cdc.OpDelete} {
		if !keep[o] {
			out = append(out, o)
		}
	}
	return out
}
