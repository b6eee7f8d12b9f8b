package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cmd/sluice/internal/cli"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// chromium returns the path of Debian's headless-capable chromium, or
// skips the test where it is absent outside CI (in CI, .ci/run installs
// it and its absence fails the test).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed in CI (.ci/run installs it)")
	}
	t.Skip("chromium is not installed (apt-get install chromium); the status page's browser test needs it")
	return ""
}

// startServe runs `sluice serve` in-process on a loopback port and returns
// its address; the server stops at the end of the test.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, append([]string{"serve", "--listen", "127.0.0.1:0", "--grace", "5s"}, args...), strings.NewReader(""), &syncBuffer{}, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not stop:\n%s", stderr.String())
		}
	})
	addr := regexp.MustCompile(`msg="serving the status page, /healthz, /livez, /readyz and /metrics" addr=(\S+) status_page=http://\S+/`)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d:\n%s", code, stderr.String())
		default:
		}
	}
	t.Fatalf("serve did not listen:\n%s", stderr.String())
	return ""
}

// waitHealth polls /healthz until every job in names has a last run.
func waitHealth(t *testing.T, addr string, names ...string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			continue
		}
		var body struct {
			Jobs []struct {
				Job     string          `json:"job"`
				LastRun json.RawMessage `json:"last_run"`
			} `json:"jobs"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			continue
		}
		ran := map[string]bool{}
		for _, j := range body.Jobs {
			ran[j.Job] = len(j.LastRun) > 0
		}
		all := true
		for _, n := range names {
			all = all && ran[n]
		}
		if all {
			return
		}
	}
	t.Fatalf("jobs %q did not run", names)
}

var (
	tagRE   = regexp.MustCompile(`<[^>]*>`)
	spaceRE = regexp.MustCompile(`\s+`)
)

// rowText returns the text of the table row of job in a dumped DOM.
func rowText(t *testing.T, dom, job string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<tr id="job-` + regexp.QuoteMeta(job) + `">(.*?)</tr>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no row for job %s in the page:\n%s", job, dom)
	}
	return strings.TrimSpace(spaceRE.ReplaceAllString(tagRE.ReplaceAllString(m[1], " "), " "))
}

// TestStatusPageInBrowser starts `sluice serve` with two jobs — one that
// runs and one that fails for good — loads / in headless Chromium, checks
// the rendered rows (job names, states, rows written by change type) and
// takes a screenshot.
func TestStatusPageInBrowser(t *testing.T) {
	browser := chromium(t)
	d := seededDB(t)
	jobs := t.TempDir()
	writeFile(t, jobs, "orders_append.yaml", "name: orders_append\nsource: orders_stream\nfilter: \"`__change_type` IN ('INSERT', 'UPDATE_AFTER')\"\nselect: [id, name, amount, status]\nsink: {table: orders_target, mode: append}\nschedule: \"@every 2s\"\n")
	writeFile(t, jobs, "orders_gone.yaml", "name: orders_gone\nsource: no_such_stream\nsink: {table: t2}\nschedule: \"@every 2s\"\n")
	addr := startServe(t, "--conn", d.conn, "--state", d.conn, jobs)
	waitHealth(t, addr, "orders_append", "orders_gone")

	dir := t.TempDir()
	shot := filepath.Join(dir, "status.png")
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	// --no-sandbox: CI runs as root, where Chromium's sandbox refuses to
	// start; --user-data-dir keeps the profile in the test's directory.
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=" + filepath.Join(dir, "profile")}
	url := "http://" + addr + "/"
	out, err := exec.CommandContext(ctx, browser, append(base, "--dump-dom", url)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, out)
	}
	dom := string(out)
	if !strings.Contains(dom, "<title>sluice") {
		t.Fatalf("the page did not load:\n%s", dom)
	}
	good := rowText(t, dom, "orders_append")
	// The seed's pending changes, filtered to INSERT and UPDATE_AFTER:
	// Dave's insert and Alice's new amount.
	// Later runs find nothing new: the first run's counts stay as the
	// last run only until the second, a committed run; the later ones are
	// empty checks, shown as "empty" (as /metrics counts them).
	for _, want := range []string{"orders_append", "@every 2s"} {
		if !strings.Contains(good, want) {
			t.Errorf("orders_append's row %q lacks %q", good, want)
		}
	}
	if !strings.Contains(good, "committed") && !strings.Contains(good, "empty") {
		t.Errorf("orders_append's row %q: want its last run committed or empty", good)
	}
	if !strings.Contains(good, "idle") && !strings.Contains(good, "running") {
		t.Errorf("orders_append's row %q: want state idle (or running)", good)
	}
	bad := rowText(t, dom, "orders_gone")
	if !strings.Contains(bad, "no_such_stream") || !(strings.Contains(bad, "stopped") || strings.Contains(bad, "retrying")) {
		t.Errorf("orders_gone's row %q: want a stopped or retrying state and the error naming no_such_stream", bad)
	}
	if !strings.Contains(dom, "<svg") {
		t.Errorf("no lag chart in the page")
	}

	out, err = exec.CommandContext(ctx, browser, append(base, "--screenshot="+shot, "--window-size=1280,720", "--hide-scrollbars", url)...).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 720 {
		t.Errorf("screenshot is %v, want 1280x720", b)
	}
	t.Logf("screenshot: %s", shot)
	if keep := os.Getenv("SLUICE_KEEP_SCREENSHOT"); keep != "" {
		b, _ := os.ReadFile(shot)
		_ = os.WriteFile(keep, b, 0o644)
	}
}
