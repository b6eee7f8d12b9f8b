package conformance

import (
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
)

// Harness connects the suite to one backend.
type Harness struct {
	// Open returns a backend on a fresh, empty database. It must implement
	// runner.Executor and runner.Source. The suite closes it (t.Cleanup is
	// fine too; Close may be called twice).
	Open func(t *testing.T) runner.Backend
	// Apply runs ops, in order, in ONE transaction of b's database, and
	// fails t on error. Values are canonical (package cdc) for the table's
	// column types.
	Apply func(t *testing.T, b runner.Backend, ops ...Op)
	// LogRows returns how many change-log rows b keeps for table (rows not
	// yet consumed by every stream); nil skips the purge checks.
	LogRows func(t *testing.T, b runner.Backend, table string) int
}

// OpKind is a row operation of Apply.
type OpKind uint8

// The row operations.
const (
	OpInsert OpKind = iota + 1 // INSERT Row (all columns, table order)
	OpUpdate                   // UPDATE Set WHERE key = Key
	OpDelete                   // DELETE WHERE key = Key
)

// Op is one row operation. Key lists the primary-key values in key order.
type Op struct {
	Kind  OpKind
	Table string
	Row   []any
	Key   []any
	Set   []Assign
}

// Assign is "column = value" of an update.
type Assign struct {
	Column string
	Value  any
}

// Insert is an OpInsert of row (all columns, in table order).
func Insert(table string, row ...any) Op { return Op{Kind: OpInsert, Table: table, Row: row} }

// Update is an OpUpdate of the row with primary key key.
func Update(table string, key []any, set ...Assign) Op {
	return Op{Kind: OpUpdate, Table: table, Key: key, Set: set}
}

// Delete is an OpDelete of the row with primary key key.
func Delete(table string, key ...any) Op { return Op{Kind: OpDelete, Table: table, Key: key} }

// Set is an Assign.
func Set(col string, v any) Assign { return Assign{Column: col, Value: v} }

// Key is a primary-key value list.
func Key(vals ...any) []any { return vals }

// Row is an expected change: its type and the table's columns.
type Row struct {
	Op     cdc.Op
	Values []any
}

// Ins, UB, UA and Del build expected rows.
func Ins(v ...any) Row { return Row{cdc.OpInsert, v} }

// UB is an expected UPDATE_BEFORE.
func UB(v ...any) Row { return Row{cdc.OpUpdateBefore, v} }

// UA is an expected UPDATE_AFTER.
func UA(v ...any) Row { return Row{cdc.OpUpdateAfter, v} }

// Del is an expected DELETE.
func Del(v ...any) Row { return Row{cdc.OpDelete, v} }
