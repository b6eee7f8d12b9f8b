package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/schedule"
)

// The health of a job, as JobStatus.Health reports it.
const (
	HealthOK       = "ok"        // last run succeeded (or none failed yet)
	HealthNeverRun = "never run" // no run recorded
	HealthUnknown  = "unknown"   // no run history to read (StatusOf without a History)
	HealthRetrying = "retrying"  // transient failures, retried (JobStatus.NextTry); unhealthy from Config.UnhealthyAfter on
	HealthStopped  = "stopped"   // stopped by a permanent failure
	HealthBroken   = "invalid"   // the job's schedule does not parse (StatusOf)
	HealthFailing  = "failing"   // its pending changes cannot be read for a reason retrying does not fix (StatusOf): its next run fails
)

// JobStatus is one job's line in `sluice status` and /healthz.
type JobStatus struct {
	Job                 string     `json:"job"`
	File                string     `json:"file,omitempty"`
	Schedule            string     `json:"schedule"`
	Next                *time.Time `json:"next_fire,omitempty"` // never set for a stopped job
	NextTry             *time.Time `json:"next_try,omitempty"`  // health retrying: when the failed run is tried again
	Running             bool       `json:"running"`
	Stopped             bool       `json:"stopped"`
	Healthy             bool       `json:"healthy"`
	Health              string     `json:"health"`
	LastRun             *Run       `json:"last_run,omitempty"`
	LastError           string     `json:"last_error,omitempty"`
	LastErrorAt         *time.Time `json:"last_error_at,omitempty"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	Lag                 *Lag       `json:"lag,omitempty"`
	LagError            string     `json:"lag_error,omitempty"`
}

// Status reports every loaded job of the running server, sorted by name:
// schedule, next fire, whether it is running or stopped, its health, last
// run (from memory, else the newest in the History) and last error, the
// time of the next retry while a transient failure is retried, and its lag
// when Config.Lag is set (the value of the last poll). Health is
// "retrying" after transient failures; the job is unhealthy once
// Config.UnhealthyAfter runs in a row failed.
func (s *Server) Status(ctx context.Context) []JobStatus {
	s.mu.Lock()
	type item struct {
		e  *entry
		st *state
	}
	items := make([]item, 0, len(s.entries))
	for name, e := range s.entries {
		items = append(items, item{e, s.stateLocked(name)})
	}
	s.mu.Unlock()
	sort.Slice(items, func(i, j int) bool { return items[i].e.job.Name < items[j].e.job.Name })
	out := make([]JobStatus, 0, len(items))
	for _, it := range items {
		js := JobStatus{Job: it.e.job.Name, File: it.e.file, Schedule: it.e.sched.String(), Running: it.st.running.Load()}
		it.st.mu.Lock()
		if !it.st.next.IsZero() && !it.st.stopped {
			n := it.st.next
			js.Next = &n
		}
		if !it.st.retryAt.IsZero() {
			n := it.st.retryAt
			js.NextTry = &n
		}
		js.Stopped, js.ConsecutiveFailures = it.st.stopped, it.st.failures
		if it.st.last != nil {
			r := *it.st.last
			if isEmpty(&r) {
				r.Status = StatusEmpty // as /metrics counts it
			}
			js.LastRun = &r
		}
		if it.st.lastErr != "" {
			js.LastError = it.st.lastErr
			at := it.st.lastErrAt
			js.LastErrorAt = &at
		}
		js.Lag, js.LagError = it.st.lag, it.st.lagErr
		it.st.mu.Unlock()
		if js.LastRun == nil && s.cfg.History != nil {
			if runs, err := s.cfg.History.List(ctx, js.Job, 1); err == nil && len(runs) > 0 {
				js.LastRun = &runs[0]
			}
		}
		switch {
		case js.Stopped:
			js.Health = HealthStopped
		case js.ConsecutiveFailures > 0:
			js.Health = HealthRetrying
		case js.LastRun == nil:
			js.Health = HealthNeverRun
		default:
			js.Health = HealthOK
		}
		js.Healthy = !js.Stopped && js.ConsecutiveFailures < s.cfg.UnhealthyAfter
		out = append(out, js)
	}
	return out
}

// StatusOf reports jobs that no server in this process runs (`sluice
// status DIR`): the schedule and next fire after now, the last run and
// health from hist (nil: health "unknown"), and the lag from lag (nil: not
// measured). Health comes from the newest run: committed/skipped/cancelled
// → ok, transient → retrying (NextTry: the retry time it recorded),
// failed → stopped (no next fire: a stopped job does not fire until it is
// reloaded). It returns the history's error if it cannot be read; lag
// errors go into LagError, and one that retrying does not fix (not
// IsTransient: the stream or its table is gone, the job names a column
// the table does not have) makes an ok or never-run job "failing" and
// unhealthy, since its next run fails the same way.
func StatusOf(ctx context.Context, jobs []*plan.Job, hist History, lag LagFunc, now time.Time) ([]JobStatus, error) {
	out := make([]JobStatus, 0, len(jobs))
	for _, j := range jobs {
		js := JobStatus{Job: j.Name, File: j.File, Health: HealthNeverRun, Healthy: true}
		sched, err := schedule.Parse(j.Schedule, j.ScheduleTZ)
		if err != nil {
			js.Schedule, js.Health, js.Healthy, js.LastError = j.Schedule, HealthBroken, false, err.Error()
		} else {
			js.Schedule = sched.String()
			if n := sched.Next(now); !n.IsZero() {
				js.Next = &n
			}
		}
		if hist == nil && js.Health == HealthNeverRun {
			js.Health = HealthUnknown
		}
		if hist != nil {
			runs, err := hist.List(ctx, j.Name, 1)
			if err != nil {
				return nil, err
			}
			if len(runs) > 0 {
				r := runs[0]
				js.LastRun = &r
				if js.Health != HealthBroken {
					switch r.Status {
					case StatusTransient:
						js.Health = HealthRetrying
						if !r.RetryAt.IsZero() {
							at := r.RetryAt
							js.NextTry = &at
						}
					case StatusFailed:
						js.Health, js.Healthy, js.Stopped, js.Next = HealthStopped, false, true, nil
					case StatusError:
						js.Health, js.Healthy = HealthFailing, false
					default:
						js.Health = HealthOK
					}
				}
				if r.Error != "" {
					js.LastError = r.Error
					at := r.End
					js.LastErrorAt = &at
				}
			}
		}
		if lag != nil {
			if l, err := lag(ctx, j); err != nil {
				js.LagError = err.Error()
				if !IsTransient(err) && (js.Health == HealthOK || js.Health == HealthNeverRun || js.Health == HealthUnknown) {
					js.Health, js.Healthy = HealthFailing, false
				}
			} else {
				js.Lag = &l
			}
		}
		out = append(out, js)
	}
	return out, nil
}

// healthBody is the JSON of /healthz.
type healthBody struct {
	Status string       `json:"status"` // "ok", "unhealthy" or "shutting down"
	Node   string       `json:"node"`
	State  *StateHealth `json:"state,omitempty"` // only while the state database is not reachable
	Jobs   []JobStatus  `json:"jobs"`
}

// StateHealth is /healthz's "state": the state database (run history and
// job locks) is not reachable yet and is being retried (RetryingStore).
type StateHealth struct {
	Status    string    `json:"status"` // "retrying"
	LastError string    `json:"last_error"`
	NextTry   time.Time `json:"next_try"`
}

// stateHealth returns the state database's health when its store says it
// is unreachable, else nil.
func (s *Server) stateHealth() *StateHealth {
	u, ok := s.cfg.History.(interface {
		Unreachable() (bool, time.Time, error)
	})
	if !ok {
		return nil
	}
	down, next, last := u.Unreachable()
	if !down {
		return nil
	}
	h := &StateHealth{Status: "retrying", NextTry: next.UTC()}
	if last != nil {
		h.LastError = last.Error()
	}
	return h
}

// Handler serves GET / (the status page, page.go), GET /healthz, GET
// /livez, GET /readyz and GET /metrics.
//
// /healthz is the jobs' health, for alerts and dashboards, not for
// restarting the process: JSON {"status", "node", "jobs": [JobStatus…]}
// with 200 when every job is healthy and 503 when one is stopped or
// failing, or the server is shutting down; while the state database is not
// reachable (RetryingStore) it adds "state": StateHealth (the jobs retry
// meanwhile, and turn unhealthy as their failures repeat). /livez (the
// liveness probe) and /readyz (the readiness probe) are in probes.go.
// /metrics is Metrics.Handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.servePage)
	mux.Handle("GET /metrics", s.metrics.Handler())
	mux.HandleFunc("GET /healthz", s.serveHealth)
	mux.HandleFunc("GET /livez", s.serveLive)
	mux.HandleFunc("GET /readyz", s.serveReady)
	return mux
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	body := healthBody{Status: "ok", Node: s.node, State: s.stateHealth(), Jobs: s.Status(r.Context())}
	code := http.StatusOK
	for _, j := range body.Jobs {
		if !j.Healthy {
			body.Status, code = "unhealthy", http.StatusServiceUnavailable
		}
	}
	s.mu.Lock()
	if s.closing {
		body.Status, code = "shutting down", http.StatusServiceUnavailable
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(body)
}

// MarshalJSON writes a Run with change types by name
// ({"read": {"INSERT": 3}}), dead_lettered when not 0, offsets by OffsetJSON and times in RFC 3339
// (retry_at only for a transient failure).
func (r Run) MarshalJSON() ([]byte, error) {
	type run struct {
		ID      int64            `json:"id,omitempty"`
		Job     string           `json:"job"`
		Node    string           `json:"node,omitempty"`
		Start   time.Time        `json:"start"`
		End     time.Time        `json:"end"`
		Seconds float64          `json:"duration_seconds"`
		Status  Status           `json:"status"`
		Read    map[string]int64 `json:"read,omitempty"`
		Written map[string]int64 `json:"written,omitempty"`
		Dead    int64            `json:"dead_lettered,omitempty"`
		From    any              `json:"from,omitempty"`
		To      any              `json:"to,omitempty"`
		Error   string           `json:"error,omitempty"`
		Skipped string           `json:"skipped,omitempty"`
		Note    string           `json:"note,omitempty"`
		RetryAt *time.Time       `json:"retry_at,omitempty"`
	}
	named := func(m map[cdc.Op]int64) map[string]int64 {
		if len(m) == 0 {
			return nil
		}
		out := make(map[string]int64, len(m))
		for op, n := range m {
			out[op.String()] = n
		}
		return out
	}
	var retryAt *time.Time
	if !r.RetryAt.IsZero() {
		retryAt = &r.RetryAt
	}
	return json.Marshal(run{r.ID, r.Job, r.Node, r.Start, r.End, r.Duration().Seconds(), r.Status,
		named(r.Read), named(r.Written), r.DeadLettered, OffsetJSON(r.From), OffsetJSON(r.To), r.Error, r.Skipped, r.Note, retryAt})
}

// OffsetJSON is an offset as /healthz and `--format json` print it: nil for
// the zero offset, the position itself (a string in the source's raw form)
// for a single unnamed partition (SQLite, PostgreSQL), else an object of
// positions keyed by partition name (Tablestore shards).
func OffsetJSON(o cdc.Offset) any {
	if o.IsZero() {
		return nil
	}
	if p, ok := o.Get(""); ok && len(o.Positions) == 1 {
		return p
	}
	return o.Positions
}

// MarshalJSON writes a Lag as {"changes": n, "age_seconds": s}.
func (l Lag) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Changes int64   `json:"changes"`
		Age     float64 `json:"age_seconds"`
	}{l.Changes, l.Age.Seconds()})
}
