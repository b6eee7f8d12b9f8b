package dsl

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/plan"
)

// TestSQLExprPositions checks that every expression of a SQL job is the
// exact slice of the file at its position.
func TestSQLExprPositions(t *testing.T) {
	src := "-- name: j\n" +
		"INSERT INTO t (a, b)\n" +
		"SELECT upper(name) AS a, CASE WHEN x > 1 THEN 'big' END\n" +
		"FROM `订单流` WHERE `__change_type` <> 'DELETE' -- trailing\n"
	job, err := ParseSQL("j.sql", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	exprAt(t, src, job.Select[0].Expr, "upper(name) AS a", 3, 8)
	exprAt(t, src, job.Select[1].Expr, "CASE WHEN x > 1 THEN 'big' END", 3, 26)
	exprAt(t, src, *job.Filter, "`__change_type` <> 'DELETE'", 4, 24)
	if job.Source.Stream != "订单流" || !reflect.DeepEqual(job.Sink.Columns, []string{"a", "b"}) || job.Sink.Mode != plan.ModeAppend {
		t.Errorf("job %s", renderJob(job))
	}
}

func TestSQLMetadata(t *testing.T) {
	src := "#  Name : hash-comment\n" +
		"-- note: free text is ignored\n" +
		"/* connection: sqlite:a.db\n" +
		" * schedule: @every 1m */\n" +
		"INSERT INTO t SELECT * FROM s\n" +
		"-- name: not metadata (after the first statement)\n"
	job, err := ParseSQL("j.sql", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if job.Name != "hash-comment" || job.Conn != "sqlite:a.db" || job.ConnPos.String() != "j.sql:3:16" ||
		job.Schedule != "@every 1m" || job.SchedulePos.String() != "j.sql:4:14" {
		t.Errorf("job %s", renderJob(job))
	}
}

func TestSQLConsumingStatements(t *testing.T) {
	tests := []struct {
		src  string
		want string // renderJob output without the job line, or the error
	}{
		{
			"INSERT OVERWRITE t SELECT a FROM s",
			"source s @1:34\nfilter (none)\nselect \"a\" @1:27 alias=\"\"\nsink table t @1:18\n  mode overwrite @1:1\n",
		},
		{
			"INSERT INTO TABLE t SELECT * FROM s WHERE (a = 1) AND b IN (SELECT 1)",
			"source s @1:35\nfilter \"(a = 1) AND b IN (SELECT 1)\" @1:43\nselect *\nsink table t @1:19\n  mode append @1:1\n",
		},
		{
			"MERGE INTO t USING s ON t.k = s.k WHEN NOT MATCHED THEN INSERT (k) VALUES (s.k)",
			"source s @1:20\nfilter (none)\nselect *\nsink table t @1:12\n  mode merge @1:1\n  keys k @1:25\n  merge target=t source=s on t.k = s.k @1:25\n  when NOT MATCHED then INSERT @1:35\n    insert k = \"s.k\" @1:76\n",
		},
		{
			"MERGE INTO t USING (SELECT k, v + 1 AS v FROM s) src ON src.k = k\nWHEN MATCHED AND src.v > 0 THEN UPDATE SET v = src.v\nWHEN MATCHED THEN DELETE",
			"source s @1:47\nfilter (none)\nselect \"k\" @1:28 alias=\"\"\nselect \"v + 1 AS v\" @1:31 alias=\"\"\nsink table t @1:12\n  mode merge @1:1\n  keys k @1:57\n  merge target=t source=src on t.k = src.k @1:57\n  when MATCHED AND \"src.v > 0\" @2:18 then UPDATE @2:1\n    set v = \"src.v\" @2:48\n  when MATCHED then DELETE @3:1\n",
		},
		{"INSERT INTO t SELECT a FROM s x", "j.sql:1:31: an alias for the stream is not supported here; refer to its columns unqualified"},
		{"INSERT INTO t SELECT a FROM s, u", "j.sql:1:30: a consuming statement reads one stream; joins are not supported"},
		{"INSERT INTO t SELECT DISTINCT a FROM s", "j.sql:1:22: SELECT DISTINCT is not supported in a consuming statement"},
		{"INSERT INTO t SELECT a FROM s WHERE a > 1 GROUP BY a", "j.sql:1:43: GROUP is not supported in a consuming statement"},
		{"INSERT INTO t SELECT a, * FROM s", "j.sql:1:25: *: * must be the only select item, unqualified"},
		{"INSERT INTO t (a, b) SELECT x FROM s", "j.sql:1:16: INSERT lists 2 target columns but SELECT has 1 items"},
		{"INSERT INTO t SELECT a FROM", "j.sql:1:28: expected stream name, found end of statement"},
		{"INSERT INTO t SELECT (a FROM s", "j.sql:1:31: unclosed ( in select item"},
		{"MERGE INTO t USING (SELECT * FROM s) ON t.k = s.k WHEN MATCHED THEN DELETE", "j.sql:1:38: a subquery in USING needs an alias: USING (SELECT …) AS s"},
		{"MERGE INTO t USING s ON k = k WHEN MATCHED THEN DELETE", "j.sql:1:25: qualify the columns of ON: t.k = s.k"},
		{"MERGE INTO t USING s ON t.a = t.b WHEN MATCHED THEN DELETE", "j.sql:1:25: MERGE ON must be a conjunction of equalities between a target column and a source column (t.k = s.k [AND t.k2 = s.k2]); both sides name the target"},
		{"MERGE INTO t USING s ON t.a = s.a OR t.b = s.b WHEN MATCHED THEN DELETE", "j.sql:1:35: MERGE ON must be a conjunction of equalities between a target column and a source column (t.k = s.k [AND t.k2 = s.k2]); found 'OR'"},
		{"MERGE INTO t USING s ON t.a = s.a", "j.sql:1:34: expected WHEN [NOT] MATCHED, found end of statement"},
		{"MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN INSERT (a) VALUES (1)", "j.sql:1:53: WHEN MATCHED cannot INSERT (use UPDATE SET or DELETE)"},
		{"MERGE INTO t USING s ON t.a = s.a WHEN NOT MATCHED THEN INSERT VALUES (1)", "j.sql:1:64: list the target columns: INSERT (c1, c2) VALUES (…)"},
		{"MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN UPDATE SET * ", "j.sql:1:64: UPDATE SET * is not supported; list the assignments"},
		{"MERGE INTO t USING t ON t.a = t.a WHEN MATCHED THEN DELETE", "j.sql:1:14: target and source are both named \"t\"; give one an alias"},
		{"INSERT INTO t SELECT * FROM s; SELECT 1", "j.sql:1:32: statement after the consuming statement (at j.sql:1:1); setup statements go before it"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			job, err := ParseSQL("j.sql", []byte(tt.src))
			var got string
			if err != nil {
				got = err.Error()
			} else {
				_, got, _ = strings.Cut(renderJob(job), "\n")
			}
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestYAMLAndSQLSamePlan checks that the YAML and SQL forms of the seed's
// orders pipeline compile to the same stages.
func TestYAMLAndSQLSamePlan(t *testing.T) {
	stages := func(j *plan.Job) string {
		var b strings.Builder
		b.WriteString("source " + j.Source.Stream + "\n")
		if j.Filter != nil {
			b.WriteString("filter " + j.Filter.Text + "\n")
		}
		for _, it := range j.Select {
			b.WriteString("select " + it.Expr.Text + "\n")
		}
		b.WriteString("sink " + j.Sink.Table + " " + string(j.Sink.Mode) + " keys=" + strings.Join(j.Sink.Keys, ",") + "\n")
		return b.String()
	}
	for _, pair := range [][2]string{
		{"testdata/jobs/orders_append.yaml", "testdata/jobs/orders_append.sql"},
		{"testdata/jobs/orders_merge.yaml", "testdata/jobs/orders_merge.sql"},
	} {
		var got [2]string
		for i, f := range pair {
			job, err := ParseJob(f, readFile(t, f))
			if err != nil {
				t.Fatal(err)
			}
			got[i] = stages(job)
			if job.Name == "" {
				t.Errorf("%s: no name", f)
			}
		}
		if got[0] != got[1] {
			t.Errorf("%s and %s differ:\n%s---\n%s", pair[0], pair[1], got[0], got[1])
		}
	}
}
