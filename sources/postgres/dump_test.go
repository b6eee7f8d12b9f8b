package postgres

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestPartialDumpRestore: a tracked table dumped alone with the real
// pg_dump (-t) restores into another database without sluice — with
// pg_restore and a list that leaves out the sluice_capture_* triggers
// (the README's recipe) without any error, and with plain psql with only
// the errors of those triggers — and the restored copy is an ordinary,
// untracked table that the application writes and that tracking can be
// enabled on again.
func TestPartialDumpRestore(t *testing.T) {
	pgDump, pgRestore, psql := pgtest.Tool(t, "pg_dump"), pgtest.Tool(t, "pg_restore"), pgtest.Tool(t, "psql")
	run := func(t *testing.T, stdin []byte, name string, args ...string) (string, string, error) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), name, args...)
		var out, errb bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	b, src := openDB(t)
	sqlExec(t, b, `CREATE TABLE "order" (id int PRIMARY KEY, "user" text NOT NULL)`, `INSERT INTO "order" VALUES (1, 'ann'), (2, 'bob')`)
	track(t, b, "order")
	mkStream(t, b, "order_s", "order", "STANDARD", false)
	sqlExec(t, b, `UPDATE "order" SET "user" = 'bo' WHERE id = 2`)

	dir := t.TempDir()
	custom := filepath.Join(dir, "order.dump")
	if _, stderr, err := run(t, nil, pgDump, "-Fc", "-t", `public."order"`, "-f", custom, "-d", src); err != nil {
		t.Fatalf("pg_dump -Fc: %v\n%s", err, stderr)
	}
	toc, stderr, err := run(t, nil, pgRestore, "-l", custom)
	if err != nil {
		t.Fatalf("pg_restore -l: %v\n%s", err, stderr)
	}
	var keep []string
	dropped := 0
	for _, line := range strings.Split(toc, "\n") {
		if strings.Contains(line, " TRIGGER ") && strings.Contains(line, " sluice_capture_") {
			dropped++
			continue
		}
		keep = append(keep, line)
	}
	if dropped != len(triggerNames) {
		t.Fatalf("the dump's list has %d sluice_capture_ triggers, want %d:\n%s", dropped, len(triggerNames), toc)
	}
	list := filepath.Join(dir, "order.list")
	if err := os.WriteFile(list, []byte(strings.Join(keep, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	plain, stderr, err := run(t, nil, pgDump, "-t", `public."order"`, "-d", src)
	if err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, stderr)
	}

	for _, tc := range []struct {
		name    string
		restore func(t *testing.T, dest string)
	}{
		{"pg_restore -L without the triggers", func(t *testing.T, dest string) {
			if _, stderr, err := run(t, nil, pgRestore, "--exit-on-error", "-L", list, "-d", dest, custom); err != nil || stderr != "" {
				t.Fatalf("pg_restore -L: %v\n%s", err, stderr)
			}
		}},
		{"plain pg_dump | psql", func(t *testing.T, dest string) {
			_, stderr, err := run(t, []byte(plain), psql, "-q", "-d", dest)
			if err != nil {
				t.Fatalf("psql: %v\n%s", err, stderr)
			}
			// Only the capture triggers fail: each CREATE TRIGGER names
			// sluice's function and each ENABLE ALWAYS its trigger.
			for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
				if !strings.Contains(line, `schema "sluice" does not exist`) && !strings.Contains(line, `trigger "sluice_capture_`) {
					t.Errorf("psql error not about sluice's triggers: %s", line)
				}
			}
			// As many as the README says: one per CREATE TRIGGER and one
			// per ENABLE ALWAYS.
			if n := strings.Count(stderr, "ERROR:"); n != 2*len(triggerNames) {
				t.Errorf("psql printed %d errors, want %d (the README's count):\n%s", n, 2*len(triggerNames), stderr)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := pgtest.NewDatabase(t)
			tc.restore(t, dest)
			app := connect(t.Context(), t, dest)
			for _, q := range []string{`INSERT INTO "order" VALUES (3, 'cy')`, `UPDATE "order" SET "user" = 'al' WHERE id = 1`, `TRUNCATE "order"`, `INSERT INTO "order" VALUES (4, 'di')`} {
				if _, err := app.Exec(t.Context(), q); err != nil {
					t.Fatalf("application on the restored copy: %s: %v", q, err)
				}
			}
			var triggers int
			var schema bool
			if err := app.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = '"order"'::regclass),
				EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'sluice')`).Scan(&triggers, &schema); err != nil {
				t.Fatal(err)
			}
			if triggers != 0 || schema {
				t.Fatalf("restored copy: %d triggers, schema sluice %v; want an untracked table", triggers, schema)
			}
			// Tracking the copy again: enable, create a stream, and the
			// application's next changes are read.
			b2, err := Open(t.Context(), dest, b.log)
			if err != nil {
				t.Fatal(err)
			}
			defer b2.Close()
			track(t, b2, "order")
			mkStream(t, b2, "order_s", "order", "STANDARD", false)
			if _, err := app.Exec(t.Context(), `INSERT INTO "order" VALUES (5, 'ed'); DELETE FROM "order" WHERE id = 4`); err != nil {
				t.Fatal(err)
			}
			_, got := read(t, b2, "order_s", true)
			check(t, "changes of the re-tracked copy", sorted(got), []string{"DELETE 4 di", "INSERT 5 ed"})
		})
	}
}

// TestWholeDumpRestore: a whole database with a tracked table, dumped and
// restored into another database of the same cluster (the table gets a new
// oid, its capture triggers and sluice's schema come along), goes on: its
// stream reads the changes pending at the dump and the application's
// changes in the copy, and enabling tracking again records the new oid,
// instead of reading the table as dropped.
func TestWholeDumpRestore(t *testing.T) {
	pgDump, psql := pgtest.Tool(t, "pg_dump"), pgtest.Tool(t, "psql")
	b, src := openDB(t)
	sqlExec(t, b, `CREATE TABLE "order" (id int PRIMARY KEY, "user" text NOT NULL)`, `INSERT INTO "order" VALUES (1, 'ann'), (2, 'bob')`)
	track(t, b, "order")
	mkStream(t, b, "order_s", "order", "STANDARD", false)
	sqlExec(t, b, `UPDATE "order" SET "user" = 'bo' WHERE id = 2`)
	out, err := exec.CommandContext(t.Context(), pgDump, "-d", src).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	dest := pgtest.NewDatabase(t)
	cmd := exec.CommandContext(t.Context(), psql, "-q", "-v", "ON_ERROR_STOP=1", "-d", dest)
	cmd.Stdin = bytes.NewReader(out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, msg)
	}
	app := connect(t.Context(), t, dest)
	if _, err := app.Exec(t.Context(), `INSERT INTO "order" VALUES (3, 'cy')`); err != nil {
		t.Fatal(err)
	}
	b2, err := Open(t.Context(), dest, b.log)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	_, got := read(t, b2, "order_s", true)
	check(t, "restored copy's stream", sorted(got), []string{"INSERT 3 cy", "UPDATE_AFTER 2 bo", "UPDATE_BEFORE 2 bob"})
	// The function's shape check names the original's oid, so the restored
	// copy logged row 3 as JSON; the read wrote the function again for the
	// table's oid, and the next row is logged typed again.
	if _, err := app.Exec(t.Context(), `INSERT INTO "order" VALUES (4, 'dee')`); err != nil {
		t.Fatal(err)
	}
	var json bool
	if err := b2.pool.QueryRow(t.Context(), `SELECT __extra IS NOT NULL FROM sluice.log_order ORDER BY __seq DESC LIMIT 1`).Scan(&json); err != nil {
		t.Fatal(err)
	}
	if json {
		t.Error("after the first read of the restored copy, a row is still logged as JSON")
	}
	_, got = read(t, b2, "order_s", true)
	check(t, "restored copy's stream, next read", got, []string{"INSERT 4 dee"})
	track(t, b2, "order")
	var recorded, now uint32
	if err := b2.pool.QueryRow(t.Context(), `SELECT relid, '"order"'::regclass::oid FROM sluice.tracking WHERE table_name = 'order'`).Scan(&recorded, &now); err != nil {
		t.Fatal(err)
	}
	if recorded != now {
		t.Errorf("tracking records oid %d after enabling again, the table's is %d", recorded, now)
	}
	if _, err := app.Exec(t.Context(), `DELETE FROM "order" WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	_, got = read(t, b2, "order_s", true)
	check(t, "after enabling again", got, []string{"DELETE 1 ann"})
}

// TestWholeDumpRestoreDisable: disabling tracking on a restored copy that
// was never enabled again (its tracking records the original's oid)
// removes its triggers, function and log.
func TestWholeDumpRestoreDisable(t *testing.T) {
	pgDump, psql := pgtest.Tool(t, "pg_dump"), pgtest.Tool(t, "psql")
	b, src := openDB(t)
	sqlExec(t, b, `CREATE TABLE dt (id int PRIMARY KEY)`)
	track(t, b, "dt")
	out, err := exec.CommandContext(t.Context(), pgDump, "-d", src).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	dest := pgtest.NewDatabase(t)
	cmd := exec.CommandContext(t.Context(), psql, "-q", "-v", "ON_ERROR_STOP=1", "-d", dest)
	cmd.Stdin = bytes.NewReader(out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, msg)
	}
	b2, err := Open(t.Context(), dest, b.log)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if err := b2.DisableTracking(t.Context(), "dt"); err != nil {
		t.Fatalf("disable tracking on the restored copy: %v", err)
	}
	var triggers, logs int
	if err := b2.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'dt'::regclass), (SELECT count(*) FROM pg_class WHERE relname = 'log_dt')`).Scan(&triggers, &logs); err != nil {
		t.Fatal(err)
	}
	if triggers != 0 || logs != 0 {
		t.Errorf("after disabling: %d triggers, %d logs; want none", triggers, logs)
	}
	if _, err := b2.pool.Exec(t.Context(), `INSERT INTO dt VALUES (1)`); err != nil {
		t.Errorf("write after disabling: %v", err)
	}
}
