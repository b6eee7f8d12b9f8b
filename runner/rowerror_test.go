package runner_test

import (
	"strings"
	"testing"
)

// TestExpressionErrorNamesKey: an expression that fails on a row (a CAST
// of 'abc' to INT in the projection) names the row by its key columns and
// values, "(id=2, region=eu)", as the sinks do (a job into another
// file: the rows go through sluice).
func TestExpressionErrorNamesKey(t *testing.T) {
	e := newEnv(t)
	e.sql("", "CREATE TABLE xe (id INT, region STRING, v STRING, PRIMARY KEY (id, region))")
	e.sql("", "ALTER TABLE xe SET PROPERTIES ('change_tracking' = 'true')")
	e.sql("", "CREATE TABLE STREAM s_xe ON TABLE xe WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')")
	e.sql("", "INSERT INTO xe VALUES (1, 'us', '5'), (2, 'eu', 'abc')")
	_, err := e.run(e.job("xe.yaml", "name: xe\nsource: s_xe\nselect: [id, \"CAST(v AS INT) AS n\"]\nsink: {table: xe_t, connection: '"+e.conn("t.db")+"'}\n"))
	if err == nil || !strings.Contains(err.Error(), "row with key (id=2, region=eu)") {
		t.Fatalf("error %v, want one naming row with key (id=2, region=eu)", err)
	}
}
