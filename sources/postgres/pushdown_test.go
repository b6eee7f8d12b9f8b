package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/internal/redact"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
	"github.com/sluicedata/sluice/runner"
)

// TestTimestampInstantRoundTrip: timestamptz keeps the instant (read back
// in UTC), DECIMAL(38,10) stays exact through capture.
func TestTimestampInstantRoundTrip(t *testing.T) {
	b, _ := openDB(t)
	sqlExec(t, b, `CREATE TABLE "order" (id int PRIMARY KEY, "user" text, at timestamptz, amt numeric(38,10))`)
	track(t, b, "order")
	mkStream(t, b, "s", "order", "", false)
	at := time.Date(2024, 1, 15, 10, 0, 0, 123456000, time.FixedZone("CST", 8*3600))
	amt := "1234567890123456789012345678.0123456789"
	if _, err := b.pool.Exec(context.Background(), `INSERT INTO "order" VALUES (1, 'ü', $1, $2::numeric)`, at, amt); err != nil {
		t.Fatal(err)
	}
	chs, got := read(t, b, "s", true)
	check(t, "row", got, []string{"INSERT 1 ü 2024-01-15 02:00:00.123456+00:00 " + amt})
	if !chs[0].Row[2].(time.Time).Equal(at) {
		t.Errorf("instant changed: %v", chs[0].Row[2])
	}
}

// bindPlan builds a bound plan over stream s of b as the runner would.
func bindPlan(t *testing.T, b *Backend, stream, filter string, project []string, sink plan.SinkStage) (*plan.Plan, *runner.StreamInfo) {
	t.Helper()
	ctx := context.Background()
	s, err := b.Stream(ctx, plan.Source{Stream: stream})
	if err != nil {
		t.Fatal(err)
	}
	src := cdc.StreamSchema(s.TableSchema)
	scope := expr.Scope{{Schema: src}}
	p := &plan.Plan{Source: plan.SourceStage{Stream: stream, Table: s.Table, Mode: s.Mode, Schema: src, TableSchema: s.TableSchema}}
	if filter != "" {
		e, err := expr.Parse(filter, pos.Pos{Line: 1, Col: 1})
		if err != nil {
			t.Fatal(err)
		}
		bd, err := e.Bind(scope)
		if err != nil {
			t.Fatal(err)
		}
		p.Filter = &plan.FilterStage{Text: filter, Expr: bd}
	}
	for _, it := range project {
		e, name, err := expr.ParseSelectItem(it, pos.Pos{Line: 1, Col: 1})
		if err != nil {
			t.Fatal(err)
		}
		bd, err := e.Bind(scope)
		if err != nil {
			t.Fatal(err)
		}
		p.Project = append(p.Project, plan.ProjectItem{Name: name, Text: it, Type: bd.Type(), Expr: bd})
		sink.Schema.Columns = append(sink.Schema.Columns, cdc.Column{Name: name, Type: bd.Type()})
	}
	sink.Schema.Key = sink.Keys
	p.Sink = sink
	return p, s
}

func TestPushdownMergeAndAppend(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE "order" (id int PRIMARY KEY, "user" text, amount numeric(10,2))`,
		`INSERT INTO "order" VALUES (1, 'a', 1.50), (2, 'b', 2.25)`)
	track(t, b, "order")
	mkStream(t, b, "s", "order", dsl.ModeStandard, true)
	mkStream(t, b, "ins", "order", dsl.ModeStandard, false)

	p, s := bindPlan(t, b, "s", "", []string{"id", "`user`", "amount * 2 AS amount2"},
		plan.SinkStage{Backend: "postgres", Table: "replica", Mode: plan.ModeMerge, Keys: []string{"id"}})
	pd, err := b.Pushdown(ctx, p, s)
	if err != nil {
		t.Fatal(err)
	}
	var sawMerge bool
	for _, st := range pd.Steps() {
		sawMerge = sawMerge || strings.HasPrefix(st.SQL, "MERGE INTO")
	}
	if !sawMerge {
		t.Errorf("no MERGE in steps: %+v", pd.Steps())
	}
	run := func() runner.Stats {
		t.Helper()
		stats, from, to, err := pd.Run(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		if from.Equal(to) && len(stats.Read) > 0 {
			t.Errorf("offset did not move")
		}
		return stats
	}
	run()
	replica := func() []string {
		rs, err := b.Query(ctx, `SELECT id, "user", amount2 FROM replica ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs.Rows {
			out = append(out, cdc.FormatValue(r[0], rs.Columns[0].Type)+" "+cdc.FormatValue(r[1], rs.Columns[1].Type)+" "+cdc.FormatValue(r[2], rs.Columns[2].Type))
		}
		return out
	}
	check(t, "initial rows", replica(), []string{"1 a 3.00", "2 b 4.50"})
	sqlExec(t, b, `UPDATE "order" SET amount = 10 WHERE id = 1`, `DELETE FROM "order" WHERE id = 2`, `INSERT INTO "order" VALUES (3, 'c', 0.01)`)
	stats := run()
	check(t, "merged", replica(), []string{"1 a 20.00", "3 c 0.02"})
	if stats.Read[cdc.OpUpdateBefore] != 1 || stats.Written[cdc.OpDelete] != 1 {
		t.Errorf("stats: %+v", stats)
	}
	// Offset and checkpoint moved together.
	s2, _ := b.Stream(ctx, plan.Source{Stream: "s"})
	var cpOff string
	if err := b.pool.QueryRow(ctx, `SELECT "offset" FROM sluice.checkpoints WHERE job = 'job'`).Scan(&cpOff); err != nil {
		t.Fatal(err)
	}
	if o, _ := cdc.DecodeOffset(cpOff); !o.Equal(s2.Offset) {
		t.Errorf("checkpoint %s != stream offset %s", cpOff, s2.Offset)
	}
	check(t, "nothing new", func() []string { run(); return replica() }(), []string{"1 a 20.00", "3 c 0.02"})

	// Append of inserts only (filtered), into a new table.
	p, s = bindPlan(t, b, "ins", "__change_type = 'INSERT'", []string{"id", "amount"},
		plan.SinkStage{Backend: "postgres", Table: "inserts", Mode: plan.ModeAppend})
	pd, err = b.Pushdown(ctx, p, s)
	if err != nil {
		t.Fatal(err)
	}
	sqlExec(t, b, `INSERT INTO "order" VALUES (4, 'd', 4)`, `UPDATE "order" SET amount = 11 WHERE id = 1`)
	if _, _, _, err := pd.Run(ctx, "job2"); err != nil {
		t.Fatal(err)
	}
	rs, err := b.Query(ctx, `SELECT id, amount FROM inserts ORDER BY id`)
	if err != nil || len(rs.Rows) != 2 || rs.Rows[0][0] != int64(3) || rs.Rows[1][0] != int64(4) {
		t.Errorf("appended: %+v %v", rs, err)
	}
	// The filtered-out update was consumed too.
	_, got := read(t, b, "ins", false)
	check(t, "consumed", got, nil)

	// stdout sinks are not pushed down.
	if _, err := b.Pushdown(ctx, &plan.Plan{Sink: plan.SinkStage{Backend: "stdout"}}, s); !errors.Is(err, runner.ErrNoPushdown) {
		t.Errorf("stdout: %v", err)
	}
}

// TestCrossDatabase moves changes from a source database to a sink in
// another database with the runner's protocol: sink commit (rows +
// checkpoint), then Advance.
func TestCrossDatabase(t *testing.T) {
	src, _ := openDB(t)
	dst, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, src, `CREATE TABLE t (id int PRIMARY KEY, amt numeric(38,10))`)
	track(t, src, "t")
	mkStream(t, src, "s", "t", "", false)
	sqlExec(t, src, `INSERT INTO t SELECT g, g / 7.0 FROM generate_series(1, 50) g`, `UPDATE t SET amt = amt * 3 WHERE id % 3 = 0`, `DELETE FROM t WHERE id % 10 = 0`)
	s, _ := src.Stream(ctx, plan.Source{Stream: "s"})
	st := &plan.SinkStage{Backend: "postgres", Table: "t", Mode: plan.ModeMerge, Keys: []string{"id"}, Schema: cdc.Schema{Columns: s.TableSchema.Columns, Key: []string{"id"}}}
	for round := 0; round < 2; round++ {
		sp, err := dst.PrepareSink(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		r, err := src.Changes(ctx, s, s.Offset, runner.ReadOptions{BatchSize: 7})
		if err != nil {
			t.Fatal(err)
		}
		tx, err := sp.Begin(ctx, "xjob")
		if err != nil {
			t.Fatal(err)
		}
		for {
			batch, err := r.Next(ctx)
			if err != nil {
				break
			}
			if err := tx.Write(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
		if _, err := tx.Commit(ctx, runner.Checkpoint{Stream: "s", StreamID: s.ID, Offset: r.ReadPoint()}); err != nil {
			t.Fatal(err)
		}
		if err := src.Advance(ctx, s, s.Offset, r.ReadPoint()); err != nil {
			t.Fatal(err)
		}
		s, _ = src.Stream(ctx, plan.Source{Stream: "s"})
		if round == 0 {
			sqlExec(t, src, `UPDATE t SET amt = amt + 0.0000000001 WHERE id < 5`)
		}
	}
	a, err := src.Query(ctx, `SELECT id, amt FROM t ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	bq, err := dst.Query(ctx, `SELECT id, amt FROM t ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Rows) != len(bq.Rows) || len(a.Rows) != 45 {
		t.Fatalf("rows: %d vs %d", len(a.Rows), len(bq.Rows))
	}
	for i := range a.Rows {
		x, y := cdc.FormatValue(a.Rows[i][1], cdc.Decimal(38, 10)), cdc.FormatValue(bq.Rows[i][1], cdc.Decimal(38, 10))
		if a.Rows[i][0] != bq.Rows[i][0] || x != y {
			t.Errorf("row %v: %s vs %s", a.Rows[i][0], x, y)
		}
	}
}

func TestPasswordNeverShown(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{
		"postgres://postgres:s3cretPW@127.0.0.1:1/db?sslmode=disable&connect_timeout=1",
		"host=127.0.0.1 port=1 user=postgres password=s3cretPW dbname=db connect_timeout=1",
		"postgres://postgres:s3cretPW@127.0.0.1:1/db?sslmode=bogus",
	} {
		_, err := runner.Open(ctx, u, nil)
		if err == nil {
			t.Fatalf("%s: connected", redact.Conn(u))
		}
		if strings.Contains(err.Error(), "s3cretPW") {
			t.Errorf("password in error: %v", err)
		}
	}
	b, u := openDB(t)
	if strings.Contains(b.Identity(), "@") || !strings.HasPrefix(b.Identity(), "127.0.0.1:") {
		t.Errorf("identity: %s", b.Identity())
	}
	if b.Redacted() != redact.Conn(u) {
		t.Errorf("redacted: %s", b.Redacted())
	}
	// key=value DSN via the registry.
	cfg, _ := pgx.ParseConfig(u)
	dsn := "host=127.0.0.1 port=" + strconv.Itoa(int(cfg.Port)) + " user=postgres dbname=" + cfg.Database + " sslmode=disable"
	b2, err := runner.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if b2.Identity() != b.Identity() {
		t.Errorf("DSN identity %s != URL identity %s", b2.Identity(), b.Identity())
	}
}
