package serve

import (
	"encoding/json"
	"net/http"
)

// probeBody is the JSON of /livez and /readyz: {"status": "ok"|…, "node": …}.
type probeBody struct {
	Status string `json:"status"`
	Node   string `json:"node"`
}

// serveLive answers GET /livez, the liveness probe: 200 {"status": "ok"}
// while the process serves HTTP and its scheduler state can be read (the
// server's lock is taken, so a wedged scheduler makes the probe time out).
// It never depends on a job or a database: a job that fails, or a database
// that is down, is reported by /healthz and retried by the job itself, and
// restarting the process would fix neither (Kubernetes' guidance for
// liveness probes: "liveness probes should not depend on external
// dependencies").
func (s *Server) serveLive(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	body := probeBody{Status: "ok", Node: s.node}
	if closing {
		// Still alive: a graceful shutdown is not a reason to kill.
		body.Status = "shutting down"
	}
	writeProbe(w, http.StatusOK, body)
}

// serveReady answers GET /readyz, the readiness probe: 200 {"status":
// "ok"} once Start has armed every job's schedule, 503 {"status":
// "starting"} before and {"status": "shutting down"} once Shutdown began.
func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	started, closing := s.started, s.closing
	s.mu.Unlock()
	body, code := probeBody{Status: "ok", Node: s.node}, http.StatusOK
	switch {
	case closing:
		body.Status, code = "shutting down", http.StatusServiceUnavailable
	case !started:
		body.Status, code = "starting", http.StatusServiceUnavailable
	}
	writeProbe(w, code, body)
}

func writeProbe(w http.ResponseWriter, code int, body probeBody) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}
