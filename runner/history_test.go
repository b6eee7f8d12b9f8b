package runner_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// version is one row of a history as the test model computes it.
type version struct{ vals, from, to string }

// historyModel computes the versions a history sink keyed by the first
// projected column must hold, from the changes the stream itself returns
// (read with a plain read before each run), independently of the sinks'
// SQL: per key in commit order, an INSERT or UPDATE_AFTER whose projected
// values differ from the current version closes it and opens one; a
// DELETE closes the current version.
type historyModel struct {
	cols     []string // projected table columns
	versions map[string][]version
}

func (m *historyModel) apply(t *testing.T, table cdc.Schema, changes []cdc.Change) {
	t.Helper()
	for _, ch := range changes {
		var vals []string
		for _, c := range m.cols {
			i := table.Index(c)
			vals = append(vals, cdc.FormatValue(ch.Row[i], table.Columns[i].Type))
		}
		key, at := vals[0], cdc.FormatValue(ch.CommitTime, cdc.TypeTimestamp)
		vs := m.versions[key]
		open := len(vs) > 0 && vs[len(vs)-1].to == "NULL"
		switch ch.Op {
		case cdc.OpInsert, cdc.OpUpdateAfter:
			row := strings.Join(vals, "|")
			if open && vs[len(vs)-1].vals == row {
				continue
			}
			if open {
				vs[len(vs)-1].to = at
			}
			vs = append(vs, version{vals: row, from: at, to: "NULL"})
		case cdc.OpDelete:
			if open {
				vs[len(vs)-1].to = at
			}
		}
		m.versions[key] = vs
	}
}

func (m *historyModel) rows() []string {
	var out []string
	for _, vs := range m.versions {
		for _, v := range vs {
			out = append(out, v.vals+"|"+v.from+"|"+v.to)
		}
	}
	slices.Sort(out)
	return out
}

// streamChanges reads the pending changes of stream on conn without
// consuming them.
func (e *env) streamChanges(conn, stream string) (cdc.Schema, []cdc.Change) {
	e.t.Helper()
	ctx := context.Background()
	b, err := e.r.Backend(ctx, conn)
	if err != nil {
		e.t.Fatal(err)
	}
	src := b.(runner.Source)
	info, err := src.Stream(ctx, plan.Source{Stream: stream})
	if err != nil {
		e.t.Fatal(err)
	}
	rd, err := src.Changes(ctx, info, info.Offset, runner.ReadOptions{BatchSize: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	defer rd.Close()
	var out []cdc.Change
	for {
		batch, err := rd.Next(ctx)
		if err != nil {
			break
		}
		out = append(out, batch...)
	}
	return info.TableSchema, out
}

// A history target after insert → update → update → delete → insert again
// of one key, across runs and within one run, equals the versions computed
// from the stream's own changes; pushed down (SQLite, PostgreSQL) and
// across databases (SQLite → SQLite, SQLite → PostgreSQL, PostgreSQL →
// SQLite), and every target equals the others.
func TestHistoryAcrossRunsAndBackends(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	e := newEnv(t)
	other := e.conn("other.db")
	setup := `
CREATE TABLE src (id INT, name STRING, amount DECIMAL(10,2), status STRING, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
`
	type jobCase struct{ name, src, sink string }
	jobs := []jobCase{
		{"sqlite_push", "", ""}, {"sqlite_to_sqlite", "", other}, {"sqlite_to_pg", "", pg},
		{"pg_push", pg, ""}, {"pg_to_sqlite", pg, other},
	}
	e.sql("", setup)
	e.sql(pg, setup)
	for _, j := range jobs {
		e.sql(j.src, fmt.Sprintf("CREATE TABLE STREAM s_%s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')", j.name))
	}
	steps := []string{
		"INSERT INTO src VALUES (1, 'a', 1.50, 'x'), (2, 'b', 2, 'x')",
		"UPDATE src SET amount = 3 WHERE id = 1",
		"UPDATE src SET name = 'a2' WHERE id = 1; UPDATE src SET status = 'y' WHERE id = 2", // key 2: not projected, no version
		"DELETE FROM src WHERE id = 1",
		"INSERT INTO src VALUES (1, 'a', 1.5, 'z')",
		"", // nothing pending
	}
	models := map[string]*historyModel{}
	parsed := map[string]*plan.Job{}
	for _, j := range jobs {
		models[j.name] = &historyModel{cols: []string{"id", "name", "amount"}, versions: map[string][]version{}}
		var b strings.Builder
		if j.src != "" {
			fmt.Fprintf(&b, "connection: '%s'\n", j.src)
		}
		fmt.Fprintf(&b, "source: s_%s\nselect: [id, name, amount]\nsink: {table: h_%s, mode: history, keys: [id]", j.name, j.name)
		if j.sink != "" {
			fmt.Fprintf(&b, ", connection: '%s'", j.sink)
		}
		b.WriteString("}\n")
		parsed[j.name] = e.job(j.name+".yaml", b.String())
	}
	runAll := func(step string) {
		t.Helper()
		for _, j := range jobs {
			table, changes := e.streamChanges(j.src, "s_"+j.name)
			models[j.name].apply(t, table, changes)
			prep, err := e.r.Plan(context.Background(), parsed[j.name])
			if err != nil {
				t.Fatalf("%s after %q: %v", j.name, step, err)
			}
			if want := j.sink == ""; prep.Plan.Pushdown != want {
				t.Errorf("%s: pushed down %v, want %v", j.name, prep.Plan.Pushdown, want)
			}
			if _, err := e.r.Run(context.Background(), prep); err != nil {
				t.Fatalf("%s after %q: %v", j.name, step, err)
			}
			sink := j.sink
			if sink == "" {
				sink = j.src
			}
			got := e.sql(sink, fmt.Sprintf("SELECT id, name, amount, __valid_from, __valid_to FROM h_%s", j.name))
			var rows []string
			for _, r := range got {
				rows = append(rows, strings.Join(r, "|"))
			}
			slices.Sort(rows)
			if want := models[j.name].rows(); !slices.Equal(rows, want) {
				t.Errorf("%s after %q:\n got  %q\n want %q", j.name, step, rows, want)
			}
		}
	}
	for _, step := range steps {
		if step != "" {
			e.sql("", step)
			e.sql(pg, step)
		}
		runAll(step)
	}
	if n := len(models["sqlite_push"].rows()); n != 5 {
		t.Errorf("%d versions, want 5 (key 1: four, key 2: one)", n)
	}
	// Within one run: the same life of key 3 nets out to one INSERT (a
	// STANDARD stream returns the net change per key between two runs).
	for _, step := range []string{
		"INSERT INTO src VALUES (3, 'c', 1, 'x')", "UPDATE src SET amount = 2 WHERE id = 3", "UPDATE src SET name = 'c2' WHERE id = 3",
		"DELETE FROM src WHERE id = 3", "INSERT INTO src VALUES (3, 'c3', 9, 'x')",
	} {
		e.sql("", step)
		e.sql(pg, step)
	}
	runAll("key 3's life in one run")
	for _, j := range jobs {
		if vs := models[j.name].versions["3"]; len(vs) != 1 || !strings.HasPrefix(vs[0].vals, "3|c3|9.00") {
			t.Errorf("%s: key 3 versions %v, want one (3, c3, 9.00)", j.name, vs)
		}
	}
	// Same source database, same commit timestamps: the targets agree.
	byRows := map[string]string{}
	for _, j := range jobs {
		byRows[j.name] = fmt.Sprint(models[j.name].rows())
	}
	if byRows["sqlite_push"] != byRows["sqlite_to_sqlite"] || byRows["sqlite_push"] != byRows["sqlite_to_pg"] || byRows["pg_push"] != byRows["pg_to_sqlite"] {
		t.Errorf("pushdown and cross-database targets differ: %v", byRows)
	}
}

// TestHistoryPushedDownCommitTimeWidth: a history pushed down within one
// SQLite file stores every commit time with three fraction digits
// (docs/sinks.md), the initial rows' too: a fresh user saw the initial
// rows' versions at 4 digits ("12:35:28.2762+00:00") among the later
// ones' 3. Each of several streams is created at its own microsecond, so
// a creation time written with its own digits shows.
func TestHistoryPushedDownCommitTimeWidth(t *testing.T) {
	e := newEnv(t)
	e.sql("", `CREATE TABLE src (id INT, v STRING, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
INSERT INTO src VALUES (1, 'a'), (2, 'b');`)
	const streams = 5
	for i := range streams {
		e.sql("", fmt.Sprintf("CREATE TABLE STREAM s%d ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE')", i))
	}
	width := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\+00:00$`)
	db := openSQLite(t, e.conn("src.db"))
	for round, step := range []string{"", "UPDATE src SET v = 'a2' WHERE id = 1", "DELETE FROM src WHERE id = 2"} {
		if step != "" {
			e.sql("", step)
		}
		for i := range streams {
			j := e.job(fmt.Sprintf("h%d.yaml", i), fmt.Sprintf("source: s%d\nsink: {table: h%d, mode: history, keys: [id]}\n", i, i))
			prep, err := e.r.Plan(context.Background(), j)
			if err != nil {
				t.Fatal(err)
			}
			if !prep.Plan.Pushdown {
				t.Fatalf("h%d: not pushed down", i)
			}
			if _, err := e.r.Run(context.Background(), prep); err != nil {
				t.Fatal(err)
			}
			// || '': the stored text, not a time the driver parses.
			rows, err := db.Query(fmt.Sprintf(`SELECT id, "__valid_from" || '', coalesce("__valid_to" || '', '') FROM h%d ORDER BY id, "__valid_from"`, i))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var id int
				var from, to string
				if err := rows.Scan(&id, &from, &to); err != nil {
					t.Fatal(err)
				}
				n++
				if !width.MatchString(from) || to != "" && !width.MatchString(to) {
					t.Errorf("round %d, h%d key %d: __valid_from %q, __valid_to %q; want three fraction digits", round, i, id, from, to)
				}
			}
			rows.Close()
			if n == 0 {
				t.Fatalf("h%d: no versions", i)
			}
		}
	}
}

// A history sink refuses an APPEND_ONLY stream at plan time, saying why.
func TestHistoryRefusesAppendOnly(t *testing.T) {
	e := newEnv(t)
	e.sql("", `CREATE TABLE src (id INT, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');`)
	_, err := e.r.Plan(context.Background(), e.job("h.yaml", "source: s\nsink:\n  table: h\n  mode: history\n  keys: [id]\n"))
	if err == nil || !strings.Contains(err.Error(), "h.yaml:4:9:") || !strings.Contains(err.Error(), "APPEND_ONLY stream s") {
		t.Fatalf("err = %v, want the refusal at h.yaml:4:9 naming the APPEND_ONLY stream", err)
	}
}

// on_delete: soft, pushed down and across databases on both SQL backends:
// a deleted key keeps its row with __deleted_at = the DELETE's commit
// timestamp as the stream reports it; inserting it again clears the mark.
// An existing target without __deleted_at is refused at plan time.
func TestSoftDeleteAcrossBackends(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	e := newEnv(t)
	other := e.conn("other.db")
	setup := `
CREATE TABLE src (id INT, name STRING, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
`
	e.sql("", setup)
	e.sql(pg, setup)
	type jobCase struct{ name, src, sink string }
	jobs := []jobCase{{"sqlite_push", "", ""}, {"sqlite_to_pg", "", pg}, {"pg_push", pg, ""}, {"pg_to_sqlite", pg, other}}
	parsed := map[string]*plan.Job{}
	for _, j := range jobs {
		e.sql(j.src, fmt.Sprintf("CREATE TABLE STREAM s_%s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')", j.name))
		text := fmt.Sprintf("source: s_%s\nsink: {table: m_%s, mode: merge, keys: [id], on_delete: soft", j.name, j.name)
		if j.sink != "" {
			text += fmt.Sprintf(", connection: '%s'", j.sink)
		}
		if j.src != "" {
			text = fmt.Sprintf("connection: '%s'\n", j.src) + text
		}
		parsed[j.name] = e.job(j.name+".yaml", text+"}\n")
	}
	want := map[string]map[string]string{} // job → id → "name|deleted_at"
	for _, step := range []string{
		"INSERT INTO src VALUES (1, 'a'), (2, 'b')",
		"DELETE FROM src WHERE id = 1",
		"UPDATE src SET name = 'b2' WHERE id = 2",
		"INSERT INTO src VALUES (1, 'a2')",
	} {
		e.sql("", step)
		e.sql(pg, step)
		for _, j := range jobs {
			if want[j.name] == nil {
				want[j.name] = map[string]string{}
			}
			table, changes := e.streamChanges(j.src, "s_"+j.name)
			for _, ch := range changes {
				id := cdc.FormatValue(ch.Row[table.Index("id")], cdc.TypeInt)
				name := cdc.FormatValue(ch.Row[table.Index("name")], cdc.TypeString)
				switch ch.Op {
				case cdc.OpInsert, cdc.OpUpdateAfter:
					want[j.name][id] = name + "|NULL"
				case cdc.OpDelete:
					want[j.name][id] = strings.Split(want[j.name][id], "|")[0] + "|" + cdc.FormatValue(ch.CommitTime, cdc.TypeTimestamp)
				}
			}
			if _, err := e.run(parsed[j.name]); err != nil {
				t.Fatalf("%s after %q: %v", j.name, step, err)
			}
			sink := j.sink
			if sink == "" {
				sink = j.src
			}
			got := map[string]string{}
			for _, r := range e.sql(sink, fmt.Sprintf("SELECT id, name, __deleted_at FROM m_%s", j.name)) {
				got[r[0]] = r[1] + "|" + r[2]
			}
			if fmt.Sprint(got) != fmt.Sprint(want[j.name]) {
				t.Errorf("%s after %q: got %v, want %v", j.name, step, got, want[j.name])
			}
		}
	}
	if !strings.HasSuffix(want["pg_push"]["1"], "|NULL") || !strings.HasPrefix(want["pg_push"]["1"], "a2") {
		t.Errorf("the model lost the re-insert: %v", want["pg_push"])
	}

	e.sql("", "CREATE TABLE plain (id INT, name STRING, PRIMARY KEY (id))")
	_, err := e.r.Plan(context.Background(), e.job("p.yaml", "source: s_sqlite_push\nsink: {table: plain, mode: merge, keys: [id], on_delete: soft}\n"))
	if err == nil || !strings.Contains(err.Error(), `ALTER TABLE "plain" ADD COLUMN "__deleted_at" TIMESTAMP`) {
		t.Errorf("plan of a soft delete into a target without __deleted_at: %v", err)
	}
}
