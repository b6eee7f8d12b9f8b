package cdc

import (
	"slices"
	"testing"
)

func TestSchemaIndex(t *testing.T) {
	s := Schema{Columns: []Column{
		{Name: "id", Type: TypeInt},
		{Name: "Name", Type: TypeString},
		{Name: "name", Type: TypeString}, // differs from "Name" only by case
		{Name: "été", Type: TypeDate},
		{Name: "order", Type: TypeBigInt},
	}}
	tests := []struct {
		name string
		want int
	}{
		{"id", 0},
		{"ID", 0},
		{"Id", 0},
		{"Name", 1},
		{"name", 2}, // the exact match wins over an earlier case-insensitive one
		{"NAME", 1}, // no exact match: the first case-insensitive one
		{"été", 3},
		{"ÉTÉ", 3},
		{"order", 4},
		{"ORDER", 4},
		{"missing", -1},
		{"", -1},
		{"id ", -1},
	}
	for _, tt := range tests {
		if got := s.Index(tt.name); got != tt.want {
			t.Errorf("Index(%q) = %d, want %d", tt.name, got, tt.want)
		}
	}
	if got := (Schema{}).Index("id"); got != -1 {
		t.Errorf("empty schema Index = %d, want -1", got)
	}
}

func TestSchemaColumnNames(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "id", Type: TypeInt, NotNull: true}, {Name: "amount", Type: Decimal(10, 2)}}}
	c, ok := s.Column("AMOUNT")
	if !ok || c != (Column{Name: "amount", Type: Decimal(10, 2)}) {
		t.Errorf("Column(AMOUNT) = %+v, %v", c, ok)
	}
	if c, ok := s.Column("nope"); ok || c != (Column{}) {
		t.Errorf("Column(nope) = %+v, %v; want zero, false", c, ok)
	}
	if got := s.Names(); !slices.Equal(got, []string{"id", "amount"}) {
		t.Errorf("Names() = %q", got)
	}
	if got := (Schema{}).Names(); got == nil || len(got) != 0 {
		t.Errorf("empty Names() = %#v, want an empty slice", got)
	}
}

func TestSchemaKeyIndexes(t *testing.T) {
	cols := []Column{{Name: "region", Type: TypeString}, {Name: "id", Type: TypeInt}, {Name: "v", Type: TypeString}}
	tests := []struct {
		name string
		key  []string
		want []int
		ok   bool
	}{
		{"single", []string{"id"}, []int{1}, true},
		{"composite in key order", []string{"id", "region"}, []int{1, 0}, true},
		{"case-insensitive", []string{"ID", "Region"}, []int{1, 0}, true},
		{"no key", nil, []int{}, true},
		{"missing column", []string{"id", "nope"}, nil, false},
	}
	for _, tt := range tests {
		got, ok := Schema{Columns: cols, Key: tt.key}.KeyIndexes()
		if ok != tt.ok || !slices.Equal(got, tt.want) || (tt.want == nil) != (got == nil) {
			t.Errorf("%s: KeyIndexes() = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestStreamSchema(t *testing.T) {
	table := Schema{
		Columns: []Column{{Name: "id", Type: TypeInt, NotNull: true}, {Name: "amount", Type: Decimal(10, 2)}},
		Key:     []string{"id"},
	}
	got := StreamSchema(table)
	want := []Column{
		{Name: "__change_type", Type: TypeString, NotNull: true},
		{Name: "__commit_version", Type: TypeBigInt, NotNull: true},
		{Name: "__commit_timestamp", Type: TypeTimestamp, NotNull: true},
		{Name: "id", Type: TypeInt, NotNull: true},
		{Name: "amount", Type: Decimal(10, 2)},
	}
	if !slices.Equal(got.Columns, want) {
		t.Errorf("StreamSchema columns = %+v\nwant %+v", got.Columns, want)
	}
	if !slices.Equal(got.Key, []string{"id"}) {
		t.Errorf("StreamSchema key = %q, want [id]", got.Key)
	}
	// The key still resolves, now past the metadata columns.
	if idx, ok := got.KeyIndexes(); !ok || !slices.Equal(idx, []int{3}) {
		t.Errorf("StreamSchema KeyIndexes = %v, %v; want [3]", idx, ok)
	}
	// The result does not share storage with MetadataColumns or the table.
	got.Columns[0].Name = "changed"
	got.Columns[3].Name = "changed"
	if MetadataColumns[0].Name != ColChangeType || table.Columns[0].Name != "id" {
		t.Error("StreamSchema shares its column slice with its inputs")
	}
	if n := len(StreamSchema(Schema{}).Columns); n != 3 {
		t.Errorf("StreamSchema of an empty table has %d columns, want 3", n)
	}
}

func TestIsMetadataColumn(t *testing.T) {
	for name, want := range map[string]bool{
		"__change_type": true, "__COMMIT_VERSION": true, "__Commit_Timestamp": true,
		"change_type": false, "id": false, "": false, "__change_type ": false,
	} {
		if got := IsMetadataColumn(name); got != want {
			t.Errorf("IsMetadataColumn(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestChangePartial(t *testing.T) {
	full := Change{Op: OpInsert, Row: []any{int64(1), "a"}}
	if full.IsPartial() || !full.Has(0) || !full.Has(1) {
		t.Errorf("full row: IsPartial %v, Has(0) %v, Has(1) %v", full.IsPartial(), full.Has(0), full.Has(1))
	}
	part := Change{Op: OpUpdateAfter, Row: []any{int64(1), nil, nil}, Present: []bool{true, false, true}}
	if !part.IsPartial() || !part.Has(0) || part.Has(1) || !part.Has(2) {
		t.Errorf("partial row: IsPartial %v, Has %v %v %v", part.IsPartial(), part.Has(0), part.Has(1), part.Has(2))
	}
}
