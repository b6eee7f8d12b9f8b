package e2e

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestFreshProcessPushdownWithStateOnSameFile: the README's first command
// in processes of their own — `sluice run` of the orders example's append
// job (pushed down inside orders.db) whose run history and job lock are in
// orders.db as well (the default --state). The history store opens the
// process's shared connections to the file before the source does, so the
// SQL functions the pushdown calls must be on the driver before any
// connection opens (a fresh process failed with 'no such function:
// sluice_dec_same'; in-process tests registered them earlier).
func TestFreshProcessPushdownWithStateOnSameFile(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	ex := filepath.Join(filepath.Dir(here), "..", "..", "..", "..", "examples", "orders")
	conn := "sqlite:" + filepath.Join(t.TempDir(), "orders.db")
	wait := func(args ...string) string {
		t.Helper()
		p := sluiceProc(t, args...)
		select {
		case <-p.done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("sluice %s did not end: %s", strings.Join(args, " "), p.output())
		}
		if p.code != 0 {
			t.Fatalf("sluice %s: exit %d\n%s", strings.Join(args, " "), p.code, p.output())
		}
		return p.output()
	}
	wait("sql", "--conn", conn, "-f", filepath.Join(ex, "setup.sql"))
	wait("sql", "--conn", conn, "-f", filepath.Join(ex, "changes.sql"))
	out := wait("run", "--conn", conn, filepath.Join(ex, "orders_append.yaml"))
	if !strings.Contains(out, "wrote 2 (INSERT 1, UPDATE_AFTER 1)") {
		t.Errorf("run of orders_append: want the seed's INSERT and UPDATE_AFTER written, got:\n%s", out)
	}
}
