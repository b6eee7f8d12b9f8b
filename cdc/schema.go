package cdc

import "strings"

// Column is one column of a table or of a projected row.
type Column struct {
	Name    string
	Type    Type
	NotNull bool
}

// Schema describes rows: the columns in order and the primary key (column
// names, in key order; empty when the table has none).
type Schema struct {
	Columns []Column
	Key     []string
}

// Index returns the position of the column named name, compared
// case-insensitively as the dialect's unquoted identifiers are, or -1.
func (s Schema) Index(name string) int {
	for i, c := range s.Columns {
		if c.Name == name {
			return i
		}
	}
	for i, c := range s.Columns {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// Column returns the column named name and whether it exists.
func (s Schema) Column(name string) (Column, bool) {
	if i := s.Index(name); i >= 0 {
		return s.Columns[i], true
	}
	return Column{}, false
}

// Names returns the column names in order.
func (s Schema) Names() []string {
	out := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		out[i] = c.Name
	}
	return out
}

// KeyIndexes returns the positions of the key columns, or nil with ok false
// when a key column is missing.
func (s Schema) KeyIndexes() (idx []int, ok bool) {
	idx = make([]int, len(s.Key))
	for i, k := range s.Key {
		if idx[i] = s.Index(k); idx[i] < 0 {
			return nil, false
		}
	}
	return idx, true
}

// Metadata column names that every table stream adds to the table's columns
// (ClickZetta Table Stream, seeds/000).
const (
	ColChangeType      = "__change_type"
	ColCommitVersion   = "__commit_version"
	ColCommitTimestamp = "__commit_timestamp"
)

// MetadataColumns are the three stream metadata columns, in the order a
// stream read shows them (before the table's columns, as the seed's show()).
var MetadataColumns = []Column{
	{Name: ColChangeType, Type: TypeString, NotNull: true},
	{Name: ColCommitVersion, Type: TypeBigInt, NotNull: true},
	{Name: ColCommitTimestamp, Type: TypeTimestamp, NotNull: true},
}

// IsMetadataColumn reports whether name is one of the metadata columns.
func IsMetadataColumn(name string) bool {
	for _, c := range MetadataColumns {
		if strings.EqualFold(c.Name, name) {
			return true
		}
	}
	return false
}

// StreamSchema returns the schema of a stream read over a table: the
// metadata columns followed by the table's columns, with the table's key.
func StreamSchema(table Schema) Schema {
	cols := make([]Column, 0, len(MetadataColumns)+len(table.Columns))
	cols = append(cols, MetadataColumns...)
	cols = append(cols, table.Columns...)
	return Schema{Columns: cols, Key: table.Key}
}
