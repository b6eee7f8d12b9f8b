package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cmd/sluice/internal/cli"
)

// countRows runs a count query through `sluice sql` and returns it.
func countRows(t *testing.T, conn, query string) int {
	t.Helper()
	r := mustSluice(t, "sql", "--conn", conn, "--format", "jsonl", query)
	line := strings.TrimSpace(r.stdout)
	i := strings.LastIndexByte(line, ':')
	n, err := strconv.Atoi(strings.Trim(line[i+1:], "} \""))
	if err != nil {
		t.Fatalf("count from %q: %v", line, err)
	}
	return n
}

// TestServeShutdownMidBatch stops `sluice serve` the way SIGTERM does (its
// context ends; main's signal.NotifyContext) while a continuous job moves a
// large backlog to another database. With no grace the cut run commits
// nothing: the sink has all rows of a run or none, and the stream keeps
// what was not committed. With a grace period the running batch commits
// after the signal and the work is done exactly once.
func TestServeShutdownMidBatch(t *testing.T) {
	dir := t.TempDir()
	src, sink := "sqlite:"+filepath.Join(dir, "src.db"), "sqlite:"+filepath.Join(dir, "sink.db")
	mustSluice(t, "sql", "--conn", src, `
CREATE TABLE big (id BIGINT, v DECIMAL(12,2), PRIMARY KEY (id));
ALTER TABLE big SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM big_s ON TABLE big WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');`)
	const rows = 60000
	var ins strings.Builder
	for i := 0; i < rows; i += 1000 {
		ins.WriteString("INSERT INTO big VALUES ")
		for j := i; j < i+1000; j++ {
			if j > i {
				ins.WriteString(", ")
			}
			ins.WriteString("(" + strconv.Itoa(j) + ", " + strconv.Itoa(j) + ".25)")
		}
		ins.WriteString(";\n")
	}
	mustSluice(t, "sql", "--conn", src, ins.String())
	jobs := filepath.Join(dir, "jobs")
	if err := os.MkdirAll(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	job := "name: copy\nsource: big_s\nsink: {table: copy, mode: append, connection: '" + sink + "'}\nschedule: continuous\n"
	if err := os.WriteFile(filepath.Join(jobs, "copy.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	serve := func(stopAfter time.Duration, grace string) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan int, 1)
		var out, errb bytes.Buffer
		go func() {
			done <- cli.Main(ctx, []string{"serve", "--conn", src, "--grace", grace, "--state", "sqlite:" + filepath.Join(dir, "state.db"), jobs},
				strings.NewReader(""), &out, &errb)
		}()
		time.Sleep(stopAfter)
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Fatalf("serve exited %d: %s", code, errb.String())
			}
			t.Logf("serve log:\n%s", errb.String())
		case <-time.After(2 * time.Minute):
			t.Fatal("serve did not stop after its context ended")
		}
	}

	// Stop shortly after the start, with no grace: the first run is cut.
	serve(150*time.Millisecond, "0s")
	sinkTables := countRows(t, sink, "SELECT count(*) FROM sqlite_schema WHERE name = 'copy'")
	n := 0
	if sinkTables == 1 {
		n = countRows(t, sink, "SELECT count(*) FROM copy")
	}
	pending := countRows(t, src, "SELECT count(*) FROM big_s")
	if n != 0 && n != rows {
		t.Fatalf("after the cut the sink has %d rows: a run must commit all %d or none", n, rows)
	}
	if n+pending != rows {
		t.Fatalf("sink %d + pending %d != %d: the stream's offset and the sink disagree", n, pending, rows)
	}
	t.Logf("after the cut: %d rows committed, %d pending", n, pending)

	// Start again and signal at once, with a grace period: the run that
	// starts before the signal commits within the grace, and finishes the
	// work exactly once.
	// (A start slower than the signal runs nothing; start again then.)
	for range 5 {
		serve(300*time.Millisecond, "120s")
		if countRows(t, src, "SELECT count(*) FROM big_s") == 0 {
			break
		}
	}
	if got := countRows(t, sink, "SELECT count(*) FROM copy"); got != rows {
		t.Fatalf("sink has %d rows after the restart, want %d", got, rows)
	}
	if got := countRows(t, sink, "SELECT count(DISTINCT id) FROM copy"); got != rows {
		t.Fatalf("sink has %d distinct ids, want %d (a change delivered twice)", got, rows)
	}
	if got := countRows(t, sink, "SELECT count(*) FROM copy WHERE v <> id + 0.25"); got != 0 {
		t.Fatalf("%d rows with wrong values", got)
	}
}
