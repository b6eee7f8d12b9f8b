package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestJobFile: `sluice test JOB.yaml` runs JOB.test.yaml beside it;
// a job without a test file is a usage error naming the file to write.
func TestTestJobFile(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"orders_append.yaml", "orders_append.test.yaml", "orders_merge.sql", "setup.sql"} {
		b, err := os.ReadFile(repoPath("examples/orders/" + n))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, n, string(b))
	}
	direct := mustSluice(t, "test", filepath.Join(dir, "orders_append.test.yaml")).stdout
	viaJob := mustSluice(t, "test", filepath.Join(dir, "orders_append.yaml")).stdout
	summary := func(s string) string { // "ok 3 passed, … in 1 file" without the duration
		s, _, _ = strings.Cut(s, " (")
		return s
	}
	if !strings.HasPrefix(viaJob, "ok ") || !strings.Contains(viaJob, " in 1 file (") || summary(viaJob) != summary(direct) {
		t.Errorf("sluice test JOB.yaml printed %q; the test file itself %q", viaJob, direct)
	}
	r := sluice(t, "test", filepath.Join(dir, "orders_merge.sql"))
	if r.code != 2 || !strings.Contains(r.stderr, "orders_merge.sql is a job, not a test file: its tests go in orders_merge.test.yaml beside it") {
		t.Errorf("sluice test of a job without tests: want exit 2 naming orders_merge.test.yaml; %v", r)
	}
}
