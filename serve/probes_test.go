package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// probe calls path through the server's handler and decodes its status.
func probe(t *testing.T, s *Server, path string) (int, string) {
	t.Helper()
	rr := httptest.NewRecorder()
	s.Handler().ServeHTTP(rr, httptest.NewRequest("GET", path, nil))
	var body probeBody
	if err := json.Unmarshal(rr.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s: %v in %q", path, err, rr.Body.String())
	}
	return rr.Code, body.Status
}

// TestProbesSeparateLivenessFromJobHealth: a job stopped by a permanent
// failure makes /healthz 503 but leaves /livez and /readyz at 200, so a
// liveness probe on /livez never restarts the healthy jobs of the process
// (issue #19). Before Start /readyz says "starting"; during Shutdown
// /readyz is 503 and /livez still 200.
func TestProbesSeparateLivenessFromJobHealth(t *testing.T) {
	unstarted, err := New(Config{Run: (&fakeRun{}).run, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if code, st := probe(t, unstarted, "/readyz"); code != 503 || st != "starting" {
		t.Errorf("/readyz before Start = %d %q, want 503 starting", code, st)
	}
	if code, st := probe(t, unstarted, "/livez"); code != 200 || st != "ok" {
		t.Errorf("/livez before Start = %d %q, want 200 ok", code, st)
	}

	fr := &fakeRun{fn: func(ctx context.Context, job *plan.Job, _ int) (*runner.Result, error) {
		if job.Name == "bad" {
			return nil, errors.New("type mismatch: amount is DECIMAL(10,2), target is DATE")
		}
		return moved(job.Name, 1), nil
	}}
	s, clock, rec := newTestServer(t, Config{Run: fr.run}, testJob("good", "@every 1m"), testJob("bad", "@every 1m"))
	rec.waitKind(t, "good", EventScheduled)
	rec.waitKind(t, "bad", EventScheduled)
	clock.Advance(time.Minute)
	rec.waitKind(t, "good", EventDone)
	rec.waitKind(t, "bad", EventStopped)

	for _, c := range []struct {
		path   string
		code   int
		status string
	}{
		{"/healthz", http.StatusServiceUnavailable, "unhealthy"},
		{"/livez", http.StatusOK, "ok"},
		{"/readyz", http.StatusOK, "ok"},
	} {
		if code, st := probe(t, s, c.path); code != c.code || st != c.status {
			t.Errorf("%s with one stopped job = %d %q, want %d %q", c.path, code, st, c.code, c.status)
		}
	}

	br := newBlockingRun()
	s2, clock2, rec2 := newTestServer(t, Config{Run: br.run}, testJob("j", "@every 1s"))
	ev := rec2.waitKind(t, "j", EventScheduled)
	clock2.Set(ev.Next)
	rec2.waitKind(t, "j", EventStarted)
	errc := make(chan error, 1)
	go func() { errc <- s2.Shutdown(t.Context()) }()
	rec2.wait(t, "shutdown", func(ev Event) bool { return ev.Kind == EventShutdown })
	if code, st := probe(t, s2, "/readyz"); code != 503 || st != "shutting down" {
		t.Errorf("/readyz during Shutdown = %d %q, want 503 shutting down", code, st)
	}
	if code, st := probe(t, s2, "/livez"); code != 200 || st != "shutting down" {
		t.Errorf("/livez during Shutdown = %d %q, want 200 shutting down", code, st)
	}
	close(br.release)
	if err := <-errc; err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
}
