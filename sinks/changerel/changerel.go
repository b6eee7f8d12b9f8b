// Package changerel names the columns of a change relation: the rows a SQL
// sink applies to its target, whether a sink transaction staged them in a
// temporary table (a run through sluice) or a source's query produces them
// in the same database (pushdown).
//
// A change relation is a table or parenthesized SELECT with, in any order:
//
//	__op      text     the change type (INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE)
//	__ver     integer  the commit version (cdc.Change.CommitVersion)
//	__ord     integer  the order of arrival among equal versions
//	__present text     NULL for a full row; else one '1'/'0' per projected
//	                   column: whether the column is carried (partial rows)
//	__ts      timestamp the commit timestamp (cdc.Change.CommitTime), stored
//	                   as the sink stores TIMESTAMP; only for a sink that
//	                   records it (plan.SinkStage.NeedsCommitTime: mode
//	                   history, a soft-delete merge)
//	<columns>          the projected columns (plan.SinkStage.Schema), by name,
//	                   stored as the sink's backend stores their types
package changerel

import "github.com/sluicedata/sluice/cdc"

// The column names.
const (
	Op      = "__op"
	Ver     = "__ver"
	Ord     = "__ord"
	Present = "__present"
	TS      = "__ts"
)

// StageTable is the temporary table a sink transaction stages merge rows
// in; NetTable holds the net change per key of a merge.
const (
	StageTable = "sluice_stage"
	NetTable   = "sluice_net"
)

// Rows is what CountOps reads: *sql.Rows and pgx.Rows both fit.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// CountOps adds the rows of a count query — (__op text, count integer) per
// change type — to into. It returns the scan error, an error wrapping
// cdc.ErrBadValue for an unknown change type, or rows.Err(). The caller
// closes rows.
func CountOps(rows Rows, into map[cdc.Op]int64) error {
	for rows.Next() {
		var op string
		var n int64
		if err := rows.Scan(&op, &n); err != nil {
			return err
		}
		o, err := cdc.ParseOp(op)
		if err != nil {
			return err
		}
		into[o] += n
	}
	return rows.Err()
}

// LastOrder is the order, after the commit version, of a merge key's
// changes of one commit: a DELETE before any other change, then arrival
// (Ord); desc gives the reverse, for picking the last change first.
// Changes of one commit version and one merge key come from different
// source keys (merge keys that are not the source's primary key, as
// `sluice plan` warns): an UPDATE that moves a row within its primary key
// (id, region) → (id, other) reads as the DELETE of the old source key
// and the INSERT of the new one, and after that commit the row exists.
// Whatever order they arrived in, the key's last change is one that
// leaves a row, never the DELETE of another source key (DESIGN.md: the
// target holds the state after the last commit). The SQL is the same on
// PostgreSQL and SQLite.
func LastOrder(desc bool) string {
	if desc {
		return "(" + Op + " <> 'DELETE') DESC, " + Ord + " DESC"
	}
	return "(" + Op + " <> 'DELETE'), " + Ord
}
