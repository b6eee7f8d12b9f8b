package serve

import (
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/sluicedata/sluice/cdc"
)

// The status page: one server-rendered HTML page at / on Config.Listen,
// embedded in the binary (no scripts, no external assets), refreshing
// itself every pageRefresh.

//go:embed page.html.tmpl
var pageText string

var pageTmpl = template.Must(template.New("page").Parse(pageText))

// pageRefresh is how often the page reloads itself.
const pageRefresh = 10 * time.Second

// LagWindow is how far back the status page's lag chart reaches; lag
// measurements older than that are dropped.
const LagWindow = time.Hour

// LagPoint is one lag measurement (each Config.LagInterval), kept for
// LagWindow for the status page's chart.
type LagPoint struct {
	At      time.Time
	Changes int64
	Age     time.Duration
}

// The states of a job on the status page.
const (
	StateRunning  = "running"  // a run is in progress
	StateIdle     = "idle"     // waiting for its next fire
	StateRetrying = "retrying" // its last runs failed transiently; it retries
	StateStopped  = "stopped"  // stopped by a permanent failure (or a reload that removed it)
)

// State is the job's state as the status page names it.
func (js JobStatus) State() string {
	switch {
	case js.Stopped:
		return StateStopped
	case js.Running:
		return StateRunning
	case js.ConsecutiveFailures > 0:
		return StateRetrying
	}
	return StateIdle
}

// pageJob is one row of the page.
type pageJob struct {
	Name, File, Schedule, State string
	Failures                    int
	LastRun, Next, Lag          string
	LastError                   string
	Chart                       template.HTML
}

// servePage renders the status page of every loaded job.
func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	now := s.clock.Now()
	jobs := s.Status(r.Context())
	view := struct {
		Node, Status, Now string
		Refresh           int
		Jobs              []pageJob
	}{Node: s.node, Status: "ok", Now: now.UTC().Format("2006-01-02 15:04:05Z"), Refresh: int(pageRefresh.Seconds())}
	for _, js := range jobs {
		if !js.Healthy {
			view.Status = "unhealthy"
		}
		pj := pageJob{Name: js.Job, File: js.File, Schedule: js.Schedule, State: js.State(),
			Failures: js.ConsecutiveFailures, LastError: js.LastError, Next: "-", Lag: "-"}
		if js.LastRun != nil {
			pj.LastRun = describeRun(js.LastRun, now)
		}
		if js.Next != nil {
			pj.Next = "in " + roundDuration(js.Next.Sub(now))
		}
		switch {
		case js.Lag != nil:
			pj.Lag = fmt.Sprintf("%d changes, %s", js.Lag.Changes, roundDuration(js.Lag.Age))
		case js.LagError != "":
			pj.Lag = "unknown"
		}
		pj.Chart = lagChart(s.lagHistory(js.Job), now)
		view.Jobs = append(view.Jobs, pj)
	}
	s.mu.Lock()
	if s.closing {
		view.Status = "shutting down"
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := pageTmpl.Execute(w, view); err != nil {
		s.log.Warn("rendering the status page", "err", err)
	}
}

// describeRun is a last run as the page shows it: when, status, duration
// and the rows written by change type ("3 min ago, committed in 0.12s:
// INSERT 3, DELETE 1").
func describeRun(r *Run, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s ago, %s in %s", roundDuration(now.Sub(r.End)), r.Status, r.Duration().Round(time.Millisecond))
	var parts []string
	for _, op := range []cdc.Op{cdc.OpInsert, cdc.OpUpdateBefore, cdc.OpUpdateAfter, cdc.OpDelete} {
		if n := r.Written[op]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", op, n))
		}
	}
	if len(parts) == 0 {
		b.WriteString(": no rows")
	} else {
		b.WriteString(": " + strings.Join(parts, ", "))
	}
	return b.String()
}

// roundDuration prints d to the second (to the millisecond below one
// second), without a sign for the past.
func roundDuration(d time.Duration) string {
	d = d.Abs()
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// Chart geometry, in SVG user units (pixels).
const chartW, chartH = 160, 36

// lagChart draws pending changes over the last LagWindow as an inline SVG
// polyline: time left to right ending now, changes bottom to top scaled
// to the window's maximum (its title says the maximum).
func lagChart(points []LagPoint, now time.Time) template.HTML {
	if len(points) == 0 {
		return `<span class="muted">no data yet</span>`
	}
	var peak int64
	for _, p := range points {
		peak = max(peak, p.Changes)
	}
	start := now.Add(-LagWindow)
	var xy []string
	for _, p := range points {
		x := float64(chartW) * float64(p.At.Sub(start)) / float64(LagWindow)
		y := float64(chartH)
		if peak > 0 {
			y -= float64(chartH-2) * float64(p.Changes) / float64(peak)
		}
		xy = append(xy, fmt.Sprintf("%.1f,%.1f", min(max(x, 0), chartW), y))
	}
	if len(xy) == 1 {
		xy = append(xy, fmt.Sprintf("%d,%s", chartW, strings.Split(xy[0], ",")[1]))
	}
	return template.HTML(fmt.Sprintf(`<svg class="lag" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="pending changes over the last hour, at most %d"><title>pending changes, last hour (peak %d)</title><line x1="0" y1="%d" x2="%d" y2="%d"/><polyline points="%s"/></svg>`,
		chartW, chartH, chartW, chartH, peak, peak, chartH, chartW, chartH, strings.Join(xy, " ")))
}

// lagHistory returns a copy of a job's lag measurements of the last
// LagWindow, oldest first.
func (s *Server) lagHistory(job string) []LagPoint {
	s.mu.Lock()
	st := s.stateLocked(job)
	s.mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]LagPoint(nil), st.lagHist...)
}

// recordLag appends a measurement to st's history, dropping those older
// than LagWindow. st.mu must be held.
func (st *state) recordLag(p LagPoint) {
	cut := 0
	for cut < len(st.lagHist) && p.At.Sub(st.lagHist[cut].At) > LagWindow {
		cut++
	}
	st.lagHist = append(st.lagHist[cut:], p)
}
