package runner

import (
	"context"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
)

// Differ is a backend that can compare a table with another one for
// Runner.Diff (`sluice diff`): it hashes a relation's rows in the database
// and reads the rows of chosen hash buckets (package internal/rowhash
// defines the hashes; every Differ computes them identically).
type Differ interface {
	Backend
	// DiffRead opens a read-only snapshot: every query of the reader sees
	// the database as of its first one.
	DiffRead(ctx context.Context) (DiffReader, error)
	// DiffNative names the database's own row hash that DiffRelation.Native
	// selects ("" for none): the runner sets Native only when both sides
	// name the same one.
	DiffNative() string
}

// DiffReader reads one database for a diff. It is not safe for
// concurrent use.
type DiffReader interface {
	// Buckets calls fn once for every non-empty bucket of rel's rows, in
	// bucket order. A row's bucket is rowhash.Bucket of the hash of its key
	// columns (rel.Columns[:rel.Keys]); Sum1 and Sum2 are the sums of the
	// high and low 32 bits of the hashes of its columns (rel.Columns).
	Buckets(ctx context.Context, rel *DiffRelation, bits int, fn func(BucketSum) error) error
	// Rows calls fn for every row of rel whose bucket is in buckets
	// (ascending; nil: every bucket), in bucket order, with the canonical
	// texts of its columns (rowhash; nil for NULL). fn owns cols.
	Rows(ctx context.Context, rel *DiffRelation, bits int, buckets []uint32, fn func(bucket uint32, cols []*string) error) error
	// Close ends the snapshot.
	Close() error
}

// BucketSum is one bucket's count and hash sums.
type BucketSum struct {
	Bucket     uint32
	Count      int64
	Sum1, Sum2 int64
}

// DiffRelation is one side of a diff: the rows of a table, filtered and
// projected, as the columns compared.
type DiffRelation struct {
	// Table is the table's name (unquoted).
	Table string
	// Columns are the compared columns, the key columns first.
	Columns []DiffColumn
	// Keys is the number of key columns at the start of Columns.
	Keys int
	// Where keeps the rows for which any of the predicates holds (SQL
	// truth: NULL drops); none keeps every row.
	Where []DiffPred
	// Null names columns that must be NULL for a row to count
	// (__valid_to of a history, __deleted_at of a soft-delete merge).
	Null []string
	// Native is true when the other side is a database of the same kind
	// whose key columns have the same rowhash.Class: the backend may then
	// hash with its own functions (PostgreSQL's hash_record_extended)
	// instead of rowhash's canonical text, as long as equal values by
	// rowcmp's rules hash alike on both sides. Bucket sums are then
	// comparable only with the same backend's.
	Native bool
}

// DiffColumn is one compared column of a DiffRelation.
type DiffColumn struct {
	// Name is the column's name in the target (the projected name).
	Name string
	// Type is the type of the value on this side: the table column's, or
	// the expression's.
	Type cdc.Type
	// Expr, when set, computes the value from the table's row: it is bound
	// in the stream's scope and rendered with Col. Nil: the table's column
	// Name.
	Expr *expr.Bound
	Col  func(rel, idx int) string
}

// DiffPred is a predicate of DiffRelation.Where, bound in the stream's
// scope and rendered with Col.
type DiffPred struct {
	Expr *expr.Bound
	Col  func(rel, idx int) string
}

// SQL renders the column's value in dialect d (quote quotes an
// identifier).
func (c *DiffColumn) SQL(d expr.Dialect, quote func(string) string) (string, error) {
	if c.Expr == nil {
		return quote(c.Name), nil
	}
	return c.Expr.SQL(d, c.Col)
}

// WhereSQL renders the relation's row condition in dialect d ("" when
// every row counts).
func (rel *DiffRelation) WhereSQL(d expr.Dialect, quote func(string) string) (string, error) {
	var and []string
	var or []string
	for _, p := range rel.Where {
		s, err := p.Expr.SQL(d, p.Col)
		if err != nil {
			return "", err
		}
		or = append(or, "("+s+")")
	}
	if len(or) > 0 {
		and = append(and, "("+strings.Join(or, " OR ")+")")
	}
	for _, n := range rel.Null {
		and = append(and, quote(n)+" IS NULL")
	}
	return strings.Join(and, " AND "), nil
}

// Types returns the types of the relation's columns, in order.
func (rel *DiffRelation) Types() []cdc.Type {
	out := make([]cdc.Type, len(rel.Columns))
	for i, c := range rel.Columns {
		out[i] = c.Type
	}
	return out
}
