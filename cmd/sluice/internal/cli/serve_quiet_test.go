package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cmd/sluice/internal/cli"
)

// TestServeSQLiteWatch: `sluice serve` watches each SQLite source file
// once (sqlite.LogWatch, serve.PollWatcher). A timed job whose table has
// logged nothing since its last run began is not run at all
// (its fires are skipped as "unchanged"), yet every change still arrives:
// at the next fire for the timed job, and at once for the continuous job
// (woken by the watcher, not by its one-minute safety poll). Writes to an
// untracked table of the same file wake nobody. The expected targets are
// the source tables themselves.
func TestServeSQLiteWatch(t *testing.T) {
	dir := t.TempDir()
	src, sink := "sqlite:"+filepath.Join(dir, "src.db"), "sqlite:"+filepath.Join(dir, "sink.db")
	mustSluice(t, "sql", "--conn", src, `
CREATE TABLE a (id BIGINT, v STRING, PRIMARY KEY (id));
CREATE TABLE b (id BIGINT, v STRING, PRIMARY KEY (id));
CREATE TABLE untracked (x BIGINT);
ALTER TABLE a SET PROPERTIES ('change_tracking' = 'true');
ALTER TABLE b SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM a_s ON TABLE a WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
CREATE TABLE STREAM b_s ON TABLE b WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');`)
	jobs := filepath.Join(dir, "jobs")
	if err := os.MkdirAll(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"timed.yaml": "name: timed\nsource: a_s\nsink: {table: a_copy, mode: merge, keys: [id], connection: '" + sink + "'}\nschedule: '@every 1s'\n",
		"cont.yaml":  "name: cont\nsource: b_s\nsink: {table: b_copy, mode: merge, keys: [id], connection: '" + sink + "'}\nschedule: continuous\n",
	} {
		if err := os.WriteFile(filepath.Join(jobs, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"--log-level", "debug", "serve", "--conn", src, "--state", "sqlite:" + filepath.Join(dir, "state.db"), jobs},
			strings.NewReader(""), &out, &logs)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("serve did not stop")
		}
		if t.Failed() {
			t.Logf("serve log:\n%s", logs.String())
		}
	}()
	count := func(job, msg string) int {
		n := 0
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, msg) && strings.Contains(l+" ", " job="+job+" ") {
				n++
			}
		}
		return n
	}
	// arrives waits until the target equals the source table.
	arrives := func(table string, within time.Duration) time.Duration {
		t.Helper()
		want := mustSluice(t, "sql", "--conn", src, "--format", "jsonl", "SELECT id, v FROM "+table+" ORDER BY id").stdout
		start := time.Now()
		for time.Since(start) < within {
			r := sluice(t, "sql", "--conn", sink, "--format", "jsonl", "SELECT id, v FROM "+table+"_copy ORDER BY id")
			if r.code == 0 && r.stdout == want {
				return time.Since(start)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s_copy did not become %s within %s", table, want, within)
		return 0
	}
	mustSluice(t, "sql", "--conn", src, "INSERT INTO a VALUES (1, 'one'); INSERT INTO b VALUES (1, 'one')")
	arrives("a", 10*time.Second)
	arrives("b", 10*time.Second)

	// Idle, with writes to an untracked table of the same file: the timed
	// job's fires are skipped after one run that finds nothing.
	for i := range 8 {
		mustSluice(t, "sql", "--conn", src, "INSERT INTO untracked VALUES ("+string(rune('0'+i))+")")
		time.Sleep(500 * time.Millisecond)
	}
	skipped := count("timed", "nothing changed since the last run")
	if skipped < 2 {
		t.Errorf("timed job: %d fires skipped as unchanged in 4 s of quiet, want at least 2", skipped)
	}

	// Changes still arrive: the timed job at its next fires, the
	// continuous one woken by the watcher well before its one-minute poll.
	mustSluice(t, "sql", "--conn", src, "UPDATE a SET v = 'uno' WHERE id = 1; INSERT INTO a VALUES (2, NULL)")
	if d := arrives("a", 5*time.Second); d > 3*time.Second {
		t.Errorf("timed job (@every 1s): change arrived after %s", d)
	}
	time.Sleep(2 * time.Second) // let the continuous job go idle
	mustSluice(t, "sql", "--conn", src, "DELETE FROM b WHERE id = 1; INSERT INTO b VALUES (7, 'seven')")
	if d := arrives("b", 10*time.Second); d > 3*time.Second {
		t.Errorf("continuous job: change arrived after %s, want it woken by the watcher", d)
	}
}
