package dsl

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/pos"
)

// TestJobErrors checks exact positions and messages of job file errors,
// and that each wraps the expected sentinel.
func TestJobErrors(t *testing.T) {
	tests := []struct {
		name, file, src string
		want            []string // the error lines, in order
		is              []error  // sentinels the error must wrap
	}{
		{
			name: "unknown top-level key",
			file: "job.yaml",
			src:  "source: s\nsinks: {table: t}\n",
			want: []string{
				`job.yaml:1:1: missing key "sink": where rows go (sink: {table: t} or sink: {stdout: true})`,
				`job.yaml:2:1: unknown key "sinks" in the job (did you mean "sink"?) (known keys: name, connection, source, filter, select, sink, schedule, timezone)`,
			},
			is: []error{ErrUnknownKey, ErrMissingKey},
		},
		{
			name: "unknown nested key",
			file: "job.yaml",
			src:  "source: s\nsink:\n  table: t\n  mode: append\n  key: [id]\n",
			want: []string{
				`job.yaml:5:3: unknown key "key" in sink (did you mean "keys"?) (known keys: table, stdout, format, mode, keys, on_delete, on_schema_change, connection, dead_letter)`,
			},
			is: []error{ErrUnknownKey},
		},
		{
			name: "unknown key in source mapping",
			file: "job.yml",
			src:  "source:\n  stream: s\n  cols: {a: INT}\nsink: {table: t}\n",
			want: []string{`job.yml:3:3: unknown key "cols" in source (known keys: stream, columns)`},
			is:   []error{ErrUnknownKey},
		},
		{
			name: "bad mode",
			file: "job.yaml",
			src:  "source: s\nsink:\n  table: t\n  mode: 'upsert'\n",
			want: []string{`job.yaml:4:9: unknown mode "upsert" (known: append, overwrite, errorifexists, ignore, merge, history)`},
			is:   []error{ErrBadValue},
		},
		{
			name: "merge without keys",
			file: "job.yaml",
			src:  "source: s\n\nsink:\n  table: t\n  mode: merge\n",
			want: []string{`job.yaml:3:1: mode merge needs keys: the target's key columns (keys: [id])`},
			is:   []error{ErrMissingKey},
		},
		{
			name: "keys without merge",
			file: "job.yaml",
			src:  "source: s\nsink:\n  table: t\n  keys: [id]\n",
			want: []string{`job.yaml:4:3: keys apply only to modes merge and history (the mode is append)`},
			is:   []error{ErrBadValue},
		},
		{
			name: "history without keys",
			file: "job.yaml",
			src:  "source: s\nsink:\n  table: t\n  mode: history\n",
			want: []string{`job.yaml:2:1: mode history needs keys: the target's key columns (keys: [id])`},
			is:   []error{ErrMissingKey},
		},
		{
			name: "on_delete outside merge",
			file: "job.yaml",
			src:  "source: s\nsink:\n  table: t\n  mode: history\n  keys: [id]\n  on_delete: soft\n",
			want: []string{`job.yaml:6:3: on_delete applies only to mode merge (the mode is history)`},
			is:   []error{ErrBadValue},
		},
		{
			name: "bad on_delete",
			file: "job.yaml",
			src:  "source: s\nsink: {table: t, mode: merge, keys: [id], on_delete: purge}\n",
			want: []string{`job.yaml:2:54: unknown on_delete "purge" (known: delete, soft, ignore)`},
			is:   []error{ErrBadValue},
		},
		{
			name: "bad on_schema_change",
			file: "job.yaml",
			src:  "source: s\nsink: {table: t, on_schema_change: Rebuild}\n",
			want: []string{`job.yaml:2:36: unknown on_schema_change "Rebuild" (known: evolve, fail, ignore)`},
			is:   []error{ErrBadValue},
		},
		{
			name: "on_schema_change with select",
			file: "job.yaml",
			src:  "source: s\nselect: [id]\nsink:\n  table: t\n  on_schema_change: fail\n",
			want: []string{`job.yaml:5:21: on_schema_change applies to a job that projects every column of its source table (no select:, or SELECT *); a job that names its columns writes just those`},
			is:   []error{ErrBadValue},
		},
		{
			name: "on_schema_change on stdout",
			file: "job.yaml",
			src:  "source: s\nsink: {stdout: true, on_schema_change: ignore}\n",
			want: []string{`job.yaml:2:22: on_schema_change applies to a target table, not to stdout: true`},
			is:   []error{ErrBadValue},
		},
		{
			name: "on_schema_change on a SQL job with columns",
			file: "job.sql",
			src:  "-- on_schema_change: evolve\nINSERT INTO t SELECT id FROM s",
			want: []string{`job.sql:1:22: on_schema_change applies to a job that projects every column of its source table (no select:, or SELECT *); a job that names its columns writes just those`},
			is:   []error{ErrBadValue},
		},
		{
			name: "bad on_schema_change in SQL",
			file: "job.sql",
			src:  "-- on-schema-change: never\nINSERT INTO t SELECT * FROM s",
			want: []string{`job.sql:1:22: unknown on_schema_change "never" (known: evolve, fail, ignore)`},
			is:   []error{ErrBadValue},
		},
		{
			name: "history_keys on a MERGE",
			file: "job.sql",
			src:  "-- history_keys: id\nMERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)",
			want: []string{`job.sql:1:18: history_keys applies to an INSERT INTO … SELECT job (the consuming statement is MERGE INTO)`},
			is:   []error{ErrBadValue},
		},
		{
			name: "missing source",
			file: "job.yaml",
			src:  "name: j\nsink: {table: t}\n",
			want: []string{`job.yaml:1:1: missing key "source": the table stream the job consumes (source: my_stream)`},
			is:   []error{ErrMissingKey},
		},
		{
			name: "wrong node kind",
			file: "job.yaml",
			src:  "source: [a, b]\nsink: t\n",
			want: []string{
				`job.yaml:1:9: source must be a string, found a list`,
				`job.yaml:2:7: sink must be a mapping, found a string`,
			},
			is: []error{ErrBadValue},
		},
		{
			name: "bad column type in source",
			file: "job.yaml",
			src:  "source:\n  stream: s\n  columns:\n    a: MONEY\nsink: {table: t}\n",
			want: []string{`job.yaml:4:8: column a: unknown type "MONEY" (known: TINYINT, SMALLINT, INT, BIGINT, BOOLEAN, FLOAT, DOUBLE, DECIMAL(p,s), STRING, VARCHAR(n), CHAR(n), DATE, TIMESTAMP, TIMESTAMP_NTZ, BINARY, JSON, UUID)`},
			is:   []error{ErrBadValue, cdc.ErrUnknownType},
		},
		{
			name: "stdout and table",
			file: "job.yaml",
			src:  "source: s\nsink:\n  stdout: true\n  table: t\n",
			want: []string{`job.yaml:4:3: sink has both table and stdout: true; choose one`},
			is:   []error{ErrBadValue},
		},
		{
			name: "two consuming statements",
			file: "job.sql",
			src:  "INSERT INTO a SELECT * FROM s;\n\nINSERT INTO b SELECT * FROM s;\n",
			want: []string{`job.sql:3:1: a second consuming statement (the first is at job.sql:1:1); a job file has exactly one INSERT … SELECT or MERGE`},
			is:   []error{ErrConsuming},
		},
		{
			name: "no consuming statement",
			file: "job.sql",
			src:  "CREATE TABLE t (id INT);",
			want: []string{`job.sql:1:25: no consuming statement: a SQL job needs INSERT INTO t SELECT … FROM stream or MERGE INTO t USING stream …`},
			is:   []error{ErrConsuming},
		},
		{
			name: "bad type in CREATE TABLE setup",
			file: "job.sql",
			src:  "CREATE TABLE t (id INT,\n  x STRIN);\nINSERT INTO t SELECT * FROM s",
			want: []string{`job.sql:2:5: unknown type "STRIN" (known: TINYINT, SMALLINT, INT, BIGINT, BOOLEAN, FLOAT, DOUBLE, DECIMAL(p,s), STRING, VARCHAR(n), CHAR(n), DATE, TIMESTAMP, TIMESTAMP_NTZ, BINARY, JSON, UUID)`},
			is:   []error{ErrBadValue, cdc.ErrUnknownType},
		},
		{
			name: "TIMESTAMP AS OF in setup",
			file: "job.sql",
			src:  "CREATE TABLE STREAM s ON TABLE t\n  TIMESTAMP AS OF '2024-01-01';\nINSERT INTO x SELECT * FROM s",
			want: []string{`job.sql:2:3: TIMESTAMP AS OF is not supported yet; the stream starts at the table's current version`},
			is:   []error{ErrNotSupported},
		},
		{
			name: "several errors reported together",
			file: "job.sql",
			src: "-- name: a b\n" +
				"CREATE TABLE t (a FOO, b BAR);\n" +
				"CREATE TABLE STREAM s ON TABLE t TIMESTAMP AS OF 1;\n" +
				"MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN DELETE;\n" +
				"INSERT INTO u SELECT * FROM s;\n",
			want: []string{
				`job.sql:1:10: job name "a b" may hold only letters, digits, '_', '-' and '.', and must start with a letter, digit or '_'`,
				`job.sql:2:19: unknown type "FOO" (known: TINYINT, SMALLINT, INT, BIGINT, BOOLEAN, FLOAT, DOUBLE, DECIMAL(p,s), STRING, VARCHAR(n), CHAR(n), DATE, TIMESTAMP, TIMESTAMP_NTZ, BINARY, JSON, UUID)`,
				`job.sql:2:26: unknown type "BAR" (known: TINYINT, SMALLINT, INT, BIGINT, BOOLEAN, FLOAT, DOUBLE, DECIMAL(p,s), STRING, VARCHAR(n), CHAR(n), DATE, TIMESTAMP, TIMESTAMP_NTZ, BINARY, JSON, UUID)`,
				`job.sql:3:34: TIMESTAMP AS OF is not supported yet; the stream starts at the table's current version`,
				`job.sql:5:1: a second consuming statement (the first is at job.sql:4:1); a job file has exactly one INSERT … SELECT or MERGE`,
			},
			is: []error{ErrBadValue, ErrNotSupported, ErrConsuming},
		},
		{
			name: "several YAML errors reported together",
			file: "job.yaml",
			src:  "name: 'x y'\nsource: s\nselect: []\nsink:\n  table: t\n  mode: merge\n  keys: id\n  format: jsonl\nextra: 1\n",
			want: []string{
				`job.yaml:1:7: job name "x y" may hold only letters, digits, '_', '-' and '.', and must start with a letter, digit or '_'`,
				`job.yaml:3:9: select is empty; leave it out to select every column`,
				`job.yaml:8:3: format applies only to stdout: true`,
				`job.yaml:9:1: unknown key "extra" in the job (known keys: name, connection, source, filter, select, sink, schedule, timezone)`,
			},
			is: []error{ErrBadValue, ErrUnknownKey},
		},
		{
			name: "MERGE ON not an equality",
			file: "job.sql",
			src:  "MERGE INTO t USING s ON t.id > s.id WHEN MATCHED THEN DELETE",
			want: []string{`job.sql:1:30: MERGE ON must be a conjunction of equalities between a target column and a source column (t.k = s.k [AND t.k2 = s.k2]); found '>'`},
			is:   []error{ErrNotSupported},
		},
		{
			name: "YAML syntax error",
			file: "job.yaml",
			src:  "source: s\nsink:\n  table: t\n mode: x\n",
			want: []string{`job.yaml:4:2: YAML: value is not allowed in this context`},
			is:   []error{ErrSyntax},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, err := ParseJob(tt.file, []byte(tt.src))
			if err == nil {
				t.Fatalf("no error; job:\n%s", renderJob(job))
			}
			if job != nil {
				t.Errorf("job is not nil on error")
			}
			var list pos.List
			if !errors.As(err, &list) {
				t.Fatalf("error %T is not a pos.List", err)
			}
			if got := strings.Split(err.Error(), "\n"); !equalLines(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for _, s := range tt.is {
				if !errors.Is(err, s) {
					t.Errorf("error does not wrap %v", s)
				}
			}
		})
	}
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
