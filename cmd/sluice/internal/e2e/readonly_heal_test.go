package e2e

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unprivileged returns the uid and gid of a user that file modes apply
// to, and the prefix of a command line that runs a program as that user:
// none when the test does not run as root (file modes apply to it
// already), else "runuser -u nobody --" (or the postgres user). ok is
// false, with the reason, when the test runs as root and there is no such
// user or no runuser.
func unprivileged() (uid, gid int, prefix []string, ok bool, why string) {
	if os.Geteuid() != 0 {
		return os.Getuid(), os.Getgid(), nil, true, ""
	}
	runuser, err := exec.LookPath("runuser")
	if err != nil {
		return 0, 0, nil, false, "running as root, which ignores file modes, and runuser is not installed to run serve as another user"
	}
	for _, name := range []string{"nobody", "postgres"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		return uid, gid, []string{runuser, "-u", name, "--"}, true, ""
	}
	return 0, 0, nil, false, "running as root, which ignores file modes, and neither user nobody nor postgres exists to run serve as"
}

// TestReadOnlySinkHeals: a `sluice serve` process running as an
// unprivileged user (root ignores file modes) whose job's SQLite sink file
// is read-only (chmod 0444) reports the job "retrying" in /healthz with
// the error and the next try, moves no offset, and recovers by itself
// within its backoff once the file is writable again (chmod 0644, after
// 3 s); the recovery time is logged. The file is read-only from before
// serve's first connection to it: a connection keeps the access it opened
// with, so a file made read-only under an open connection goes on being
// written through it, and one opened read-only is dropped from the pool
// when a write fails (sqlitex.DiscardIfCannotWrite), so the next try opens
// the file again.
func TestReadOnlySinkHeals(t *testing.T) {
	if testing.Short() {
		t.Skip("holds a fault for seconds and waits for serve's backoff (skipped with -short)")
	}
	uid, gid, as, ok, why := unprivileged()
	if !ok {
		t.Skip(why)
	}
	ctx := t.Context()
	// A directory the user can reach (t.TempDir's parents are private to
	// the test's user).
	dir, err := os.MkdirTemp("", "sluice-readonly-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sluice")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	src, sinkPath := "sqlite:"+filepath.Join(dir, "src.db"), filepath.Join(dir, "sink.db")
	if out := run(ctx, "sql", "--conn", src, `
CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);
ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');
INSERT INTO t VALUES (1, 'x');`); !strings.HasPrefix(out, "exit 0") {
		t.Fatal(out)
	}
	if out := run(ctx, "sql", "--conn", "sqlite:"+sinkPath, `CREATE TABLE copy (id BIGINT PRIMARY KEY, v TEXT)`); !strings.HasPrefix(out, "exit 0") {
		t.Fatal(out)
	}
	jobs := filepath.Join(dir, "jobs")
	if err := os.MkdirAll(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jobs, "j.yaml"), []byte(fmt.Sprintf("name: j\nsource: s\nsink: {table: copy, mode: append, connection: 'sqlite:%s'}\nschedule: continuous\n", sinkPath)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}); err != nil {
		t.Fatal(err)
	}
	// asUser runs sluice as the user and returns its output and exit code.
	asUser := func(args ...string) (string, int) {
		t.Helper()
		argv := append(append(append([]string(nil), as...), "env", execEnv+"=1", bin), args...)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	// csv runs a query as the user and returns its rows (header first).
	csvRows := func(conn, query string) ([][]string, bool) {
		out, code := asUser("sql", "--conn", conn, "--format", "csv", query)
		if code != 0 {
			return nil, false
		}
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		return rows, err == nil && len(rows) == 2
	}
	offset := func() string {
		t.Helper()
		rows, ok := csvRows(src, "SHOW TABLE STREAMS")
		if !ok {
			t.Fatalf("SHOW TABLE STREAMS: %q", rows)
		}
		for i, c := range rows[0] {
			if c == "offset" {
				return rows[1][i]
			}
		}
		t.Fatalf("SHOW TABLE STREAMS has no offset: %q", rows)
		return ""
	}
	copied := func() int {
		rows, ok := csvRows("sqlite:"+sinkPath, "SELECT count(*) AS n FROM copy")
		if !ok {
			return -1
		}
		n, _ := strconv.Atoi(rows[1][0])
		return n
	}
	start := offset()

	files := []string{sinkPath, sinkPath + "-wal", sinkPath + "-shm"}
	chmod := func(mode os.FileMode) {
		t.Helper()
		for _, f := range files {
			if err := os.Chmod(f, mode); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	chmod(0o444)
	addr := freeAddr(t)
	argv := append(append(append([]string(nil), as...), "env", execEnv+"=1", bin), "serve", "--listen", addr, "--grace", "1s", "--conn", src, "--state", "sqlite:"+filepath.Join(dir, "state.db"), jobs)
	srv := &proc{stdout: &syncBuf{}, stderr: &syncBuf{}, done: make(chan struct{})}
	srv.cmd = exec.Command(argv[0], argv[1:]...)
	srv.cmd.Stdout, srv.cmd.Stderr = srv.stdout, srv.stderr
	// A process group of its own: killing runuser alone would leave serve
	// running, holding the output pipes that Wait waits for.
	srv.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	srv.cmd.WaitDelay = 10 * time.Second
	if err := srv.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = srv.cmd.Wait()
		srv.code = srv.cmd.ProcessState.ExitCode()
		close(srv.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-srv.cmd.Process.Pid, syscall.SIGKILL)
		<-srv.done
	})

	type jobStatus struct {
		Health    string     `json:"health"`
		LastError string     `json:"last_error"`
		NextTry   *time.Time `json:"next_try"`
	}
	status := func() jobStatus {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return jobStatus{}
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var h struct{ Jobs []jobStatus }
		if json.Unmarshal(b, &h) != nil || len(h.Jobs) != 1 {
			return jobStatus{}
		}
		return h.Jobs[0]
	}
	until := func(what string, limit time.Duration, cond func() bool) time.Duration {
		t.Helper()
		t0 := time.Now()
		for !cond() {
			if srv.exited() {
				t.Fatalf("serve exited while waiting for %s:\n%.4000s", what, srv.output())
			}
			if time.Since(t0) > limit {
				t.Fatalf("no %s in %v (status %+v):\n%.4000s", what, limit, status(), srv.output())
			}
			time.Sleep(100 * time.Millisecond)
		}
		return time.Since(t0)
	}
	var st jobStatus
	det := until("retrying with a read-only error in /healthz", 90*time.Second, func() bool {
		st = status()
		return st.Health == "retrying" && strings.Contains(st.LastError, "readonly") && st.NextTry != nil
	})
	hold := 3 * time.Second
	time.Sleep(hold)
	if got := offset(); got != start {
		t.Errorf("the offset moved while the sink was read-only: %s → %s", start, got)
	}
	if st2 := status(); st2.Health != "retrying" {
		t.Errorf("after %v read-only: health %q, want retrying", hold, st2.Health)
	}
	chmod(0o644)
	rec := until("recovery", 180*time.Second, func() bool { return copied() == 1 })
	// The retry after the chmod comes within serve's backoff (1 s doubling;
	// a few seconds after 3 s of failures); a read-only connection left in
	// the pool would fail it until its one-minute lifetime (78 s measured).
	if rec > 30*time.Second {
		t.Errorf("recovered %v after chmod back, want within serve's backoff (< 30 s)", rec.Round(time.Millisecond))
	}
	until("healthy", 30*time.Second, func() bool { return status().Health == "ok" })
	if got := offset(); got == start {
		t.Errorf("the offset did not move after recovery: %s", got)
	}
	t.Logf("read-only sink (serve as uid %d): retrying after %.1fs (error: %.120s; next try %v); held %v; recovered %.2fs after chmod back",
		uid, det.Seconds(), st.LastError, st.NextTry.Format(time.RFC3339), hold, rec.Seconds())
}
