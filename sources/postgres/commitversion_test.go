package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
)

// xminOf returns the writing transaction (xmin, PostgreSQL's own record)
// of each row of table cv by id.
func xminOf(t *testing.T, b *Backend) map[int64]string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT id, xmin::text FROM cv`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var x string
		if err := rows.Scan(&id, &x); err != nil {
			t.Fatal(err)
		}
		out[id] = x
	}
	return out
}

// versionsByTx checks that changes share a __commit_version exactly when
// the source row they carry was written by the same transaction (xmin)
// and returns each transaction's version.
func versionsByTx(t *testing.T, what string, chs []cdc.Change, xmin map[int64]string) map[string]int64 {
	t.Helper()
	byTx := map[string]int64{}
	txOf := map[int64]string{}
	for _, c := range chs {
		tx := xmin[c.Row[0].(int64)]
		if v, ok := byTx[tx]; ok && v != c.CommitVersion {
			t.Errorf("%s: transaction %s has versions %d and %d", what, tx, v, c.CommitVersion)
		}
		byTx[tx] = c.CommitVersion
		if o, ok := txOf[c.CommitVersion]; ok && o != tx {
			t.Errorf("%s: transactions %s and %s share version %d", what, o, tx, c.CommitVersion)
		}
		txOf[c.CommitVersion] = tx
	}
	return byTx
}

// TestCommitVersionPerTransaction: every change of one source transaction
// carries one __commit_version, and versions increase in commit order,
// for transactions that commit in another order than they started: B
// starts after A and commits first, A waiting for B's lock on key 100;
// a read between two commits splits them into two batches. A STANDARD
// net change carries the version of the last transaction that touched
// its key (key 100: A's). Which transaction wrote each row is read from
// the table (xmin), not from sluice.
func TestCommitVersionPerTransaction(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE cv (id bigint PRIMARY KEY, v int)`, `INSERT INTO cv VALUES (100, 0)`)
	track(t, b, "cv")
	mkStream(t, b, "cvs", "cv", dsl.ModeStandard, false)
	mkStream(t, b, "cva", "cv", dsl.ModeAppendOnly, false)

	a, bb := connect(ctx, t, u), connect(ctx, t, u)
	must := func(err error, q string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{"BEGIN", "INSERT INTO cv VALUES (1, 1), (2, 1)"} {
		_, err := a.Exec(ctx, q)
		must(err, q)
	}
	for _, q := range []string{"BEGIN", "INSERT INTO cv VALUES (3, 2), (4, 2)", "UPDATE cv SET v = 2 WHERE id = 100"} {
		_, err := bb.Exec(ctx, q)
		must(err, q)
	}
	blocked := make(chan error, 1)
	go func() {
		_, err := a.Exec(ctx, "UPDATE cv SET v = 1 WHERE id = 100") // waits for B
		blocked <- err
	}()
	// B commits once A waits for its row lock.
	for i := 0; ; i++ {
		var n int
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if i > 500 {
			t.Fatal("A never waited for B")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err := bb.Exec(ctx, "COMMIT")
	must(err, "COMMIT B")
	must(<-blocked, "UPDATE in A")
	for _, q := range []string{"INSERT INTO cv VALUES (5, 1)", "COMMIT"} {
		_, err := a.Exec(ctx, q)
		must(err, q)
	}
	sqlExec(t, b, `INSERT INTO cv VALUES (6, 3), (7, 3)`) // C: one INSERT of two rows
	xmin := xminOf(t, b)

	std, got := read(t, b, "cvs", true)
	check(t, "STANDARD", sorted(got), sorted([]string{"INSERT 1 1", "INSERT 2 1", "INSERT 3 2", "INSERT 4 2", "INSERT 5 1", "INSERT 6 3", "INSERT 7 3", "UPDATE_BEFORE 100 0", "UPDATE_AFTER 100 1"}))
	v := versionsByTx(t, "STANDARD", std, xmin)
	txA, txB, txC := xmin[1], xmin[3], xmin[6]
	if !(v[txB] < v[txA] && v[txA] < v[txC]) {
		t.Errorf("STANDARD versions B %d, A %d, C %d: want increasing in commit order B, A, C", v[txB], v[txA], v[txC])
	}
	for i := 1; i < len(std); i++ {
		if std[i].CommitVersion < std[i-1].CommitVersion {
			t.Errorf("STANDARD read not in version order: %d after %d", std[i].CommitVersion, std[i-1].CommitVersion)
		}
	}
	app, _ := read(t, b, "cva", true)
	if len(app) != 7 {
		t.Errorf("APPEND_ONLY: %d changes, want 7 inserts", len(app))
	}
	va := versionsByTx(t, "APPEND_ONLY", app, xmin)
	if !(va[txB] < va[txA] && va[txA] < va[txC]) {
		t.Errorf("APPEND_ONLY versions B %d, A %d, C %d: want increasing in commit order B, A, C", va[txB], va[txA], va[txC])
	}

	// D starts first, E commits first, and a read comes between the
	// commits: E's version is below D's although D's log rows come first.
	for _, q := range []string{"BEGIN", "INSERT INTO cv VALUES (8, 4), (9, 4)"} {
		_, err := a.Exec(ctx, q)
		must(err, q)
	}
	sqlExec(t, b, `INSERT INTO cv VALUES (10, 5), (11, 5)`)
	e1, got := read(t, b, "cvs", true)
	check(t, "E", sorted(got), []string{"INSERT 10 5", "INSERT 11 5"})
	_, err = a.Exec(ctx, "COMMIT")
	must(err, "COMMIT D")
	d1, got := read(t, b, "cvs", true)
	check(t, "D", sorted(got), []string{"INSERT 8 4", "INSERT 9 4"})
	xmin = xminOf(t, b)
	vd, ve := versionsByTx(t, "D", d1, xmin), versionsByTx(t, "E", e1, xmin)
	if vd[xmin[8]] <= ve[xmin[10]] {
		t.Errorf("D (committed last) has version %d, E %d", vd[xmin[8]], ve[xmin[10]])
	}
	if e1[0].CommitVersion <= v[txC] {
		t.Errorf("a later batch's version %d is not above %d", e1[0].CommitVersion, v[txC])
	}
}
