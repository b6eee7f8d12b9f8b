package plan

import (
	"slices"
	"strings"

	"github.com/sluicedata/sluice/cdc"
)

// PassedKeys returns, for each column of table's primary key in key order,
// the merge key (one of keys, matched case-insensitively) that project
// passes it through unchanged: a bare reference to that column (project's
// expressions are bound in the scope of cdc.StreamSchema(table)). ok is
// false when a primary-key column has no such merge key, or table has no
// primary key. With ok, two net changes of different source keys have
// different merge keys (SinkStage.OneChangePerKey).
func PassedKeys(project []ProjectItem, keys []string, table cdc.Schema) (passed []string, ok bool) {
	if len(table.Key) == 0 {
		return nil, false
	}
	nmeta := len(cdc.MetadataColumns)
	for _, k := range table.Key {
		found := ""
		for _, it := range project {
			if it.Expr == nil || !slices.ContainsFunc(keys, func(n string) bool { return strings.EqualFold(n, it.Name) }) {
				continue
			}
			ref, isCol := it.Expr.Column()
			if isCol && ref.Col >= nmeta && ref.Col-nmeta < len(table.Columns) && strings.EqualFold(table.Columns[ref.Col-nmeta].Name, k) {
				found = it.Name
				break
			}
		}
		if found == "" {
			return nil, false
		}
		passed = append(passed, found)
	}
	return passed, true
}
