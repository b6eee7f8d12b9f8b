package dsl

import (
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/pos"
	"github.com/xwb1989/sqlparser"
	"time"
)

// Statement is a parsed statement of the dialect: one of the pointer types
// below.
type Statement interface {
	// Position is where the statement starts.
	Position() pos.Pos
	// SQL is the statement text as written.
	SQL() string
}

// Base carries the text and position common to every statement.
type Base struct {
	Text string
	Pos  pos.Pos
}

// Position implements Statement.
func (b *Base) Position() pos.Pos { return b.Pos }

// SQL implements Statement.
func (b *Base) SQL() string { return b.Text }

// CreateTable is CREATE TABLE [IF NOT EXISTS] t (col TYPE [NOT NULL], …,
// PRIMARY KEY (…)). Schema.Key is the primary key (a column's inline PRIMARY
// KEY counts too).
type CreateTable struct {
	Base
	Table       string
	IfNotExists bool
	Schema      cdc.Schema
}

// SetChangeTracking is ALTER TABLE t SET PROPERTIES ('change_tracking' =
// 'true'|'false').
type SetChangeTracking struct {
	Base
	Table   string
	Enabled bool
}

// Stream modes (TABLE_STREAM_MODE).
const (
	ModeStandard   = "STANDARD"
	ModeAppendOnly = "APPEND_ONLY"
)

// CreateStream is CREATE [OR REPLACE] TABLE STREAM [IF NOT EXISTS] s ON
// TABLE t [COMMENT = '…'] WITH PROPERTIES (…). TIMESTAMP AS OF is refused
// by the parser (ErrNotSupported).
type CreateStream struct {
	Base
	Stream          string
	Table           string
	OrReplace       bool
	IfNotExists     bool
	Mode            string // ModeStandard (default) or ModeAppendOnly
	ShowInitialRows bool
	Comment         string
	// StaleAfter is the stream's retention ('STALE_AFTER' = '14d' | '36h'
	// …): a change it leaves unconsumed for longer makes it stale, and the
	// change log stops keeping rows for it. 0 means the backend's default
	// (runner.DefaultStaleAfter).
	StaleAfter time.Duration
}

// DropStream is DROP TABLE STREAM [IF EXISTS] s.
type DropStream struct {
	Base
	Stream   string
	IfExists bool
}

// ShowStreams is SHOW TABLE STREAMS.
type ShowStreams struct{ Base }

// DescribeStream is DESCRIBE TABLE STREAM s.
type DescribeStream struct {
	Base
	Stream string
}

// DML is INSERT, UPDATE, DELETE or SELECT, passed to the backend after
// translation (package expr renders it for the backend's dialect). Kind is
// "INSERT", "UPDATE", "DELETE" or "SELECT".
type DML struct {
	Base
	Kind string
	AST  sqlparser.Statement
}

// DropTable is DROP TABLE [IF EXISTS] t.
type DropTable struct {
	Base
	Table    string
	IfExists bool
}

// TableRefs returns the distinct unqualified table names of the
// statement's FROM and JOIN clauses as written, subqueries included
// (column qualifiers and aliases are not table references). Backends use
// it to find the table streams a SELECT reads.
func (d *DML) TableRefs() []string {
	var out []string
	seen := map[string]bool{}
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		if at, ok := node.(*sqlparser.AliasedTableExpr); ok {
			if tn, ok := at.Expr.(sqlparser.TableName); ok && tn.Qualifier.IsEmpty() && !tn.Name.IsEmpty() {
				if n := tn.Name.String(); !seen[n] {
					seen[n] = true
					out = append(out, n)
				}
			}
		}
		return true, nil
	}, d.AST)
	return out
}
