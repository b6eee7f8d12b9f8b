package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffCLI: exit 0 and EQUAL for an equal target, exit 1 with counts,
// examples and pending changes for a different one (text and JSON), exit 2
// for a job that cannot be diffed.
func TestDiffCLI(t *testing.T) {
	d := itemsDB(t)
	sink := "sqlite:" + filepath.Join(d.dir, "sink.db")
	path := writeFile(t, d.dir, "job.yaml", "source: items_s\nsink: {table: copy2, mode: merge, keys: [id], connection: "+sink+"}\n")
	mustSluice(t, "backfill", "--conn", d.conn, path)

	r := mustSluice(t, "diff", "--conn", d.conn, path)
	for _, want := range []string{"job: items → copy2 (merge by id): EQUAL", "rows: source 30, target 30; missing 0, extra 0, different 0", "pending: none"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("equal: no %q in\n%s", want, r.stdout)
		}
	}

	mustSluice(t, "sql", "--conn", sink, "UPDATE copy2 SET name = '' WHERE id = 7; DELETE FROM copy2 WHERE id = 8")
	mustSluice(t, "sql", "--conn", d.conn, "UPDATE items SET amount = 1 WHERE id = 9")
	r = sluice(t, "diff", "--conn", d.conn, "--limit", "2", path)
	if r.code != 1 {
		t.Fatalf("different: want exit 1: %v", r)
	}
	for _, want := range []string{
		"DIFFERENT", "missing 1, extra 0, different 2",
		"pending: 2 (UPDATE_BEFORE 1, UPDATE_AFTER 1) changes after offset",
		"examples (2 of 3):", `different id=7: name source n7, target ""`, "different id=9: amount source 1, target 900.09",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("different: no %q in\n%s", want, r.stdout)
		}
	}

	r = sluice(t, "diff", "--conn", d.conn, "--format", "json", path)
	var j struct {
		Equal                     bool
		Missing, Extra, Different int64
		Examples                  []struct {
			Kind    string
			Key     map[string]*string
			Columns []struct {
				Column         string
				Source, Target *string
			}
		}
		Pending struct{ Changes int64 }
	}
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil || r.code != 1 {
		t.Fatalf("json: %v\n%v", err, r)
	}
	if j.Equal || j.Missing != 1 || j.Different != 2 || len(j.Examples) != 3 || j.Pending.Changes != 2 {
		t.Errorf("json: %+v", j)
	}
	if ex := j.Examples[2]; ex.Kind != "missing" || ex.Key["id"] == nil || *ex.Key["id"] != "8" {
		t.Errorf("json example: %+v", ex)
	}

	appendJob := writeFile(t, d.dir, "append.yaml", "source: items_s\nsink: {table: log, mode: append, connection: "+sink+"}\n")
	r = sluice(t, "diff", "--conn", d.conn, appendJob)
	if r.code != 2 || !strings.Contains(r.stderr, "mode append writes one target row per change") {
		t.Errorf("append job: want exit 2 with the reason: %v", r)
	}
	// A job file that is not there is an error (2), never "different" (1).
	r = sluice(t, "diff", "--conn", d.conn, filepath.Join(d.dir, "no_such_job"))
	if r.code != 2 || !strings.Contains(r.stderr, "no_such_job") {
		t.Errorf("missing job file: want exit 2 naming it: %v", r)
	}
}
