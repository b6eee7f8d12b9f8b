package cli_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// nextCommands returns the `sluice …` commands init printed after "Next:",
// as argument lists (comments cut), and the directory of a `cd` line.
func nextCommands(t *testing.T, out string) (cd string, cmds [][]string) {
	t.Helper()
	_, next, ok := strings.Cut(out, "\nNext:\n")
	if !ok {
		t.Fatalf("no Next: section in\n%s", out)
	}
	for _, line := range strings.Split(next, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "cd":
			cd = f[1]
		case len(f) > 1 && f[0] == "sluice":
			cmds = append(cmds, f[1:])
		}
	}
	return cd, cmds
}

// TestInit scaffolds a project into an empty directory, validates it, and
// runs the commands init prints, checking the rows the jobs wrote; a second
// init into the same directory refuses and changes nothing.
func TestInit(t *testing.T) {
	t.Chdir(t.TempDir())
	r := mustSluice(t, "init", "proj")
	want := []string{".gitignore", "README.md", "jobs/orders_copy.test.yaml", "jobs/orders_copy.yaml",
		"jobs/orders_events.sql", "jobs/orders_events.test.yaml", "setup.sql"}
	for _, f := range want {
		if !strings.Contains(r.stdout, "created "+filepath.Join("proj", f)+"\n") {
			t.Errorf("init did not report %s:\n%s", f, r.stdout)
		}
	}
	cd, cmds := nextCommands(t, r.stdout)
	if cd != "proj" || len(cmds) != 3 {
		t.Fatalf("next commands: cd %q, %q; want cd proj and three commands", cd, cmds)
	}
	t.Chdir("proj")
	r = mustSluice(t, "validate", "jobs/")
	for _, j := range []string{"orders_copy", "orders_events"} {
		if !strings.Contains(r.stdout, "ok (job "+j+")") {
			t.Errorf("validate does not accept %s:\n%v", j, r)
		}
	}
	// The job tests made for each job pass (sluice test: in-memory SQLite).
	r = mustSluice(t, "test", "jobs/")
	if !strings.Contains(r.stdout, "2 passed, 0 failed") {
		t.Errorf("sluice test jobs/ of the scaffold:\n%v", r)
	}
	if gi, err := os.ReadFile(".gitignore"); err != nil || !strings.Contains(string(gi), "\n*.db\n") {
		t.Errorf(".gitignore has no *.db line (%v):\n%s", err, gi)
	}

	// The printed commands: setup, run, serve (serve runs until stopped:
	// its paths are checked, not run).
	if !slices.Equal(cmds[0], []string{"sql", "-f", "setup.sql"}) || cmds[1][0] != "run" || cmds[2][0] != "serve" {
		t.Fatalf("next commands %q, want sql -f setup.sql, run …, serve …", cmds)
	}
	mustSluice(t, cmds[0]...)
	r = mustSluice(t, cmds[1]...)
	if strings.Contains(r.stderr, "warning") {
		t.Errorf("the scaffold's jobs have plan warnings:\n%s", r.stderr)
	}
	if _, err := os.Stat(cmds[2][len(cmds[2])-1]); err != nil {
		t.Errorf("serve's argument: %v", err)
	}
	// Both jobs copied the three demo rows, in the default database.
	for _, q := range []string{"SELECT id, customer, amount, status FROM orders_copy ORDER BY id",
		"SELECT id, customer, amount FROM orders_events ORDER BY id"} {
		tb := parseTable(t, mustSluice(t, "sql", "--conn", "sqlite:sluice.db", q).stdout)
		got := tb.project(t, "id", "customer", "amount")
		if want := []string{"1 Alice 1000.00", "2 Bob 2000.00", "3 Carol 500.00"}; !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", q, got, want)
		}
	}

	// A second init refuses, names every existing file, and writes
	// nothing: a file the user changed stays as it was.
	if err := os.WriteFile("README.md", []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = sluice(t, "init", ".")
	if r.code != 2 || !strings.Contains(r.stderr, "refusing to overwrite") || !strings.Contains(r.stderr, "README.md") || !strings.Contains(r.stderr, "setup.sql") {
		t.Errorf("init over a project: want exit 2 naming the files; %v", r)
	}
	if b, _ := os.ReadFile("README.md"); string(b) != "mine\n" {
		t.Errorf("README.md overwritten: %q", b)
	}
}

// TestInitConn: --conn goes into the printed commands and the README with
// its password masked, never into a job file.
func TestInitConn(t *testing.T) {
	dir := t.TempDir()
	r := mustSluice(t, "init", dir, "--conn", "postgres://app:s3cret@db.example:5432/shop")
	if strings.Contains(r.stdout+r.stderr, "s3cret") {
		t.Errorf("the password appears in init's output:\n%v", r)
	}
	_, cmds := nextCommands(t, r.stdout)
	if len(cmds) != 3 || !slices.Contains(cmds[0], "--conn") {
		t.Errorf("next commands %q do not pass --conn", cmds)
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if strings.Contains(string(b), "s3cret") {
			t.Errorf("%s holds the password", p)
		}
		if strings.Contains(p, "jobs") && strings.Contains(string(b), "db.example") {
			t.Errorf("job file %s names the connection", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
