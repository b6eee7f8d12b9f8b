package cdc

import (
	"fmt"
	"strings"
	"time"
)

// Op is a change type, the value of the __change_type column.
type Op uint8

// The change types of a table stream (seeds/000; DESIGN.md "Table streams").
const (
	OpInsert Op = iota + 1
	OpUpdateBefore
	OpUpdateAfter
	OpDelete
)

var opNames = [...]string{"", "INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE"}

// String returns the __change_type text: INSERT, UPDATE_BEFORE,
// UPDATE_AFTER or DELETE.
func (o Op) String() string {
	if int(o) < len(opNames) && o > 0 {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// ParseOp parses a __change_type text (case-insensitive). It returns an
// error wrapping ErrBadValue for anything else.
func ParseOp(s string) (Op, error) {
	for i, n := range opNames {
		if i > 0 && strings.EqualFold(n, s) {
			return Op(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %q is not a change type (INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE)", ErrBadValue, s)
}

// Change is one row of a table stream read.
//
// Row is aligned with the columns of the schema the change travels with (the
// table's columns at a source, the projected columns after the project
// stage); it does not contain the metadata columns, which are the fields Op,
// CommitVersion and CommitTime. Present is nil for a full row; for a partial
// row (a Tablestore UpdateRow carries only the changed columns) Present[i]
// tells whether Row[i] was carried; a column not carried is left unchanged
// by a merge sink, while a carried nil sets NULL.
type Change struct {
	Op            Op
	CommitVersion int64     // increases with commit order
	CommitTime    time.Time // commit time, UTC
	Row           []any
	Present       []bool
}

// IsPartial reports whether the change carries only some columns.
func (c *Change) IsPartial() bool { return c.Present != nil }

// Has reports whether column i is carried.
func (c *Change) Has(i int) bool { return c.Present == nil || c.Present[i] }
