package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/dsl"
)

// asUser returns u with its user replaced by user (the test server
// trusts local connections, as internal/pgtest's does).
func asUser(t *testing.T, u, user string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.User = url.User(user)
	return p.String()
}

// newRoles creates LOGIN roles with a random suffix, dropped (with what
// they own in the test database) when the test ends; it returns their
// names in order.
func newRoles(t *testing.T, b *Backend, u string, prefixes ...string) []string {
	t.Helper()
	var r [4]byte
	_, _ = rand.Read(r[:])
	sfx := hex.EncodeToString(r[:])
	var names []string
	for _, p := range prefixes {
		n := p + "_" + sfx
		sqlExec(t, b, `CREATE ROLE `+pgx.Identifier{n}.Sanitize()+` LOGIN`)
		names = append(names, n)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		c, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Log(err)
			return
		}
		defer c.Close(ctx)
		for _, n := range names {
			_, _ = c.Exec(ctx, `DROP OWNED BY `+pgx.Identifier{n}.Sanitize()+` CASCADE`)
			if _, err := c.Exec(ctx, `DROP ROLE `+pgx.Identifier{n}.Sanitize()); err != nil {
				t.Logf("drop role %s: %v", n, err)
			}
		}
	})
	return names
}

// TestWritersWithoutOwnership: tracking enabled by the table's owner (a
// plain role, not a superuser); the application writes as other roles,
// through plain connections: a role with table grants (its own login,
// and SET ROLE), a role with only column grants, and a role under row
// level security that the table forces on its owner too. Every statement
// succeeds and the stream read by the owner holds exactly the table's
// rows as the writers left them.
func TestWritersWithoutOwnership(t *testing.T) {
	super, u := openDB(t)
	ctx := context.Background()
	roles := newRoles(t, super, u, "sl_owner", "sl_app", "sl_cols", "sl_rls")
	owner, app, cols, rls := roles[0], roles[1], roles[2], roles[3]
	q := func(n string) string { return pgx.Identifier{n}.Sanitize() }
	var db string
	if err := super.pool.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, super, `GRANT CREATE ON DATABASE `+q(db)+` TO `+q(owner), `GRANT CREATE ON SCHEMA public TO `+q(owner))

	ob, err := Open(ctx, asUser(t, u, owner), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	sqlExec(t, ob, `CREATE TABLE acct (id int PRIMARY KEY, v text, note text, tenant text)`,
		`INSERT INTO acct VALUES (1, 'owner row', NULL, NULL)`)
	track(t, ob, "acct")
	mkStream(t, ob, "acct_s", "acct", dsl.ModeStandard, false)
	sqlExec(t, ob,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON acct TO `+q(app),
		`GRANT SELECT (id, v), INSERT (id, v), UPDATE (v) ON acct TO `+q(cols),
		`GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON acct TO `+q(rls),
		`ALTER TABLE acct ENABLE ROW LEVEL SECURITY`, `ALTER TABLE acct FORCE ROW LEVEL SECURITY`,
		`CREATE POLICY own ON acct USING (tenant = current_user OR current_user = `+sqlLiteral(owner)+` OR (tenant IS NULL AND current_user <> `+sqlLiteral(rls)+`)) WITH CHECK (tenant = current_user OR current_user <> `+sqlLiteral(rls)+`)`)

	before := tableRowsAll(t, super, `SELECT id, v, note, tenant FROM acct WHERE id = 1`)
	appConn := connect(ctx, t, asUser(t, u, app))
	superConn := connect(ctx, t, u)
	steps := []struct {
		conn *pgx.Conn
		sql  string
	}{
		{appConn, `INSERT INTO acct VALUES (2, 'app', 'n2', NULL), (3, 'app', 'n3', NULL)`},
		{appConn, `UPDATE acct SET v = 'app2' WHERE id = 2`},
		{appConn, `DELETE FROM acct WHERE id = 3`},
		{superConn, `SET ROLE ` + q(app)},
		{superConn, `INSERT INTO acct VALUES (4, 'set role', NULL, NULL)`},
		{superConn, `UPDATE acct SET note = 'via set role' WHERE id = 1`},
		{superConn, `SET ROLE ` + q(cols)},
		{superConn, `INSERT INTO acct (id, v) VALUES (5, 'columns only')`},
		{superConn, `UPDATE acct SET v = 'cols2' WHERE id = 4`},
		{superConn, `SET ROLE ` + q(rls)},
		{superConn, `INSERT INTO acct VALUES (6, 'rls', NULL, ` + sqlLiteral(rls) + `), (7, 'rls', NULL, ` + sqlLiteral(rls) + `)`},
		{superConn, `UPDATE acct SET v = 'rls2'`}, // sees its own rows only
		{superConn, `DELETE FROM acct WHERE id = 7`},
		{superConn, `RESET ROLE`},
	}
	for _, s := range steps {
		if _, err := s.conn.Exec(ctx, s.sql); err != nil {
			t.Fatalf("%s: %v", s.sql, err)
		}
	}
	// Expected: the rows of the table as the owner sees them now (all of
	// them, by the policy), each a net change from the stream's offset.
	want := tableRowsAll(t, super, `SELECT id, v, note, tenant FROM acct ORDER BY id`)
	wantChanges := []string{"UPDATE_BEFORE " + before[0]}
	for _, r := range want {
		if r[:2] == "1 " {
			wantChanges = append(wantChanges, "UPDATE_AFTER "+r)
		} else {
			wantChanges = append(wantChanges, "INSERT "+r)
		}
	}
	_, got := read(t, ob, "acct_s", true)
	check(t, "changes written by non-owner roles", sorted(got), sorted(wantChanges))

	// TRUNCATE by the role under row level security logs every row.
	if _, err := superConn.Exec(ctx, `SET ROLE `+q(rls)); err != nil {
		t.Fatal(err)
	}
	if _, err := superConn.Exec(ctx, `TRUNCATE acct`); err != nil {
		t.Fatalf("TRUNCATE as %s: %v", rls, err)
	}
	var deletes []string
	for _, r := range want {
		deletes = append(deletes, "DELETE "+r)
	}
	_, got = read(t, ob, "acct_s", true)
	check(t, "TRUNCATE by a non-owner role", sorted(got), sorted(deletes))
}

// TestEnableTrackingNeedsOwner: an application role that may write the
// table but does not own it (and has no CREATE on the database) gets, on
// enabling tracking, an error naming the owner — not "permission denied
// for database" from re-creating sluice's schema, which is already there —
// and its stream statements on a table it does not own say the same.
func TestEnableTrackingNeedsOwner(t *testing.T) {
	super, u := openDB(t)
	ctx := t.Context()
	roles := newRoles(t, super, u, "sl_own", "sl_app")
	owner, app := roles[0], roles[1]
	q := func(n string) string { return pgx.Identifier{n}.Sanitize() }
	var db string
	if err := super.pool.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, super, `GRANT CREATE ON DATABASE `+q(db)+` TO `+q(owner), `GRANT CREATE ON SCHEMA public TO `+q(owner))
	ob, err := Open(ctx, asUser(t, u, owner), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	sqlExec(t, ob, `CREATE TABLE items (id int PRIMARY KEY, v text)`, `CREATE TABLE other (id int PRIMARY KEY)`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON items, other TO `+q(app))
	track(t, ob, "items")
	ab, err := Open(ctx, asUser(t, u, app), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ab.Close()
	for _, table := range []string{"items", "other"} {
		err := ab.EnableTracking(ctx, table)
		if !errors.Is(err, ErrNotOwner) || !strings.Contains(err.Error(), owner) || strings.Contains(err.Error(), "create schema") {
			t.Errorf("enable tracking on %s as %s: want ErrNotOwner naming %s, got %v", table, app, owner, err)
		}
	}
	err = ab.CreateStream(ctx, &dsl.CreateStream{Stream: "items_s", Table: "items", Mode: dsl.ModeStandard})
	if !errors.Is(err, ErrNotOwner) {
		t.Errorf("first stream on items as %s: want ErrNotOwner, got %v", app, err)
	}
}

// TestSchemaWithoutColumnsAreUpgraded: a database whose sluice schema was
// made by an earlier sluice (every table, no sluice.columns_are) is
// brought up to date by the next backend, so the capture function it
// writes (which calls columns_are) does not fail the application's writes.
func TestSchemaWithoutColumnsAreUpgraded(t *testing.T) {
	b, u := openDB(t)
	ctx := t.Context()
	sqlExec(t, b, `CREATE TABLE up (id int PRIMARY KEY, v text)`)
	if err := b.ensureSchema(ctx); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, b, `DROP FUNCTION sluice.columns_are(pg_catalog.oid, pg_catalog.name[], pg_catalog.oid[], pg_catalog.int4[], pg_catalog.int4)`)
	nb, err := Open(ctx, u, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	track(t, nb, "up")
	mkStream(t, nb, "up_s", "up", dsl.ModeStandard, false)
	app := connect(ctx, t, u)
	if _, err := app.Exec(ctx, `INSERT INTO up VALUES (1, 'x')`); err != nil {
		t.Fatalf("the application's INSERT after tracking on an upgraded schema: %v", err)
	}
}
