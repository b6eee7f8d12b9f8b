package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/serve"
)

func TestNotifyChannelName(t *testing.T) {
	if got := NotifyChannel("orders"); got != "sluice_changes_orders" {
		t.Errorf("NotifyChannel(orders) = %q", got)
	}
	long1, long2 := strings.Repeat("x", 60)+"a", strings.Repeat("x", 60)+"b"
	c1, c2 := NotifyChannel(long1), NotifyChannel(long2)
	if len(c1) > 63 || len(c2) > 63 || c1 == c2 || c1 != NotifyChannel(long1) {
		t.Errorf("long names: %q (%d bytes), %q (%d bytes): want distinct, stable, ≤ 63 bytes", c1, len(c1), c2, len(c2))
	}
	// Multi-byte names are cut on a character boundary.
	c := NotifyChannel(strings.Repeat("é", 40))
	if len(c) > 63 || !strings.HasPrefix(c, "sluice_changes_é") || !utf8Valid(c) {
		t.Errorf("multi-byte name: %q", c)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// TestNotifyOnCommit: the capture trigger notifies the table's channel
// when a writing transaction commits, once per transaction, and not for a
// rolled-back transaction, a statement that touched no row, a table
// without tracking or a channel no session registered on
// (RegisterListener, RegisterListeners). Notifications arrive in commit order, so a marker
// NOTIFY sent last bounds what is received without any timing.
func TestNotifyOnCommit(t *testing.T) {
	b, u := openDB(t)
	long := "t_" + strings.Repeat("long", 20)
	sqlExec(t, b, `CREATE TABLE t (id int PRIMARY KEY, v text)`,
		`CREATE TABLE "Mixed" (id int PRIMARY KEY, n int)`, // n: also the capture function's variable
		`CREATE TABLE `+long+` (id int PRIMARY KEY)`,
		`CREATE TABLE plain (id int PRIMARY KEY)`)
	track(t, b, "t")
	track(t, b, "Mixed")
	track(t, b, long)
	// Capture is on while a stream is on the table.
	mkStream(t, b, "t_s", "t", "", false)
	mkStream(t, b, "mixed_s", "Mixed", "", false)
	mkStream(t, b, "long_s", long, "", false)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net, not an assertion
	defer cancel()
	conn := connect(ctx, t, u)
	receive := listenUntilMarker(ctx, t, b, conn, NotifyChannel("t"), NotifyChannel("Mixed"), NotifyChannel(long), NotifyChannel("plain"))
	// Two channels in one call (as serve registers all of its channels).
	if err := RegisterListeners(ctx, conn, []string{NotifyChannel("t"), NotifyChannel("Mixed")}); err != nil {
		t.Fatal(err)
	}

	sqlExec(t, b, `INSERT INTO plain VALUES (1)`)
	inTx(t, b, false, `INSERT INTO t VALUES (1, 'x')`)
	sqlExec(t, b, `UPDATE t SET v = 'y' WHERE false`, `DELETE FROM t WHERE id = 42`)
	check(t, "untracked, rolled back, no rows", receive(), nil)

	inTx(t, b, true, `INSERT INTO t VALUES (1, 'a'), (2, 'b')`, `UPDATE t SET v = 'c' WHERE id = 1`, `DELETE FROM t WHERE id = 2`)
	check(t, "one transaction, three statements", receive(), []string{NotifyChannel("t")})

	sqlExec(t, b, `INSERT INTO "Mixed" VALUES (1)`, `INSERT INTO `+long+` VALUES (1)`)
	check(t, "a quoted name; a long one nobody registered on", receive(), []string{NotifyChannel("Mixed")})
	if err := RegisterListener(ctx, conn, NotifyChannel(long)); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, b, `INSERT INTO `+long+` VALUES (2)`, `TRUNCATE t`)
	check(t, "a long name, registered; truncate", receive(), []string{NotifyChannel(long), NotifyChannel("t")})

	// Enabling again keeps notifying (the function is rewritten).
	track(t, b, "t")
	sqlExec(t, b, `INSERT INTO t VALUES (3, 'z')`)
	check(t, "after enabling again", receive(), []string{NotifyChannel("t")})
}

// TestRegisterListenerRemovesEnded: registering removes the rows of
// sessions that have ended, so writers stop notifying for them.
func TestRegisterListenerRemovesEnded(t *testing.T) {
	b, u := openDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net, not an assertion
	defer cancel()
	rows := func() int {
		t.Helper()
		var n int
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM sluice.listeners WHERE channel = 'gone'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	gone := connect(ctx, t, u)
	if err := RegisterListener(ctx, gone, "gone"); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 1 {
		t.Fatalf("%d rows for a registered session, want 1", n)
	}
	closeAndWait(ctx, t, b, gone)
	other := connect(ctx, t, u)
	if err := RegisterListener(ctx, other, "other"); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 0 {
		t.Errorf("%d rows left for an ended session, want 0", n)
	}
}

// listenUntilMarker LISTENs on conn to channels and to a marker channel,
// and returns a function that sends the marker and returns the channels
// notified before it, in order. Notifications arrive in commit order, so
// the marker bounds what is received without any timing.
func listenUntilMarker(ctx context.Context, t *testing.T, b *Backend, conn *pgx.Conn, channels ...string) func() []string {
	t.Helper()
	const marker = "sluice_test_marker"
	for _, ch := range append(channels, marker) {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	return func() []string {
		t.Helper()
		sqlExec(t, b, `SELECT pg_notify('`+marker+`', '')`)
		var got []string
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				t.Fatalf("after %q: %v", got, err)
			}
			if n.Channel == marker {
				return got
			}
			got = append(got, n.Channel)
		}
	}
}

// closeAndWait closes conn and waits until the server has ended its
// session.
func closeAndWait(ctx context.Context, t *testing.T, b *Backend, conn *pgx.Conn) {
	t.Helper()
	pid := conn.PgConn().PID()
	_ = conn.Close(ctx)
	for {
		var alive bool
		if err := b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)`, pid).Scan(&alive); err != nil {
			t.Fatal(err)
		}
		if !alive {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the closed session never ended")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestNotifyStopsWhenListenerEnds: writers notify while a registered
// session lives, and stop as soon as it ends, with no registration in
// between to clean up after it (the advisory lock of notifyGate goes
// with the session). A second session only LISTENs, to see what is sent.
func TestNotifyStopsWhenListenerEnds(t *testing.T) {
	b, u := openDB(t)
	sqlExec(t, b, `CREATE TABLE ne (id int PRIMARY KEY)`)
	track(t, b, "ne")
	mkStream(t, b, "ne_s", "ne", "", false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net, not an assertion
	defer cancel()
	ch := NotifyChannel("ne")
	watch := connect(ctx, t, u)
	receive := listenUntilMarker(ctx, t, b, watch, ch)
	reg := connect(ctx, t, u)
	if err := RegisterListener(ctx, reg, ch); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, b, `INSERT INTO ne VALUES (1)`)
	check(t, "while a registered session lives", receive(), []string{ch})
	closeAndWait(ctx, t, b, reg)
	sqlExec(t, b, `INSERT INTO ne VALUES (2)`)
	check(t, "after it ended", receive(), nil)
}

// TestWakerWakesOnCommit: a subscription to serve's PGListener,
// registering with RegisterListener as `sluice serve` does, wakes when a
// tracked table's writing transaction commits.
func TestWakerWakesOnCommit(t *testing.T) {
	b, u := openDB(t)
	sqlExec(t, b, `CREATE TABLE wk (id int PRIMARY KEY)`)
	track(t, b, "wk")
	mkStream(t, b, "wk_s", "wk", "", false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net, not an assertion
	defer cancel()
	ch := NotifyChannel("wk")
	l := serve.NewPGListener(ctx, u, RegisterListeners, nil)
	defer l.Close()
	w := l.Subscribe(ch)
	defer w.Close()
	select { // the first wake-up says the LISTEN is in place
	case <-w.C():
	case <-ctx.Done():
		t.Fatal("no wake-up once listening")
	}
	sqlExec(t, b, `INSERT INTO wk VALUES (1)`)
	select {
	case <-w.C():
	case <-ctx.Done():
		t.Fatal("no wake-up after a committed insert")
	}
}
