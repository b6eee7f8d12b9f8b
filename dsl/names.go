package dsl

import (
	"fmt"
	"strings"
)

// UnquoteName returns the name a stream, table or column name stands for,
// as sluice's dialect reads it everywhere (job files, the command line):
// a bare name as written (surrounding blanks removed), a backquoted name
// as the text inside the backquotes with “ for a backquote (`group` →
// group, `a“b` → a`b). A name that starts with a backquote but is not
// one backquoted name is an error that says how to write it.
func UnquoteName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "`") {
		return s, nil
	}
	if len(s) < 3 || !strings.HasSuffix(s, "`") {
		return "", fmt.Errorf("name %s: a backquoted name is `name` (write `` for a backquote inside)", s)
	}
	inner := s[1 : len(s)-1]
	if strings.Count(inner, "`")%2 != 0 || strings.Contains(strings.ReplaceAll(inner, "``", ""), "`") {
		return "", fmt.Errorf("name %s: a backquoted name is `name` (write `` for a backquote inside)", s)
	}
	return strings.ReplaceAll(inner, "``", "`"), nil
}

// name reads a YAML name value (source stream, sink table, key column)
// through UnquoteName; a malformed one is an error at its position.
func (y *yamlJob) name(s string, p pair) (string, bool) {
	n, err := UnquoteName(s)
	if err != nil {
		y.add(p.valPos, ErrBadValue, "%v", err)
		return "", false
	}
	return n, true
}
