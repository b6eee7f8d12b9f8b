package runner_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	_ "github.com/sluicedata/sluice/sinks/stdout"
	_ "github.com/sluicedata/sluice/sources/sqlite"
)

// env is one test's databases and runner.
type env struct {
	t   *testing.T
	dir string
	r   *runner.Runner
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: "sqlite:" + filepath.Join(dir, "src.db"), BatchSize: 2}
	t.Cleanup(func() { r.Close() })
	return &env{t: t, dir: dir, r: r}
}

// conn returns the URL of a database file in the test's directory.
func (e *env) conn(name string) string { return "sqlite:" + filepath.Join(e.dir, name) }

// sql runs statements on conn ("" = the default) and returns the last
// result set's rows rendered as text.
func (e *env) sql(conn, text string) [][]string {
	e.t.Helper()
	b, err := e.r.Backend(runner.WithCreate(context.Background(), runner.CreateAll), conn) // as sluice sql
	if err != nil {
		e.t.Fatal(err)
	}
	stmts, err := dsl.ParseStatements("test.sql", text)
	if err != nil {
		e.t.Fatal(err)
	}
	var out [][]string
	for _, st := range stmts {
		rs, err := b.(runner.Executor).Exec(context.Background(), st)
		if err != nil {
			e.t.Fatalf("%s: %v", st.SQL(), err)
		}
		if rs != nil && rs.Columns != nil {
			out = nil
			for _, row := range rs.Rows {
				var cells []string
				for i, v := range row {
					cells = append(cells, cdc.FormatValue(v, rs.Columns[i].Type))
				}
				out = append(out, cells)
			}
		}
	}
	return out
}

func (e *env) job(name, src string) *plan.Job {
	e.t.Helper()
	j, err := dsl.ParseJob(name, []byte(src))
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

func (e *env) run(j *plan.Job) (*runner.Result, error) {
	return e.r.RunJob(context.Background(), j)
}

// pending returns the stream's pending changes as "OP id" strings.
func (e *env) pending(stream string) []string {
	e.t.Helper()
	b, _ := e.r.Backend(context.Background(), "")
	src := b.(runner.Source)
	info, err := src.Stream(context.Background(), plan.Source{Stream: stream})
	if err != nil {
		e.t.Fatal(err)
	}
	rd, err := src.Changes(context.Background(), info, info.Offset, runner.ReadOptions{BatchSize: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	defer rd.Close()
	var out []string
	for {
		batch, err := rd.Next(context.Background())
		if err != nil {
			break
		}
		for _, ch := range batch {
			out = append(out, ch.Op.String()+" "+cdc.FormatValue(ch.Row[0], cdc.Type{}))
		}
	}
	return out
}

const seedSetup = `
CREATE TABLE orders (id INT, name STRING, amount DECIMAL(10,2), status STRING, PRIMARY KEY (id));
ALTER TABLE orders SET PROPERTIES ('change_tracking' = 'true');
INSERT INTO orders VALUES (1, 'Alice', 1000.00, 'active'), (2, 'Bob', 2000.00, 'active'), (3, 'Carol', 500.00, 'active');
CREATE TABLE STREAM orders_stream ON TABLE orders WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
`

const seedChanges = `
INSERT INTO orders VALUES (4, 'Dave', 3000.00, 'active');
UPDATE orders SET amount = 1500.00 WHERE id = 1;
DELETE FROM orders WHERE id = 3;
`

func TestSeedAppendSameDatabase(t *testing.T) {
	e := newEnv(t)
	e.sql("", seedSetup+seedChanges)
	j := e.job("append.yaml", `
source: orders_stream
filter: "`+"`__change_type`"+` IN ('INSERT', 'UPDATE_AFTER')"
select: [id, name, amount, status]
sink: {table: orders_target, mode: append}
`)
	res, err := e.run(j)
	if err != nil {
		t.Fatal(err)
	}
	want := map[cdc.Op]int64{cdc.OpInsert: 1, cdc.OpUpdateBefore: 1, cdc.OpUpdateAfter: 1, cdc.OpDelete: 1}
	for op, n := range want {
		if res.Stats.Read[op] != n {
			t.Errorf("read %s = %d, want %d (all: %v)", op, res.Stats.Read[op], n, res.Stats.Read)
		}
	}
	got := e.sql("", "SELECT id, name, amount, status FROM orders_target ORDER BY id")
	wantRows := [][]string{{"1", "Alice", "1500.00", "active"}, {"4", "Dave", "3000.00", "active"}}
	if !equalRows(got, wantRows) {
		t.Fatalf("target = %v, want %v", got, wantRows)
	}
	if p := e.pending("orders_stream"); len(p) != 0 {
		t.Fatalf("after the run the stream still has %v pending (filtered changes must be consumed)", p)
	}
	res, err = e.run(j)
	if err != nil {
		t.Fatal(err)
	}
	if n := sum(res.Stats.Read); n != 0 {
		t.Fatalf("second run read %d changes, want 0", n)
	}
	if got := e.sql("", "SELECT count(*) FROM orders_target"); got[0][0] != "2" {
		t.Fatalf("second run changed the target: %v rows", got)
	}
}

func TestCrossDatabaseMergeExactlyOnce(t *testing.T) {
	e := newEnv(t)
	e.sql("", seedSetup+`CREATE TABLE STREAM full_stream ON TABLE orders WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');`)
	sink := e.conn("sink.db")
	j := e.job("merge.yaml", `
source: full_stream
sink: {table: replica, mode: merge, keys: [id], connection: `+sink+`}
`)
	if _, err := e.run(j); err != nil {
		t.Fatal(err)
	}
	e.sql("", seedChanges)
	if _, err := e.run(j); err != nil {
		t.Fatal(err)
	}
	got := e.sql(sink, "SELECT id, name, amount FROM replica ORDER BY id")
	want := e.sql("", "SELECT id, name, amount FROM orders ORDER BY id")
	if !equalRows(got, want) {
		t.Fatalf("replica = %v, source = %v", got, want)
	}
}

func TestFailedSinkWriteMovesNoOffset(t *testing.T) {
	e := newEnv(t)
	e.sql("", seedSetup+seedChanges)
	sink := e.conn("sink.db")
	// The target's amount column is INT: 'Alice' cannot be stored there.
	e.sql(sink, "CREATE TABLE bad_target (id INT, amount INT, PRIMARY KEY (id))")
	j := e.job("bad.yaml", `
source: orders_stream
select: [id, "name AS amount"]
sink: {table: bad_target, mode: append, connection: `+sink+`}
`)
	before := e.pending("orders_stream")
	_, err := e.run(j)
	if err == nil {
		t.Fatal("run succeeded, want a type error")
	}
	if !errors.Is(err, cdc.ErrBadValue) || !strings.Contains(err.Error(), `"amount"`) {
		t.Fatalf("error %q should be a value error naming column amount", err)
	}
	after := e.pending("orders_stream")
	if strings.Join(before, ",") != strings.Join(after, ",") || len(after) != 4 {
		t.Fatalf("pending changes before %v, after %v: the failed run must move nothing", before, after)
	}
	if got := e.sql(sink, "SELECT count(*) FROM bad_target"); got[0][0] != "0" {
		t.Fatalf("failed run left %s rows in the target", got[0][0])
	}
}

func TestPlanPrintsWarningForDroppedChanges(t *testing.T) {
	e := newEnv(t)
	e.sql("", seedSetup)
	j := e.job("append.yaml", `
source: orders_stream
filter: "`+"`__change_type`"+` = 'INSERT'"
sink: {table: t, mode: append}
`)
	p, err := e.r.Plan(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := plan.Format(&buf, p.Plan); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"UPDATE_BEFORE, UPDATE_AFTER, DELETE", "consumes them for good"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
}

// TestPlanWarnsForValueFilters: a filter on values drops changes by their
// values, which a run consumes for good (DESIGN.md: `plan` says so); a
// filter on __change_type alone gets the warning naming the change types
// instead.
func TestPlanWarnsForValueFilters(t *testing.T) {
	for _, tc := range []struct {
		name, filter, mode string
		want, wantNot      []string
	}{
		{"value, merge", "amount >= 100", "merge keys: [id]", []string{"the filter (amount >= 100) drops the changes it does not keep", "keeps its earlier values in the target"}, nil},
		{"value, append", "amount >= 100 AND " + "`__change_type`" + " <> 'DELETE'", "append", []string{"drops the changes it does not keep"}, []string{"earlier values"}},
		{"change type only", "`__change_type`" + " IN ('INSERT', 'UPDATE_AFTER')", "append", nil, []string{"drops the changes it does not keep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.sql("", seedSetup)
			j := e.job("j.yaml", "source: orders_stream\nfilter: \""+tc.filter+"\"\nsink: {table: t, mode: "+strings.Replace(tc.mode, " keys", ", keys", 1)+"}\n")
			p, err := e.r.Plan(context.Background(), j)
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(p.Plan.Warnings, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("warnings lack %q:\n%s", w, all)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(all, w) {
					t.Errorf("warnings should not say %q:\n%s", w, all)
				}
			}
		})
	}
}

func TestUnknownColumnHasPosition(t *testing.T) {
	e := newEnv(t)
	e.sql("", seedSetup)
	j := e.job("jobs/x.yaml", "source: orders_stream\nselect: [id, nmae]\nsink: {table: t}\n")
	_, err := e.r.Plan(context.Background(), j)
	if err == nil || !strings.Contains(err.Error(), "jobs/x.yaml:2:14") || !strings.Contains(err.Error(), "nmae") {
		t.Fatalf("error = %v, want one at jobs/x.yaml:2:14 naming nmae", err)
	}
}

func TestUnknownScheme(t *testing.T) {
	r := &runner.Runner{Conn: "mysql://x"}
	_, err := r.Backend(context.Background(), "")
	if !errors.Is(err, runner.ErrUnknownScheme) || !strings.Contains(err.Error(), "sqlite") {
		t.Fatalf("err = %v, want ErrUnknownScheme listing sqlite", err)
	}
}

func equalRows(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.Join(a[i], "|") != strings.Join(b[i], "|") {
			return false
		}
	}
	return true
}

func sum(m map[cdc.Op]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func TestSharedStreamCheckpointBehindIsRefused(t *testing.T) {
	e := newEnv(t)
	e.sql("", seedSetup)
	jobFor := func(name string) *plan.Job {
		return e.job(name+".yaml", "name: "+name+"\nsource: orders_stream\nsink: {table: copy, connection: "+e.conn(name+".db")+"}\n")
	}
	a, b := jobFor("a"), jobFor("b")
	for _, j := range []*plan.Job{a, b} {
		if _, err := e.run(j); err != nil {
			t.Fatal(err)
		}
	}
	e.sql("", seedChanges)
	if _, err := e.run(a); err != nil {
		t.Fatal(err)
	}
	// b's checkpoint is now behind the stream's offset: a consumed the
	// changes b never saw. b must fail loudly, not skip them.
	_, err := e.run(b)
	if err == nil || !strings.Contains(err.Error(), "behind its offset") {
		t.Fatalf("err = %v, want a refusal to read behind the stream's offset", err)
	}
	if got := e.sql(e.conn("b.db"), "SELECT count(*) FROM copy"); got[0][0] != "0" {
		t.Fatalf("b's sink got %s rows", got[0][0])
	}
}

func TestRelativeSQLitePathIsRelativeToJobFile(t *testing.T) {
	e := newEnv(t)
	e.sql("", seedSetup+seedChanges)
	jobDir := filepath.Join(e.dir, "jobs")
	t.Chdir(t.TempDir()) // run from elsewhere
	j, err := dsl.ParseJob(filepath.Join(jobDir, "copy.yaml"), []byte("source: orders_stream\nsink: {table: copy, connection: 'sqlite:replica.db'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(jobDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := e.run(j); err != nil {
		t.Fatal(err)
	}
	got := e.sql("sqlite:"+filepath.Join(jobDir, "replica.db"), "SELECT count(*) FROM copy")
	if got[0][0] != "4" {
		t.Fatalf("replica next to the job file has %s rows, want the 4 seed changes", got[0][0])
	}
}

// TestPlanWarnsForMergeKeys: a merge whose keys are not the source's
// primary key passed through warns that an update of a merge-key column
// leaves the old row; the run shows that it does.
func TestPlanWarnsForMergeKeys(t *testing.T) {
	const warn = "are not the source's primary key (id) passed through"
	for _, tc := range []struct {
		name, sel, keys string
		warns           bool
	}{
		{"primary key", "[id, name, amount]", "[id]", false},
		{"primary key renamed", "[id AS order_id, name]", "[order_id]", false},
		{"another column", "[id, name, amount]", "[name]", true},
		{"primary key and more", "[id, name, amount]", "[id, name]", true},
		{"computed from the key", "[id % 2 AS k, amount]", "[k]", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.sql("", seedSetup)
			j := e.job("j.yaml", "source: orders_stream\nselect: "+tc.sel+"\nsink: {table: t, mode: merge, keys: "+tc.keys+"}\n")
			p, err := e.r.Plan(context.Background(), j)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(strings.Join(p.Plan.Warnings, "\n"), warn); got != tc.warns {
				t.Errorf("warns %v, want %v: %q", got, tc.warns, p.Plan.Warnings)
			}
		})
	}

	// What the warning says, keyed on name: renaming a row leaves the
	// row under its old name.
	e := newEnv(t)
	e.sql("", seedSetup)
	j := e.job("j.yaml", "source: orders_stream\nselect: [id, name]\nsink: {table: t, mode: merge, keys: [name]}\n")
	for _, change := range []string{"UPDATE orders SET amount = 1 WHERE id = 1", "UPDATE orders SET name = 'Alicia' WHERE id = 1"} {
		e.sql("", change)
		if _, err := e.run(j); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := e.rows("", "SELECT id, name FROM t ORDER BY name"), "[[1 Alice] [1 Alicia]]"; got != want {
		t.Errorf("target %s, want %s", got, want)
	}
}

// TestPlanWarnsForTargetKey: a merge into an existing target whose primary
// key is not the merge keys warns; the run then fails as the warning says.
func TestPlanWarnsForTargetKey(t *testing.T) {
	const warn = "has the primary key (id), not the merge keys (name)"
	e := newEnv(t)
	e.sql("", seedSetup)
	// t_id can be merged by name (a unique index), but is keyed by id.
	db, err := sql.Open("sqlite", filepath.Join(e.dir, "src.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`CREATE TABLE t_id (id INTEGER PRIMARY KEY, name TEXT)`, `CREATE UNIQUE INDEX t_id_name ON t_id (name)`,
		`CREATE TABLE t_name (id INTEGER, name TEXT PRIMARY KEY)`, `INSERT INTO t_id VALUES (2, 'Zed')`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		target string
		warns  bool
	}{{"t_id", true}, {"t_name", false}} {
		j := e.job("j.yaml", "source: orders_stream\nselect: [id, name]\nsink: {table: "+tc.target+", mode: merge, keys: [name]}\n")
		p, err := e.r.Plan(context.Background(), j)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(strings.Join(p.Plan.Warnings, "\n"), warn); got != tc.warns {
			t.Errorf("%s: warns %v, want %v: %q", tc.target, got, tc.warns, p.Plan.Warnings)
		}
	}
	// Bob (id 2) changes: merged by name into t_id, which has no Bob but
	// holds id 2 (Zed).
	e.sql("", "UPDATE orders SET amount = 1 WHERE id = 2")
	j := e.job("j.yaml", "source: orders_stream\nselect: [id, name]\nsink: {table: t_id, mode: merge, keys: [name]}\n")
	if _, err := e.run(j); err == nil {
		t.Error("the merge by name into a target keyed by id ran; want a unique violation")
	}
}
