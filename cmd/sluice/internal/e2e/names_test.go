package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerbsResolveNamesAlike: validate, plan, preview and run read a
// backquoted name in a job file as the name inside the backquotes (#16.9:
// validate and preview took `group`, run refused it), and all refuse a
// malformed one with the same error.
func TestVerbsResolveNamesAlike(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "x.db")
	if out := run(ctx, "sql", "--conn", db, "CREATE TABLE `order` (id INT, PRIMARY KEY (id));\n"+
		"ALTER TABLE `order` SET PROPERTIES ('change_tracking' = 'true');\n"+
		"CREATE TABLE STREAM `group` ON TABLE `order` WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');\n"+
		"INSERT INTO `order` VALUES (1), (2);"); !strings.HasPrefix(out, "exit 0") {
		t.Fatal(out)
	}
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("name: j\nsource: \"`group`\"\nsink: {table: \"`select`\", mode: merge, keys: [\"`id`\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"validate", good},
		{"plan", "--conn", db, good},
		{"preview", "--conn", db, "`group`"},
		{"run", "--conn", db, good},
	} {
		if out := run(ctx, args...); !strings.HasPrefix(out, "exit 0") {
			t.Errorf("sluice %s:\n%s", strings.Join(args, " "), out)
		}
	}
	out := run(ctx, "sql", "--conn", db, "--format", "jsonl", "SELECT count(*) AS n FROM `select`")
	if !strings.Contains(out, `"n":2`) {
		t.Errorf("the run wrote to another table than `select`: %s", out)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: j\nsource: \"`group\"\nsink: {table: t}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "bad.yaml:2:9: name `group: a backquoted name is `name`"
	for _, args := range [][]string{{"validate", bad}, {"plan", "--conn", db, bad}, {"run", "--conn", db, bad}} {
		if out := run(ctx, args...); strings.HasPrefix(out, "exit 0") || !strings.Contains(out, want) {
			t.Errorf("sluice %s: want an error %q, got\n%s", strings.Join(args, " "), want, out)
		}
	}
	if out := run(ctx, "preview", "--conn", db, "`group"); strings.HasPrefix(out, "exit 0") || !strings.Contains(out, "a backquoted name is `name`") {
		t.Errorf("preview `group: %s", out)
	}
}
