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
//	<columns>          the projected columns (plan.SinkStage.Schema), by name,
//	                   stored as the sink's backend stores their types
package changerel

// The column names.
const (
	Op      = "__op"
	Ver     = "__ver"
	Ord     = "__ord"
	Present = "__present"
)

// StageTable is the temporary table a sink transaction stages merge rows
// in; NetTable holds the net change per key of a merge.
const (
	StageTable = "sluice_stage"
	NetTable   = "sluice_net"
)
