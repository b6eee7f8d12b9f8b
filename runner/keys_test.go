package runner

import (
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// TestKeysPassThrough: a merge may skip its collapse to one change per key
// only when its keys carry every primary-key column unchanged.
func TestKeysPassThrough(t *testing.T) {
	table := cdc.Schema{Columns: []cdc.Column{
		{Name: "id", Type: cdc.TypeInt}, {Name: "k2", Type: cdc.TypeInt}, {Name: "v", Type: cdc.TypeInt},
	}}
	scope := expr.Scope{{Schema: cdc.StreamSchema(table)}}
	project := func(items ...string) []plan.ProjectItem {
		var out []plan.ProjectItem
		for _, it := range items {
			e, name, err := expr.ParseSelectItem(it, pos.Pos{Line: 1, Col: 1})
			if err != nil {
				t.Fatal(err)
			}
			b, err := e.Bind(scope)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, plan.ProjectItem{Name: name, Expr: b})
		}
		return out
	}
	for _, c := range []struct {
		name    string
		pk      []string
		project []string
		keys    []string
		want    bool
	}{
		{"key projected as is", []string{"id"}, []string{"id", "v"}, []string{"id"}, true},
		{"key renamed", []string{"id"}, []string{"id AS rid", "v"}, []string{"rid"}, true},
		{"key name in other case", []string{"id"}, []string{"ID", "v"}, []string{"Id"}, true},
		{"keys a superset of the primary key", []string{"id"}, []string{"id", "v"}, []string{"id", "v"}, true},
		{"key computed", []string{"id"}, []string{"id + 0 AS id", "v"}, []string{"id"}, false},
		{"key cast", []string{"id"}, []string{"CAST(id AS STRING) AS id", "v"}, []string{"id"}, false},
		{"key named like the pk but another column", []string{"id"}, []string{"v AS id", "id AS x"}, []string{"id"}, false},
		{"metadata column as key", []string{"id"}, []string{"__commit_version AS id"}, []string{"id"}, false},
		{"part of a composite key", []string{"id", "k2"}, []string{"id", "k2", "v"}, []string{"id"}, false},
		{"whole composite key", []string{"id", "k2"}, []string{"id", "k2", "v"}, []string{"k2", "id"}, true},
		{"no primary key", nil, []string{"id", "v"}, []string{"id"}, false},
	} {
		s := table
		s.Key = c.pk
		if got := keysPassThrough(project(c.project...), c.keys, s); got != c.want {
			t.Errorf("%s: keysPassThrough = %v, want %v", c.name, got, c.want)
		}
	}
}
