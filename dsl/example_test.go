package dsl_test

import (
	"fmt"

	"github.com/sluicedata/sluice/dsl"
)

func ExampleParseJob() {
	src := []byte(`name: orders_sync
source: orders_stream
filter: "` + "`__change_type`" + ` IN ('INSERT', 'UPDATE_AFTER')"
select: [id, "upper(name) AS name_u"]
sink:
  table: orders_target
  mode: merge
  keys: [id]
`)
	job, err := dsl.ParseJob("jobs/orders_sync.yaml", src)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Name, "reads", job.Source.Stream)
	fmt.Printf("filter %s at %s\n", job.Filter.Text, job.Filter.Pos)
	for _, it := range job.Select {
		fmt.Printf("select %s at %s\n", it.Expr.Text, it.Expr.Pos)
	}
	fmt.Println("sink", job.Sink.Table, job.Sink.Mode, job.Sink.Keys)

	// Errors carry file:line:col, all of a file at once.
	_, err = dsl.ParseJob("jobs/bad.yaml", []byte("source: s\nsink:\n  table: t\n  mode: upsert\n  key: [id]\n"))
	fmt.Println(err)
	// Output:
	// orders_sync reads orders_stream
	// filter `__change_type` IN ('INSERT', 'UPDATE_AFTER') at jobs/orders_sync.yaml:3:10
	// select id at jobs/orders_sync.yaml:4:10
	// select upper(name) AS name_u at jobs/orders_sync.yaml:4:15
	// sink orders_target merge [id]
	// jobs/bad.yaml:4:9: unknown mode "upsert" (known: append, overwrite, errorifexists, ignore, merge, history)
	// jobs/bad.yaml:5:3: unknown key "key" in sink (did you mean "keys"?) (known keys: table, stdout, format, mode, keys, on_delete, on_schema_change, connection, dead_letter)
}

func ExampleParseJob_sql() {
	src := []byte(`-- name: orders_merge
MERGE INTO orders_target AS t USING (SELECT * FROM orders_stream WHERE ` + "`__change_type`" + ` IN ('INSERT','UPDATE_AFTER')) AS s ON t.id = s.id
WHEN MATCHED THEN UPDATE SET t.name = s.name, t.amount = s.amount, t.status = s.status
WHEN NOT MATCHED THEN INSERT (id, name, amount, status) VALUES (s.id, s.name, s.amount, s.status);
`)
	job, err := dsl.ParseJob("orders_merge.sql", src)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Name, job.Source.Stream, job.Filter.Text)
	fmt.Println(job.Sink.Table, job.Sink.Mode, job.Sink.Keys)
	for _, c := range job.Sink.Merge.Clauses {
		fmt.Println(c.Matched, c.Action, len(c.Set), c.InsertColumns)
	}
	// Output:
	// orders_merge orders_stream `__change_type` IN ('INSERT','UPDATE_AFTER')
	// orders_target merge [id]
	// true UPDATE 3 []
	// false INSERT 0 [id name amount status]
}

func ExampleParseStatements() {
	sts, err := dsl.ParseStatements("setup.sql", `
CREATE TABLE IF NOT EXISTS orders (id INT, name STRING, amount DECIMAL(10,2), status STRING, PRIMARY KEY (id));
ALTER TABLE orders SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM orders_stream ON TABLE orders WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
UPDATE orders SET amount = 1500.00 WHERE id = 1;
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range sts {
		switch s := st.(type) {
		case *dsl.CreateTable:
			fmt.Println(s.Position(), "create table", s.Table, s.Schema.Names(), "key", s.Schema.Key)
		case *dsl.SetChangeTracking:
			fmt.Println(s.Position(), "change tracking on", s.Table, s.Enabled)
		case *dsl.CreateStream:
			fmt.Println(s.Position(), "create stream", s.Stream, "on", s.Table, s.Mode)
		case *dsl.DML:
			fmt.Println(s.Position(), s.Kind, s.SQL())
		}
	}

	_, err = dsl.ParseStatements("bad.sql", "CREATE TABLE t (id INT, x STRIN);\nCREATE TABLE STREAM s ON TABLE t TIMESTAMP AS OF '2024-01-01';")
	fmt.Println(err)
	// Output:
	// setup.sql:2:1 create table orders [id name amount status] key [id]
	// setup.sql:3:1 change tracking on orders true
	// setup.sql:4:1 create stream orders_stream on orders STANDARD
	// setup.sql:5:1 UPDATE UPDATE orders SET amount = 1500.00 WHERE id = 1
	// bad.sql:1:27: unknown type "STRIN" (known: TINYINT, SMALLINT, INT, BIGINT, BOOLEAN, FLOAT, DOUBLE, DECIMAL(p,s), STRING, VARCHAR(n), CHAR(n), DATE, TIMESTAMP, TIMESTAMP_NTZ, BINARY, JSON, UUID)
	// bad.sql:2:34: TIMESTAMP AS OF is not supported yet; the stream starts at the table's current version
}

func ExampleExpandEnv() {
	lookup := func(name string) (string, bool) {
		if name == "PG_HOST" {
			return "db.internal", true
		}
		return "", false
	}
	s, err := dsl.ExpandEnv("postgres://app@${PG_HOST}/${PG_DB:-orders}", lookup)
	fmt.Println(s, err)
	_, err = dsl.ExpandEnv("${PG_URL}", lookup)
	fmt.Println(err)
	// Output:
	// postgres://app@db.internal/orders <nil>
	// missing environment variable PG_URL (set it, or write ${PG_URL:-default})
}
