package cli_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the driver sluice's SQLite backend uses

	"github.com/sluicedata/sluice/internal/pgtest"
)

// appDB is the application's own connection to a test database: plain
// database/sql (SQLite) or pgx (PostgreSQL), no sluice in between.
type appDB struct {
	exec func(t *testing.T, q string)
	rows func(t *testing.T, q string) []string // one line per row, columns joined by " "
}

func sqliteApp(path string) appDB {
	open := func(t *testing.T) *sql.DB {
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	return appDB{
		exec: func(t *testing.T, q string) {
			t.Helper()
			db := open(t)
			defer db.Close()
			if _, err := db.ExecContext(t.Context(), q); err != nil {
				t.Fatalf("application: %s: %v", q, err)
			}
		},
		rows: func(t *testing.T, q string) []string {
			t.Helper()
			db := open(t)
			defer db.Close()
			rows, err := db.QueryContext(t.Context(), q)
			if err != nil {
				t.Fatalf("application: %s: %v", q, err)
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var a, b string
				if err := rows.Scan(&a, &b); err != nil {
					t.Fatal(err)
				}
				out = append(out, a+" "+b)
			}
			return out
		},
	}
}

func pgApp(url string) appDB {
	with := func(t *testing.T, f func(c *pgx.Conn)) {
		t.Helper()
		c, err := pgx.Connect(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.WithoutCancel(t.Context()))
		f(c)
	}
	return appDB{
		exec: func(t *testing.T, q string) {
			t.Helper()
			with(t, func(c *pgx.Conn) {
				if _, err := c.Exec(t.Context(), q); err != nil {
					t.Fatalf("application: %s: %v", q, err)
				}
			})
		},
		rows: func(t *testing.T, q string) (out []string) {
			t.Helper()
			with(t, func(c *pgx.Conn) {
				rows, err := c.Query(t.Context(), q)
				if err != nil {
					t.Fatalf("application: %s: %v", q, err)
				}
				vals, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
					var a, b string
					err := r.Scan(&a, &b)
					return a + " " + b, err
				})
				if err != nil {
					t.Fatal(err)
				}
				out = vals
			})
			return out
		},
	}
}

// TestRunReplacedStream: a job whose sink checkpoint belongs to an earlier
// incarnation of its stream (CREATE OR REPLACE TABLE STREAM) fails, names
// both ways forward and moves nothing; --accept-new-stream starts at the
// new stream's offset and records that in the run history; a checkpoint
// written without a stream id (an earlier sluice) is adopted silently.
// Each backend, pushed down (sink in the source database) and through
// sluice (sink in another database).
func TestRunReplacedStream(t *testing.T) {
	type setup struct {
		src, sink, state string
		app, sinkApp     appDB
		checkpoints      string // the sink's checkpoint table
	}
	cases := []struct {
		name string
		make func(t *testing.T) setup
	}{
		{"sqlite pushdown", func(t *testing.T) setup {
			d := newDB(t)
			p := filepath.Join(d.dir, "x.db")
			return setup{src: d.conn, sink: "", state: "sqlite:" + filepath.Join(d.dir, "state.db"), app: sqliteApp(p), sinkApp: sqliteApp(p), checkpoints: "sluice_checkpoints"}
		}},
		{"sqlite through sluice", func(t *testing.T) setup {
			d := newDB(t)
			sink := filepath.Join(d.dir, "sink.db")
			return setup{src: d.conn, sink: "sqlite:" + sink, state: "sqlite:" + filepath.Join(d.dir, "state.db"), app: sqliteApp(filepath.Join(d.dir, "x.db")), sinkApp: sqliteApp(sink), checkpoints: "sluice_checkpoints"}
		}},
		{"postgres pushdown", func(t *testing.T) setup {
			u := pgtest.NewDatabase(t)
			return setup{src: u, state: u, app: pgApp(u), sinkApp: pgApp(u), checkpoints: "sluice.checkpoints"}
		}},
		{"postgres through sluice", func(t *testing.T) setup {
			u, sink := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
			return setup{src: u, sink: sink, state: u, app: pgApp(u), sinkApp: pgApp(sink), checkpoints: "sluice.checkpoints"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.make(t)
			dir := t.TempDir()
			mustSluice(t, "sql", "--conn", s.src, "CREATE TABLE items (id INT, v STRING, PRIMARY KEY (id)); "+
				"ALTER TABLE items SET PROPERTIES ('change_tracking' = 'true'); "+
				"CREATE TABLE STREAM items_s ON TABLE items WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
			text := "name: items_copy\nsource: items_s\nselect: [id, v]\nsink:\n  table: items_copy\n  mode: merge\n  keys: [id]\n"
			if s.sink != "" {
				text += "  connection: " + s.sink + "\n"
			}
			job := writeFile(t, dir, "items_copy.yaml", text)
			target := func() []string { return s.sinkApp.rows(t, "SELECT CAST(id AS TEXT), v FROM items_copy ORDER BY id") }

			s.app.exec(t, "INSERT INTO items VALUES (1, 'a'), (2, 'b')")
			mustSluice(t, "run", "--conn", s.src, job)
			if got, want := target(), []string{"1 a", "2 b"}; !slices.Equal(got, want) {
				t.Fatalf("target after the first run = %q, want %q", got, want)
			}

			// The stream is replaced while a change is pending: the
			// change (3) is in neither the old checkpoint's reach nor
			// the new stream's.
			s.app.exec(t, "INSERT INTO items VALUES (3, 'c')")
			mustSluice(t, "sql", "--conn", s.src, "CREATE OR REPLACE TABLE STREAM items_s ON TABLE items WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
			s.app.exec(t, "INSERT INTO items VALUES (4, 'd')")
			r := sluice(t, "run", "--conn", s.src, job)
			if r.code != 1 {
				t.Fatalf("run after the stream was replaced: exit %d, want 1\n%v", r.code, r)
			}
			for _, want := range []string{"items_copy: FAILED (offset not moved)", "belongs to stream items_s with id", "dropped and created again, replaced",
				"`sluice backfill JOBFILE` (the job file of items_copy)", "`sluice run --accept-new-stream JOBFILE`"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if got, want := target(), []string{"1 a", "2 b"}; !slices.Equal(got, want) {
				t.Fatalf("target after the refused run = %q, want %q", got, want)
			}

			r = mustSluice(t, "run", "--conn", s.src, "--accept-new-stream", "--state", s.state, job)
			if !strings.Contains(r.stdout, "items_copy: note: accepted a new stream (--accept-new-stream)") {
				t.Errorf("accepting run's output lacks the note:\n%v", r)
			}
			if got, want := target(), []string{"1 a", "2 b", "4 d"}; !slices.Equal(got, want) {
				t.Fatalf("target after --accept-new-stream = %q, want %q (3 was written before the new stream)", got, want)
			}
			r = mustSluice(t, "history", "--state", s.state, "--format", "json", "items_copy")
			if !strings.Contains(r.stdout, `"note": "accepted a new stream (--accept-new-stream)`) || !strings.Contains(r.stdout, `"status": "committed"`) {
				t.Errorf("history lacks the accepted run:\n%s", r.stdout)
			}

			// A checkpoint without a stream id (written by an earlier
			// sluice) is adopted: the run reads on from it and the
			// checkpoint names the stream again.
			s.sinkApp.exec(t, "UPDATE "+s.checkpoints+" SET stream_id = '' WHERE job = 'items_copy'")
			s.app.exec(t, "UPDATE items SET v = 'B' WHERE id = 2")
			r = mustSluice(t, "run", "--conn", s.src, job)
			if strings.Contains(r.stdout, "note:") {
				t.Errorf("adopting an id-less checkpoint printed a note:\n%s", r.stdout)
			}
			if got, want := target(), []string{"1 a", "2 B", "4 d"}; !slices.Equal(got, want) {
				t.Fatalf("target after the id-less checkpoint = %q, want %q", got, want)
			}
			if ids := s.sinkApp.rows(t, "SELECT job, stream_id FROM "+s.checkpoints+" WHERE job = 'items_copy'"); len(ids) != 1 || strings.HasSuffix(ids[0], " ") {
				t.Errorf("checkpoint after adoption = %q, want the stream's id", ids)
			}
			// And the normal path is unchanged: no error, nothing re-read.
			r = mustSluice(t, "run", "--conn", s.src, job)
			if got := parseRun(t, r.stdout)["items_copy"]; got.read != "0" {
				t.Errorf("run with nothing new read %q, want 0", got.read)
			}
		})
	}
}

// TestRunRestoredSQLiteSource: a SQLite source file replaced by an earlier
// copy of itself (the application restores a backup, a real file copy)
// while the job's sink, in another file, keeps a checkpoint taken on the
// later state. Whether the restored log is still behind the checkpoint or
// the application has written past it since (the log numbers the same
// seqs again for other changes), the run refuses, saying what happened,
// instead of reading from a position that would skip the application's
// new changes; the target keeps what it had. A checkpoint written by an
// earlier sluice (no anchor) is read on as before.
func TestRunRestoredSQLiteSource(t *testing.T) {
	for _, tc := range []struct {
		name string
		// after the restore, the application's writes (the backup holds
		// seq 1; the checkpoint is at seq 3)
		writes []string
	}{
		{"log behind the checkpoint", []string{"INSERT INTO items VALUES (4, 'd')"}},
		{"log numbered past the checkpoint", []string{"INSERT INTO items VALUES (4, 'd')", "INSERT INTO items VALUES (5, 'e'), (6, 'f')", "UPDATE items SET v = 'A' WHERE id = 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDB(t)
			path := filepath.Join(d.dir, "x.db")
			backup := filepath.Join(d.dir, "backup.db")
			app := sqliteApp(path)
			sink := "sqlite:" + filepath.Join(d.dir, "sink.db")
			mustSluice(t, "sql", "--conn", d.conn, "CREATE TABLE items (id INT, v STRING, PRIMARY KEY (id)); "+
				"ALTER TABLE items SET PROPERTIES ('change_tracking' = 'true'); "+
				"CREATE TABLE STREAM items_s ON TABLE items WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
			job := writeFile(t, d.dir, "items_copy.yaml", "name: items_copy\nsource: items_s\nselect: [id, v]\nsink:\n  table: items_copy\n  mode: merge\n  keys: [id]\n  connection: "+sink+"\n")
			app.exec(t, "INSERT INTO items VALUES (1, 'a')")
			if err := copyFile(path, backup); err != nil { // the backup: a plain copy of the file (no WAL content: the write above was checkpointed by closing)
				t.Fatal(err)
			}
			app.exec(t, "INSERT INTO items VALUES (2, 'b')")
			app.exec(t, "INSERT INTO items VALUES (3, 'c')")
			mustSluice(t, "run", "--conn", d.conn, job)

			// The restore: the backup replaces the file; the application writes on.
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
			if err := copyFile(backup, path); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.writes {
				app.exec(t, w)
			}
			r := sluice(t, "run", "--conn", d.conn, job)
			if r.code != 1 || !strings.Contains(r.stderr, "replaced by an earlier copy (a restored backup)") || !strings.Contains(r.stderr, "sluice backfill") {
				t.Fatalf("run after the restore: want exit 1 naming the restore and sluice backfill\n%v", r)
			}
			if got, want := sqliteApp(filepath.Join(d.dir, "sink.db")).rows(t, "SELECT CAST(id AS TEXT), v FROM items_copy ORDER BY id"), []string{"1 a", "2 b", "3 c"}; !slices.Equal(got, want) {
				t.Errorf("target after the refused run = %q, want %q", got, want)
			}
		})
	}
	t.Run("checkpoint of an earlier sluice", func(t *testing.T) {
		d := newDB(t)
		app := sqliteApp(filepath.Join(d.dir, "x.db"))
		sinkPath := filepath.Join(d.dir, "sink.db")
		mustSluice(t, "sql", "--conn", d.conn, "CREATE TABLE items (id INT, v STRING, PRIMARY KEY (id)); "+
			"ALTER TABLE items SET PROPERTIES ('change_tracking' = 'true'); "+
			"CREATE TABLE STREAM items_s ON TABLE items WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
		job := writeFile(t, d.dir, "items_copy.yaml", "name: items_copy\nsource: items_s\nselect: [id, v]\nsink:\n  table: items_copy\n  mode: merge\n  keys: [id]\n  connection: sqlite:"+sinkPath+"\n")
		app.exec(t, "INSERT INTO items VALUES (1, 'a'), (2, 'b')")
		mustSluice(t, "run", "--conn", d.conn, job)
		sinkApp := sqliteApp(sinkPath)
		cp := sinkApp.rows(t, `SELECT "offset", job FROM sluice_checkpoints WHERE job = 'items_copy'`)
		if len(cp) != 1 || !strings.Contains(cp[0], ":") {
			t.Fatalf("checkpoint = %q, want one offset with an anchor (seq:fingerprint)", cp)
		}
		// The form an earlier sluice wrote: the seq alone, in the sink and in the stream.
		sinkApp.exec(t, `UPDATE sluice_checkpoints SET "offset" = '{"positions":{"":"2"}}' WHERE job = 'items_copy'`)
		app.exec(t, `UPDATE sluice_streams SET "offset" = '2' WHERE name = 'items_s'`)
		app.exec(t, "UPDATE items SET v = 'B' WHERE id = 2")
		r := mustSluice(t, "run", "--conn", d.conn, job)
		if got := parseRun(t, r.stdout)["items_copy"]; !strings.HasPrefix(got.read, "2 ") {
			t.Errorf("run from the earlier checkpoint read %q, want 2 (UPDATE_BEFORE, UPDATE_AFTER)", got.read)
		}
		if got, want := sinkApp.rows(t, "SELECT CAST(id AS TEXT), v FROM items_copy ORDER BY id"), []string{"1 a", "2 B"}; !slices.Equal(got, want) {
			t.Errorf("target = %q, want %q", got, want)
		}
	})
}

// copyFile copies the file src to dst (created or replaced).
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
