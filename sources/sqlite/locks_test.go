package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sources/sqlite"
)

// TestTrackingWaitsForWriter: enabling and disabling change tracking, and
// creating a table's first stream (which installs the capture triggers),
// while an application's write transaction is open waits for it
// (busy_timeout), and succeeds once it commits, the application's
// transaction going on undisturbed; held past the busy timeout, it fails
// with ErrBusy, saying that nothing was changed. Enabling tracking
// installs no trigger; the first stream does, and reads the changes
// committed after it only.
func TestTrackingWaitsForWriter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		before   bool // tracking enabled before the application's transaction
		stmt     string
		hold     time.Duration
		wantBusy bool
		triggers int
	}{
		{"enable waits", false, "ALTER TABLE lk SET PROPERTIES ('change_tracking' = 'true')", time.Second, false, 0},
		{"first stream waits", true, "CREATE TABLE STREAM lk_s ON TABLE lk WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')", time.Second, false, 6},
		{"disable waits", true, "ALTER TABLE lk SET PROPERTIES ('change_tracking' = 'false')", time.Second, false, 0},
		{"enable gives up", false, "ALTER TABLE lk SET PROPERTIES ('change_tracking' = 'true')", sqlitex.BusyTimeout + 2*time.Second, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.db")
			f := newFixture(t, "sqlite:"+path)
			f.run(`CREATE TABLE lk (id INT, v STRING, PRIMARY KEY (id))`)
			if tc.before {
				f.run(`ALTER TABLE lk SET PROPERTIES ('change_tracking' = 'true')`)
			}
			app := appDB(t, path)
			conn, err := app.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, q := range []string{`BEGIN IMMEDIATE`, `INSERT INTO lk VALUES (1, 'a')`} {
				if _, err := conn.ExecContext(t.Context(), q); err != nil {
					t.Fatalf("application: %s: %v", q, err)
				}
			}
			st, err := dsl.ParseStatements("t.sql", tc.stmt)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := f.b.Exec(context.WithoutCancel(t.Context()), st[0])
				done <- err
			}()
			time.Sleep(tc.hold)
			select {
			case err := <-done:
				if !tc.wantBusy {
					t.Fatalf("%s returned while the application held the write lock: %v", tc.stmt, err)
				}
				if !errors.Is(err, sqlite.ErrBusy) || !strings.Contains(err.Error(), "nothing was changed") || !strings.Contains(err.Error(), "lk") {
					t.Fatalf("%s past the busy timeout: %v, want ErrBusy naming the table and saying nothing changed", tc.stmt, err)
				}
				if d := time.Since(start); d < sqlitex.BusyTimeout {
					t.Errorf("gave up after %s, before the busy timeout %s", d, sqlitex.BusyTimeout)
				}
			default:
				if tc.wantBusy {
					t.Fatalf("%s still waiting after %s", tc.stmt, tc.hold)
				}
			}
			for _, q := range []string{`UPDATE lk SET v = 'b' WHERE id = 1`, `INSERT INTO lk VALUES (2, 'c')`, `COMMIT`} {
				if _, err := conn.ExecContext(t.Context(), q); err != nil {
					t.Fatalf("application after the wait: %s: %v", q, err)
				}
			}
			conn.Close() // the application's one connection, for the queries below
			if !tc.wantBusy {
				if err := <-done; err != nil {
					t.Fatalf("%s after the application committed: %v", tc.stmt, err)
				}
			}
			var n int
			if err := app.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'lk' AND name LIKE 'sluice_capture_%'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != tc.triggers {
				t.Errorf("after %s: %d capture triggers, want %d", tc.name, n, tc.triggers)
			}
			if tc.triggers > 0 {
				// Capture works for the application's next writes.
				f.run(`CREATE TABLE STREAM IF NOT EXISTS lk_s ON TABLE lk WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')`)
				appExec(t, app, `INSERT INTO lk VALUES (3, 'd')`)
				info, err := f.b.Stream(t.Context(), runnerSource("lk_s"))
				if err != nil {
					t.Fatal(err)
				}
				rd, err := f.b.Changes(t.Context(), info, info.Offset, runner.ReadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got, _ := rd.Next(t.Context())
				rd.Close()
				if len(got) != 1 || got[0].Op.String() != "INSERT" {
					t.Errorf("changes after enabling: %v, want the one INSERT", got)
				}
			}
		})
	}
}
