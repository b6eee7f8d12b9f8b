package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// TestStandardNetChanges is the STANDARD semantics table: one read per
// case, net change per key between offset and read point.
func TestStandardNetChanges(t *testing.T) {
	b, _ := openDB(t)
	sqlExec(t, b, `CREATE TABLE t (id int PRIMARY KEY, v text)`,
		`INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')`)
	track(t, b, "t")
	mkStream(t, b, "s", "t", dsl.ModeStandard, false)
	cases := []struct {
		name string
		sql  []string
		want []string
	}{
		{"nothing", nil, nil},
		{"insert", []string{`INSERT INTO t VALUES (10, 'x')`}, []string{"INSERT 10 x"}},
		{"insert then update", []string{`INSERT INTO t VALUES (11, 'x')`, `UPDATE t SET v = 'y' WHERE id = 11`}, []string{"INSERT 11 y"}},
		{"insert then delete", []string{`INSERT INTO t VALUES (12, 'x')`, `DELETE FROM t WHERE id = 12`}, nil},
		{"update", []string{`UPDATE t SET v = 'a2' WHERE id = 1`}, []string{"UPDATE_BEFORE 1 a", "UPDATE_AFTER 1 a2"}},
		{"update twice", []string{`UPDATE t SET v = 'a3' WHERE id = 1`, `UPDATE t SET v = 'a4' WHERE id = 1`}, []string{"UPDATE_BEFORE 1 a2", "UPDATE_AFTER 1 a4"}},
		{"update and back", []string{`UPDATE t SET v = 'zz' WHERE id = 1`, `UPDATE t SET v = 'a4' WHERE id = 1`}, nil},
		{"no-op update", []string{`UPDATE t SET v = v WHERE id = 2`}, nil},
		{"delete", []string{`DELETE FROM t WHERE id = 2`}, []string{"DELETE 2 b"}},
		{"update then delete", []string{`UPDATE t SET v = 'c2' WHERE id = 3`, `DELETE FROM t WHERE id = 3`}, []string{"DELETE 3 c"}},
		{"delete then insert", []string{`DELETE FROM t WHERE id = 4`, `INSERT INTO t VALUES (4, 'd2')`}, []string{"UPDATE_BEFORE 4 d", "UPDATE_AFTER 4 d2"}},
		{"key-changing update", []string{`UPDATE t SET id = 40 WHERE id = 4`}, []string{"DELETE 4 d2", "INSERT 40 d2"}},
		{"key swap", []string{`INSERT INTO t VALUES (50, 'p'), (51, 'q')`}, []string{"INSERT 50 p", "INSERT 51 q"}},
		{"swap: keys change in one statement", []string{`UPDATE t SET id = id + 1000 WHERE id IN (50, 51)`}, []string{"DELETE 50 p", "DELETE 51 q", "INSERT 1050 p", "INSERT 1051 q"}},
		{"bulk update", []string{`UPDATE t SET v = v || '!' WHERE id IN (10, 11)`}, []string{"UPDATE_AFTER 10 x!", "UPDATE_AFTER 11 y!", "UPDATE_BEFORE 10 x", "UPDATE_BEFORE 11 y"}},
	}
	for _, c := range cases {
		sqlExec(t, b, c.sql...)
		chs, got := read(t, b, "s", true)
		if strings.Contains(c.name, "swap") || strings.Contains(c.name, "bulk") {
			got = sorted(got)
		}
		check(t, c.name, got, c.want)
		// An UPDATE_BEFORE directly precedes its UPDATE_AFTER with the same version.
		for i, ch := range chs {
			if ch.Op == cdc.OpUpdateBefore && (i+1 >= len(chs) || chs[i+1].Op != cdc.OpUpdateAfter || chs[i+1].CommitVersion != ch.CommitVersion) {
				t.Errorf("%s: UPDATE_BEFORE at %d not followed by its UPDATE_AFTER", c.name, i)
			}
			if ch.CommitTime.Location().String() != "UTC" || ch.CommitTime.IsZero() {
				t.Errorf("%s: commit time %v not UTC", c.name, ch.CommitTime)
			}
		}
	}
	// Reading never moves the offset; reading again returns the same.
	sqlExec(t, b, `INSERT INTO t VALUES (60, 'r')`)
	_, a := read(t, b, "s", false)
	_, c := read(t, b, "s", false)
	check(t, "plain read twice", c, a)
}

// TestLateCommit: a transaction that started before a read and commits
// after it appears in the next read, exactly once.
func TestLateCommit(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE t (id int PRIMARY KEY, v text)`)
	track(t, b, "t")
	mkStream(t, b, "s", "t", dsl.ModeStandard, false)

	conn := connect(ctx, t, u)
	txA, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txA.Exec(ctx, `INSERT INTO t VALUES (1, 'late')`); err != nil {
		t.Fatal(err)
	}
	// B commits after A started (higher txid) and before the read.
	sqlExec(t, b, `INSERT INTO t VALUES (2, 'early')`)
	chs1, got := read(t, b, "s", true)
	check(t, "first read", got, []string{"INSERT 2 early"})
	if err := txA.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	chs2, got := read(t, b, "s", true)
	check(t, "second read", got, []string{"INSERT 1 late"})
	if chs2[0].CommitVersion <= chs1[0].CommitVersion {
		t.Errorf("commit version did not increase across batches: %d then %d", chs1[0].CommitVersion, chs2[0].CommitVersion)
	}
	_, got = read(t, b, "s", true)
	check(t, "third read", got, nil)
}

func TestTruncateCapturedAsDeletes(t *testing.T) {
	b, _ := openDB(t)
	sqlExec(t, b, `CREATE TABLE t (id int PRIMARY KEY, v text)`, `INSERT INTO t VALUES (1, 'a'), (2, 'b')`)
	track(t, b, "t")
	mkStream(t, b, "s", "t", dsl.ModeStandard, false)
	mkStream(t, b, "ao", "t", dsl.ModeAppendOnly, false)
	sqlExec(t, b, `INSERT INTO t VALUES (3, 'c')`, `TRUNCATE t`, `INSERT INTO t VALUES (1, 'new')`)
	_, got := read(t, b, "s", true)
	check(t, "standard", got, []string{"DELETE 2 b", "UPDATE_BEFORE 1 a", "UPDATE_AFTER 1 new"})
	_, got = read(t, b, "ao", true)
	check(t, "append only", got, []string{"INSERT 3 c", "INSERT 1 new"})
}

func TestReplicaRoleStillCaptured(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE t (id int PRIMARY KEY, v text)`)
	track(t, b, "t")
	mkStream(t, b, "s", "t", dsl.ModeStandard, false)
	conn := connect(ctx, t, u)
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO t VALUES (1, 'replica')`); err != nil {
		t.Fatal(err)
	}
	_, got := read(t, b, "s", true)
	check(t, "replica insert", got, []string{"INSERT 1 replica"})
}

// TestCaptureIgnoresSearchPath: the capture function runs under the
// writer's search_path (it has no SET clause, tracking.go), so it must
// name nothing through it. A writer whose path puts a schema before
// pg_catalog, with an = on text, a > on (bigint, integer), hashtext and a
// "char" domain that all fail when used, still has every change logged.
func TestCaptureIgnoresSearchPath(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE t (id int PRIMARY KEY, v text)`,
		`CREATE SCHEMA evil`,
		`CREATE FUNCTION evil.no(text, text) RETURNS boolean LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'evil = called'; END$$`,
		`CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.no)`,
		`CREATE FUNCTION evil.gt(bigint, integer) RETURNS boolean LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'evil > called'; END$$`,
		`CREATE OPERATOR evil.> (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = evil.gt)`,
		`CREATE FUNCTION evil.hashtext(text) RETURNS int LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'evil hashtext called'; END$$`,
		`CREATE DOMAIN evil."char" AS text CHECK (false)`)
	track(t, b, "t")
	mkStream(t, b, "s", "t", dsl.ModeStandard, false)
	conn := connect(ctx, t, u)
	for _, q := range []string{
		`SET search_path = evil, public, pg_catalog`,
		`INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')`,
		`UPDATE t SET v = 'b2' WHERE id = 2`,
		`UPDATE t SET id = 4 WHERE id = 3`,
		`DELETE FROM t WHERE id = 1`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, got := read(t, b, "s", true)
	check(t, "changes written under a hostile search_path", got, []string{"INSERT 2 b2", "INSERT 4 c"})
	if _, err := conn.Exec(ctx, `TRUNCATE t`); err != nil {
		t.Fatalf("TRUNCATE: %v", err)
	}
	_, got = read(t, b, "s", true)
	check(t, "TRUNCATE under a hostile search_path", got, []string{"DELETE 2 b2", "DELETE 4 c"})
}

func TestAppendOnlyAndInitialRows(t *testing.T) {
	b, _ := openDB(t)
	sqlExec(t, b, `CREATE TABLE t (id int PRIMARY KEY, v text)`, `INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')`)
	sqlExec(t, b, `CREATE TABLE nokey (v text)`, `INSERT INTO nokey VALUES ('x'), ('x'), ('y')`)
	track(t, b, "t")
	track(t, b, "nokey")
	mkStream(t, b, "ao", "t", dsl.ModeAppendOnly, false)
	mkStream(t, b, "ao_init", "t", dsl.ModeAppendOnly, true)
	mkStream(t, b, "std_init", "t", dsl.ModeStandard, true)
	mkStream(t, b, "nk_init", "nokey", dsl.ModeAppendOnly, true)
	if err := b.CreateStream(context.Background(), &dsl.CreateStream{Stream: "bad", Table: "nokey"}); !errors.Is(err, ErrNoPrimaryKey) {
		t.Errorf("STANDARD on a table without key: %v", err)
	}
	sqlExec(t, b, `INSERT INTO t VALUES (4, 'd')`, `UPDATE t SET v = 'a2' WHERE id = 1`, `UPDATE t SET v = 'd2' WHERE id = 4`, `DELETE FROM t WHERE id = 2`,
		`DELETE FROM nokey WHERE v = 'y'`, `INSERT INTO nokey VALUES ('z')`, `UPDATE nokey SET v = 'w' WHERE v = 'z'`)
	_, got := read(t, b, "ao", true)
	check(t, "append only", got, []string{"INSERT 4 d"})
	_, got = read(t, b, "ao_init", true)
	check(t, "append only with initial rows", sorted(got), []string{"INSERT 1 a", "INSERT 2 b", "INSERT 3 c", "INSERT 4 d"})
	_, got = read(t, b, "std_init", true)
	// Untouched rows first (the creation point's version), then changed rows in change order.
	check(t, "standard with initial rows", got, []string{"INSERT 3 c", "INSERT 1 a2", "INSERT 4 d2"})
	_, got = read(t, b, "nk_init", true)
	check(t, "no-key append only with initial rows", sorted(got[:3]), []string{"INSERT x", "INSERT x", "INSERT y"})
	check(t, "no-key append only insert", got[3:], []string{"INSERT z"})
	// Initial rows come once.
	sqlExec(t, b, `INSERT INTO t VALUES (5, 'e')`)
	_, got = read(t, b, "std_init", true)
	check(t, "standard after initial", got, []string{"INSERT 5 e"})
}

// TestInitialRowsUUIDKey reads a STANDARD stream with initial rows on a
// table keyed by uuid, a type the read carries as text (found by a fresh
// user: "operator does not exist: text = uuid"). The expected rows are the
// table's own, read back through the backend's query path.
func TestInitialRowsUUIDKey(t *testing.T) {
	b, _ := openDB(t)
	sqlExec(t, b, `CREATE TABLE u (id uuid PRIMARY KEY, v int)`,
		`INSERT INTO u VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 1), ('b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', 2)`)
	track(t, b, "u")
	mkStream(t, b, "u_init", "u", dsl.ModeStandard, true)
	sqlExec(t, b, `UPDATE u SET v = 20 WHERE v = 2`, `INSERT INTO u VALUES ('c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13', 3)`)
	var want []string
	for _, r := range tableRowsAll(t, b, `SELECT id, v FROM u`) {
		want = append(want, "INSERT "+r)
	}
	_, got := read(t, b, "u_init", true)
	check(t, "standard with initial rows, uuid key", sorted(got), sorted(want))
	if len(got) != 3 {
		t.Errorf("read %d changes, want the table's 3 rows", len(got))
	}
}

func TestClusterMismatchRefused(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE t (id int PRIMARY KEY)`)
	track(t, b, "t")
	mkStream(t, b, "s", "t", "", false)
	s, err := b.Stream(ctx, plan.Source{Stream: "s"})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := OffsetPosition(s.Offset)
	if err != nil {
		t.Fatal(err)
	}
	other := p
	other.System = "12345"
	if _, err := b.Changes(ctx, s, other.Offset(), runner.ReadOptions{}); !errors.Is(err, ErrClusterMismatch) {
		t.Errorf("offset of another cluster: got %v", err)
	}
	ahead := p
	ahead.Snap = "99999999:99999999:"
	if _, err := b.Changes(ctx, s, ahead.Offset(), runner.ReadOptions{}); !errors.Is(err, ErrClusterMismatch) {
		t.Errorf("offset ahead of the cluster: got %v", err)
	}
}

func TestStreamErrorsAndCatalog(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE t (id int PRIMARY KEY)`)
	if err := b.CreateStream(ctx, &dsl.CreateStream{Stream: "s", Table: "t"}); !errors.Is(err, ErrNotTracked) || !strings.Contains(err.Error(), "change_tracking") {
		t.Errorf("untracked: %v", err)
	}
	track(t, b, "t")
	mkStream(t, b, "s", "t", "", false)
	if err := b.CreateStream(ctx, &dsl.CreateStream{Stream: "s", Table: "t"}); !errors.Is(err, ErrStreamExists) {
		t.Errorf("duplicate: %v", err)
	}
	if err := b.CreateStream(ctx, &dsl.CreateStream{Stream: "s", Table: "t", IfNotExists: true}); err != nil {
		t.Error(err)
	}
	s1, _ := b.Stream(ctx, plan.Source{Stream: "s"})
	if err := b.CreateStream(ctx, &dsl.CreateStream{Stream: "s", Table: "t", OrReplace: true}); err != nil {
		t.Error(err)
	}
	s2, _ := b.Stream(ctx, plan.Source{Stream: "s"})
	if s1.ID == s2.ID {
		t.Error("OR REPLACE kept the stream ID")
	}
	if err := b.Advance(ctx, s1, s1.Offset, s1.Offset.With("", s1.Offset.Positions[""]+" initial")); !errors.Is(err, runner.ErrOffsetMoved) {
		t.Errorf("advance of the replaced stream: %v", err)
	}
	if err := b.DisableTracking(ctx, "t"); !errors.Is(err, ErrHasStreams) {
		t.Errorf("disable with streams: %v", err)
	}
	rs, err := b.Exec(ctx, &dsl.ShowStreams{})
	if err != nil || len(rs.Rows) != 1 || rs.Rows[0][0] != "s" {
		t.Errorf("show: %v %v", rs, err)
	}
	sqlExec(t, b, `INSERT INTO t VALUES (1), (2)`)
	rs, err = b.Exec(ctx, &dsl.DescribeStream{Stream: "s"})
	if err != nil || rs.Rows[0][len(rs.Columns)-2] != int64(2) {
		t.Errorf("describe: %v %v", rs, err)
	}
	if _, err := b.Stream(ctx, plan.Source{Stream: "nope"}); !errors.Is(err, runner.ErrNoStream) {
		t.Errorf("missing stream: %v", err)
	}
	if err := b.DropStream(ctx, "s", false); err != nil {
		t.Error(err)
	}
	if err := b.DropStream(ctx, "s", false); !errors.Is(err, runner.ErrNoStream) {
		t.Errorf("drop missing: %v", err)
	}
	if _, err := b.Exec(ctx, &dsl.DropTable{Table: "t"}); err != nil {
		t.Error(err)
	}
	var n int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relnamespace = 'sluice'::regnamespace AND relname LIKE 'log_%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("log tables left: %d %v", n, err)
	}
}

func TestPurge(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE t (id int PRIMARY KEY)`)
	track(t, b, "t")
	mkStream(t, b, "s1", "t", "", false)
	mkStream(t, b, "s2", "t", "", false)
	sqlExec(t, b, `INSERT INTO t VALUES (1)`, `INSERT INTO t VALUES (2)`)
	logCount := func() int {
		var n int
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM sluice.log_t`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	read(t, b, "s1", true)
	if n := logCount(); n != 2 {
		t.Errorf("purged while s2 still needs the rows: %d left", n)
	}
	read(t, b, "s2", true)
	sqlExec(t, b, `INSERT INTO t VALUES (3)`) // moves xmin on
	read(t, b, "s1", true)
	read(t, b, "s2", true)
	if n := logCount(); n > 1 {
		t.Errorf("log not purged: %d rows", n)
	}
	_, got := read(t, b, "s1", false)
	check(t, "after purge", got, nil)
}
