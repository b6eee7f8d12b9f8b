package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadersCreateNoDatabase (#16.8): status, preview, plan, history,
// validate, and run against a missing source database create no file; each
// that needs the database says which path is missing. plan with a sink
// database that does not exist yet plans against an empty stand-in and
// creates nothing either. sluice sql creates its database.
func TestReadersCreateNoDatabase(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo.db")
	conn := "sqlite:" + missing
	job := filepath.Join(dir, "j.yaml")
	if err := os.WriteFile(job, []byte("name: j\nsource: s\nsink: {table: t}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"status", "--conn", conn, "--state", conn, job},
		{"history", "--state", conn},
		{"preview", "--conn", conn, "s"},
		{"plan", "--conn", conn, job},
		{"run", "--conn", conn, job},
		{"validate", job},
	} {
		out := run(ctx, args...)
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("sluice %s created %s:\n%s", args[0], missing, out)
		}
		if args[0] != "validate" && (strings.HasPrefix(out, "exit 0") || !strings.Contains(out, "sqlite database file does not exist: "+missing)) {
			t.Errorf("sluice %s: want an error naming %s, got\n%s", args[0], missing, out)
		}
	}

	// A source that exists and a sink database that does not: plan plans
	// as for a new database and leaves no file; run creates it.
	src := "sqlite:" + filepath.Join(dir, "src.db")
	if out := run(ctx, "sql", "--conn", src, "CREATE TABLE o (id INT, PRIMARY KEY (id));\n"+
		"ALTER TABLE o SET PROPERTIES ('change_tracking' = 'true');\n"+
		"CREATE TABLE STREAM s ON TABLE o WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');"); !strings.HasPrefix(out, "exit 0") {
		t.Fatal(out)
	}
	sink := filepath.Join(dir, "new_sink.db")
	job2 := filepath.Join(dir, "k.yaml")
	if err := os.WriteFile(job2, []byte("name: k\nsource: s\nsink: {table: t, connection: 'sqlite:"+sink+"'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(ctx, "plan", "--conn", src, job2)
	if !strings.HasPrefix(out, "exit 0") || !strings.Contains(out, "sqlite:"+sink) {
		t.Fatalf("plan with a new sink database:\n%s", out)
	}
	if _, err := os.Stat(sink); err == nil {
		t.Fatalf("plan created %s", sink)
	}
	if out := run(ctx, "run", "--conn", src, job2); !strings.HasPrefix(out, "exit 0") {
		t.Fatalf("run: %s", out)
	}
	if _, err := os.Stat(sink); err != nil {
		t.Fatalf("run did not create the sink database: %v", err)
	}
}
