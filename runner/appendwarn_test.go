package runner_test

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestAppendImagesWarning: an append job over a STANDARD stream that
// neither filters the change types nor projects __change_type writes
// UPDATE_BEFORE and DELETE images as plain rows; its plan warns. A job
// that projects __change_type, filters, or reads an APPEND_ONLY stream
// does not get the warning.
func TestAppendImagesWarning(t *testing.T) {
	e := newEnv(t)
	e.sql("", "CREATE TABLE aw (id INT, v STRING, PRIMARY KEY (id))")
	e.sql("", "ALTER TABLE aw SET PROPERTIES ('change_tracking' = 'true')")
	e.sql("", "CREATE TABLE STREAM s_std ON TABLE aw WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
	e.sql("", "CREATE TABLE STREAM s_app ON TABLE aw WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')")
	for _, c := range []struct {
		job  string
		warn bool
	}{
		{"name: a1\nsource: s_std\nsink: {table: t1}\n", true},
		{"name: a2\nsource: s_std\nselect: [__change_type, id, v]\nsink: {table: t2}\n", false},
		{"name: a3\nsource: s_std\nfilter: \"`__change_type` = 'INSERT'\"\nsink: {table: t3}\n", false},
		{"name: a4\nsource: s_app\nsink: {table: t4}\n", false},
		{"name: a5\nsource: s_std\nsink: {table: t5, mode: merge, keys: [id]}\n", false},
	} {
		prep, err := e.r.Plan(context.Background(), e.job("aw.yaml", c.job))
		if err != nil {
			t.Fatalf("%s: %v", c.job, err)
		}
		got := slices.ContainsFunc(prep.Plan.Warnings, func(w string) bool { return strings.Contains(w, "UPDATE_AFTER and DELETE images alike") })
		if got != c.warn {
			t.Errorf("%s: warning %v, want %v (warnings %q)", c.job, got, c.warn, prep.Plan.Warnings)
		}
	}
}
