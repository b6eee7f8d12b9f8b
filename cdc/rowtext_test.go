package cdc

import "testing"

func TestRowText(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "id", Type: TypeBigInt}, {Name: "user", Type: TypeString}}}
	long := "0123456789012345678901234567890123456789xyz"
	for _, tc := range []struct {
		name string
		ch   Change
		key  []int
		want string
	}{
		{"key", Change{Row: []any{int64(7), "a"}}, []int{0}, "(id=7)"},
		{"no key: change and commit, no value", Change{Op: OpInsert, CommitVersion: 12, Row: []any{int64(7), long}}, nil, "(INSERT of commit version 12)"},
		{"no key: partial row", Change{Op: OpUpdateAfter, CommitVersion: 3, Row: []any{int64(7), "a"}, Present: []bool{true, false}}, nil, "(UPDATE_AFTER of commit version 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := []string{"id"}
			if got := RowText(&tc.ch, s, tc.key, names); got != tc.want {
				t.Errorf("RowText = %q, want %q", got, tc.want)
			}
		})
	}
}
