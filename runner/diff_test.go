package runner_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/runner"
)

// diffSetup is the source every diff test starts from: five rows with a
// NULL name (4), an empty one (5), DECIMAL and TIMESTAMP values.
const diffSetup = `
CREATE TABLE src (id INT, name STRING, amount DECIMAL(10,2), ts TIMESTAMP, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM src_s ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
INSERT INTO src VALUES
  (1, 'ann', 1.50, '2024-01-15 10:00:00.5+00:00'),
  (2, 'bob', 2000.00, '2024-01-15 10:00:00+00:00'),
  (3, 'cy', -7.25, NULL),
  (4, NULL, 0.00, '2024-02-29 23:59:59.999999+00:00'),
  (5, '', 5.00, '2024-03-01 00:00:00+00:00');
`

// diffOutcome is what a diff should find, written from the test's own
// mutation (not from the code under test).
type diffOutcome struct {
	missing, extra, different int64
	examples                  []string // "kind key [column source→target …]", sorted as DiffResult sorts them
	pending                   int64
}

func exampleText(ex runner.DiffExample) string {
	s := ex.Kind
	for _, k := range ex.Key {
		s += " " + diffText(k)
	}
	for _, c := range ex.Columns {
		s += " " + c.Column + ":" + diffText(c.Source) + "→" + diffText(c.Target)
	}
	return s
}

func diffText(p *string) string {
	if p == nil {
		return "NULL"
	}
	return "'" + *p + "'"
}

func (e *env) diff(j string, limit int) (*runner.DiffResult, error) {
	e.t.Helper()
	job := e.job("diff.yaml", j)
	prep, err := e.r.Plan(context.Background(), job)
	if err != nil {
		e.t.Fatal(err)
	}
	// Bounded: a diff waiting for a read connection it holds itself
	// fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return e.r.Diff(ctx, prep, runner.DiffOptions{Limit: limit})
}

func checkDiff(t *testing.T, res *runner.DiffResult, want diffOutcome) {
	t.Helper()
	if res.Missing != want.missing || res.Extra != want.extra || res.Different != want.different {
		t.Errorf("missing/extra/different = %d/%d/%d, want %d/%d/%d", res.Missing, res.Extra, res.Different, want.missing, want.extra, want.different)
	}
	var got []string
	for _, ex := range res.Examples {
		got = append(got, exampleText(ex))
	}
	if !slices.Equal(got, want.examples) {
		t.Errorf("examples = %q, want %q", got, want.examples)
	}
	if eq := want.missing+want.extra+want.different == 0; res.Equal() != eq {
		t.Errorf("Equal() = %v, want %v", res.Equal(), eq)
	} else if eq && res.BucketsDiffer != 0 {
		// Equal rows must hash equally in both databases: otherwise every
		// diff reads the rows (correct, but slow).
		t.Errorf("equal, but %d of %d buckets hashed differently", res.BucketsDiffer, res.Buckets)
	}
	if res.Pending.Total != want.pending {
		t.Errorf("pending = %d (%v), want %d", res.Pending.Total, res.Pending.Changes, want.pending)
	}
}

// TestDiffMerge compares a merge job's target with its source across every
// pair of backends, after the target (or the source) is changed behind the
// job's back.
func TestDiffMerge(t *testing.T) {
	pairs := []struct{ name, src, tgt string }{
		{"sqlite to sqlite", "", "tgt.db"},
		// Source and target in one file: both sides are read at once, on
		// the file's one read connection (sqlitex.DefaultReaders).
		{"sqlite, one file", "", "src.db"},
		{"postgres to postgres", "pg", "pg"},
		{"sqlite to postgres", "", "pg"},
		{"postgres to sqlite", "pg", "tgt.db"},
	}
	cases := []struct {
		name   string
		target string // DDL (sluice's dialect) creating the target before the run; "" lets the run create it
		change string // statements on the target after the run
		source string // statements on the source after the run
		want   diffOutcome
	}{
		{name: "equal", want: diffOutcome{}},
		{name: "one row missing", change: "DELETE FROM tgt WHERE id = 3",
			want: diffOutcome{missing: 1, examples: []string{"missing '3'"}}},
		{name: "one row extra", change: "INSERT INTO tgt VALUES (9, 'zed', 9.00, NULL)",
			want: diffOutcome{extra: 1, examples: []string{"extra '9'"}}},
		{name: "one column different", change: "UPDATE tgt SET name = 'bea' WHERE id = 2",
			want: diffOutcome{different: 1, examples: []string{"different '2' name:'bob'→'bea'"}}},
		{name: "NULL vs empty string", change: "UPDATE tgt SET name = '' WHERE id = 4; UPDATE tgt SET name = NULL WHERE id = 5",
			want: diffOutcome{different: 2, examples: []string{"different '4' name:NULL→''", "different '5' name:''→NULL"}}},
		{name: "DECIMAL 1.50 vs 1.5 is equal",
			target: "CREATE TABLE tgt (id INT, name STRING, amount DECIMAL(12,4), ts TIMESTAMP, PRIMARY KEY (id))",
			change: "UPDATE tgt SET amount = 1.5 WHERE id = 1", want: diffOutcome{}},
		{name: "DECIMAL by number", change: "UPDATE tgt SET amount = 1.51 WHERE id = 1",
			want: diffOutcome{different: 1, examples: []string{"different '1' amount:'1.5'→'1.51'"}}},
		{name: "the same instant in another zone is equal",
			change: "UPDATE tgt SET ts = '2024-01-15 11:00:00.5+01:00' WHERE id = 1; UPDATE tgt SET ts = '2024-01-15 05:00:00-05:00' WHERE id = 2",
			want:   diffOutcome{}},
		{name: "another instant differs", change: "UPDATE tgt SET ts = '2024-01-15 10:00:00.5+01:00' WHERE id = 1",
			want: diffOutcome{different: 1, examples: []string{"different '1' ts:'2024-01-15 10:00:00.5+00:00'→'2024-01-15 09:00:00.5+00:00'"}}},
		{name: "pending changes are reported", source: "UPDATE src SET name = 'bo' WHERE id = 2; DELETE FROM src WHERE id = 5",
			want: diffOutcome{different: 1, extra: 1, examples: []string{"different '2' name:'bo'→'bob'", "extra '5'"}, pending: 3}},
		{name: "several differences, limited examples",
			change: "DELETE FROM tgt WHERE id IN (1, 2); UPDATE tgt SET amount = 0 WHERE id = 3; INSERT INTO tgt VALUES (7, 'x', 1, NULL), (8, 'y', 1, NULL)",
			want:   diffOutcome{missing: 2, extra: 2, different: 1, examples: []string{"different '3' amount:'-7.25'→'0'", "extra '7'", "extra '8'", "missing '1'"}}},
	}
	pg := pgtest.URL(t)
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					e := newEnv(t)
					src, tgt := "", e.conn(p.tgt)
					var db string
					if p.src == "pg" || p.tgt == "pg" {
						db = pgtest.NewDatabase(t)
					}
					if p.src == "pg" {
						src = db
					}
					if p.tgt == "pg" {
						tgt = db
					}
					_ = pg
					e.sql(src, diffSetup)
					if tc.target != "" {
						e.sql(tgt, tc.target)
					}
					j := "connection: '" + orDefault(src, e.conn("src.db")) + "'\nsource: src_s\nsink: {table: tgt, mode: merge, keys: [id], connection: '" + tgt + "'}\n"
					if _, err := e.run(e.job("diff.yaml", j)); err != nil {
						t.Fatal(err)
					}
					if tc.change != "" {
						e.sql(tgt, tc.change)
					}
					if tc.source != "" {
						e.sql(src, tc.source)
					}
					res, err := e.diff(j, 4)
					if err != nil {
						t.Fatal(err)
					}
					if res.SourceRows == 0 || res.TargetRows == 0 {
						t.Errorf("rows compared: source %d, target %d", res.SourceRows, res.TargetRows)
					}
					checkDiff(t, res, tc.want)
				})
			}
		})
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestDiffHistoryAndSoftDelete: a history target is compared by its current
// versions, a soft-delete target by its rows without __deleted_at; a
// filter on values applies to the table's rows, one on __change_type does
// not.
func TestDiffHistoryAndSoftDelete(t *testing.T) {
	for _, tc := range []struct {
		name, sink, filter string
		change             string // on the target, after the runs
		want               diffOutcome
	}{
		{name: "history equal", sink: "mode: history, keys: [id]"},
		{name: "history: a closed current version is missing", sink: "mode: history, keys: [id]",
			change: "UPDATE tgt SET __valid_to = __valid_from WHERE id = 1 AND __valid_to IS NULL",
			want:   diffOutcome{missing: 1, examples: []string{"missing '1'"}}},
		{name: "history: an old version changed is not compared", sink: "mode: history, keys: [id]",
			change: "UPDATE tgt SET name = 'old' WHERE id = 2 AND __valid_to IS NOT NULL"},
		{name: "soft delete equal", sink: "mode: merge, keys: [id], on_delete: soft"},
		{name: "soft delete: a row marked deleted is missing", sink: "mode: merge, keys: [id], on_delete: soft",
			change: "UPDATE tgt SET __deleted_at = '2024-01-01 00:00:00+00:00' WHERE id = 1",
			want:   diffOutcome{missing: 1, examples: []string{"missing '1'"}}},
		{name: "soft delete: a deleted row brought back is extra", sink: "mode: merge, keys: [id], on_delete: soft",
			change: "UPDATE tgt SET __deleted_at = NULL WHERE id = 5",
			want:   diffOutcome{extra: 1, examples: []string{"extra '5'"}}},
		{name: "filter on values and change types", sink: "mode: merge, keys: [id]",
			filter: "`__change_type` IN ('INSERT', 'UPDATE_AFTER', 'DELETE') AND amount >= 1"},
		{name: "filter on values: a row it drops is extra", sink: "mode: merge, keys: [id]",
			filter: "amount >= 1", change: "INSERT INTO tgt VALUES (3, 'cy', -7.25, NULL)",
			want: diffOutcome{extra: 1, examples: []string{"extra '3'"}}},
	} {
		for _, be := range []string{"sqlite", "postgres"} {
			t.Run(be+"/"+tc.name, func(t *testing.T) {
				e := newEnv(t)
				conn := e.conn("src.db")
				if be == "postgres" {
					conn = pgtest.NewDatabase(t)
				}
				e.sql(conn, diffSetup)
				j := "connection: '" + conn + "'\nsource: src_s\nsink: {table: tgt, " + tc.sink + ", connection: '" + e.conn("tgt.db") + "'}\n"
				if tc.filter != "" {
					j += "filter: \"" + tc.filter + "\"\n"
				}
				if _, err := e.run(e.job("diff.yaml", j)); err != nil {
					t.Fatal(err)
				}
				e.sql(conn, "UPDATE src SET name = 'bobby' WHERE id = 2; DELETE FROM src WHERE id = 5; INSERT INTO src VALUES (6, 'di', 6.00, NULL)")
				if _, err := e.run(e.job("diff.yaml", j)); err != nil {
					t.Fatal(err)
				}
				if tc.change != "" {
					e.sql(e.conn("tgt.db"), tc.change)
				}
				res, err := e.diff(j, 10)
				if err != nil {
					t.Fatal(err)
				}
				checkDiff(t, res, tc.want)
			})
		}
	}
}

// TestDiffRefusals: jobs whose target need not equal the source are
// refused with the reason.
func TestDiffRefusals(t *testing.T) {
	for _, tc := range []struct{ name, job, want string }{
		{"append", "source: src_s\nsink: {table: tgt, mode: append}\n", "mode append writes one target row per change"},
		{"commit timestamp filter", "source: src_s\nfilter: \"`__commit_timestamp` > '2020-01-01 00:00:00+00:00'\"\nsink: {table: tgt, mode: merge, keys: [id]}\n", "__commit_timestamp"},
		{"missing target", "source: src_s\nsink: {table: nothere, mode: merge, keys: [id]}\n", "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.sql("", diffSetup+"CREATE TABLE tgt (id INT, name STRING, amount DECIMAL(10,2), ts TIMESTAMP, PRIMARY KEY (id));")
			_, err := e.diff(tc.job, 10)
			if !errors.Is(err, runner.ErrNoDiff) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrNoDiff with %q", err, tc.want)
			}
		})
	}
}

// TestDiffRefusesJobsAcrossBackends: a SQL MERGE INTO job, and a key whose
// text SQLite and PostgreSQL write differently (DOUBLE) across the two,
// are refused with the reason.
func TestDiffRefusesJobsAcrossBackends(t *testing.T) {
	e := newEnv(t)
	pg := pgtest.NewDatabase(t)
	e.sql("", diffSetup+`CREATE TABLE f (k DOUBLE, v STRING, PRIMARY KEY (k));
ALTER TABLE f SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM f_s ON TABLE f WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
INSERT INTO f VALUES (0.1, 'a'), (1e300, 'b');`)
	j := "source: f_s\nsink: {table: f_copy, mode: merge, keys: [k], connection: '" + pg + "'}\n"
	if _, err := e.run(e.job("diff.yaml", j)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.diff(j, 10); !errors.Is(err, runner.ErrNoDiff) || !strings.Contains(err.Error(), "key column k is DOUBLE") {
		t.Errorf("DOUBLE key across backends: err = %v", err)
	}
	e.sql("", "CREATE TABLE tgt (id INT, name STRING, amount DECIMAL(10,2), ts TIMESTAMP, PRIMARY KEY (id))")
	job, err := dsl.ParseJob("m.sql", []byte("MERGE INTO tgt AS t USING (SELECT id, name FROM src_s) AS s ON t.id = s.id\n"+
		"WHEN MATCHED THEN UPDATE SET t.name = s.name WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name);\n"))
	if err != nil {
		t.Fatal(err)
	}
	prep, err := e.r.Plan(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.Diff(context.Background(), prep, runner.DiffOptions{}); !errors.Is(err, runner.ErrNoDiff) || !strings.Contains(err.Error(), "MERGE INTO") {
		t.Errorf("MERGE INTO job: err = %v", err)
	}
}

// TestDiffSkipsMetadataColumns: a projected column computed from the
// stream's metadata is not compared, and says so.
func TestDiffSkipsMetadataColumns(t *testing.T) {
	e := newEnv(t)
	e.sql("", diffSetup)
	j := "source: src_s\nselect: [id, name, \"`__commit_timestamp` AS changed_at\"]\nsink: {table: tgt, mode: merge, keys: [id], connection: '" + e.conn("tgt.db") + "'}\n"
	if _, err := e.run(e.job("diff.yaml", j)); err != nil {
		t.Fatal(err)
	}
	res, err := e.diff(j, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Equal() || !slices.Equal(res.Skipped, []string{"changed_at"}) || !slices.Equal(res.Columns, []string{"id", "name"}) {
		t.Errorf("equal %v, skipped %v, columns %v", res.Equal(), res.Skipped, res.Columns)
	}
	_ = cdc.OpInsert
}

// TestDiffBinary: a BINARY column that differs is shown as its bytes in
// hex ('0xdeadbeef'), not as the hex of the "0x…" text the databases
// return (a fresh user saw 0x30786465… for \xdeadbeef), on every pair of
// backends; equal bytes are equal.
func TestDiffBinary(t *testing.T) {
	for _, p := range []struct{ name, src, tgt string }{
		{"sqlite to sqlite", "", "tgt.db"},
		// Source and target in one file: both sides are read at once, on
		// the file's one read connection (sqlitex.DefaultReaders).
		{"sqlite, one file", "", "src.db"},
		{"postgres to postgres", "pg", "pg"},
		{"sqlite to postgres", "", "pg"},
		{"postgres to sqlite", "pg", "tgt.db"},
	} {
		t.Run(p.name, func(t *testing.T) {
			e := newEnv(t)
			src, tgt := "", e.conn(p.tgt)
			if p.src == "pg" || p.tgt == "pg" {
				db := pgtest.NewDatabase(t)
				if p.src == "pg" {
					src = db
				}
				if p.tgt == "pg" {
					tgt = db
				}
			}
			e.sql(src, `CREATE TABLE src (id INT, b BINARY, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM src_s ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
INSERT INTO src VALUES (1, X'deadbeef'), (2, X'00ff10'), (3, X'');`)
			j := "connection: '" + orDefault(src, e.conn("src.db")) + "'\nsource: src_s\nsink: {table: tgt, mode: merge, keys: [id], connection: '" + tgt + "'}\n"
			if _, err := e.run(e.job("diff.yaml", j)); err != nil {
				t.Fatal(err)
			}
			res, err := e.diff(j, 4)
			if err != nil {
				t.Fatal(err)
			}
			checkDiff(t, res, diffOutcome{})
			e.sql(tgt, "UPDATE tgt SET b = X'dead' WHERE id = 1")
			if res, err = e.diff(j, 4); err != nil {
				t.Fatal(err)
			}
			checkDiff(t, res, diffOutcome{different: 1, examples: []string{"different '1' b:'0xdeadbeef'→'0xdead'"}})
		})
	}
}
