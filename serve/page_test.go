package serve

import (
	"strings"
	"testing"
	"time"
)

// TestLagChart checks the chart's points against coordinates computed by
// hand: a 160×36 box over the last hour, the peak 2 px below the top.
func TestLagChart(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	pts := []LagPoint{
		{At: now.Add(-60 * time.Minute), Changes: 0},
		{At: now.Add(-30 * time.Minute), Changes: 50},
		{At: now, Changes: 100},
	}
	got := string(lagChart(pts, now))
	if want := `points="0.0,36.0 80.0,19.0 160.0,2.0"`; !strings.Contains(got, want) {
		t.Errorf("chart %s\nwant %s", got, want)
	}
	if !strings.Contains(got, "peak 100") {
		t.Errorf("chart title lacks the peak: %s", got)
	}
	if got := string(lagChart(nil, now)); !strings.Contains(got, "no data yet") {
		t.Errorf("empty chart = %s", got)
	}
}

// TestRecordLagWindow: measurements older than LagWindow are dropped.
func TestRecordLagWindow(t *testing.T) {
	var st state
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 10 {
		st.recordLag(LagPoint{At: t0.Add(time.Duration(i) * 15 * time.Minute), Changes: int64(i)})
	}
	// The last point is at 2h15m; the window keeps 1h15m…2h15m.
	if len(st.lagHist) != 5 || st.lagHist[0].Changes != 5 || st.lagHist[4].Changes != 9 {
		t.Errorf("history = %+v, want changes 5…9", st.lagHist)
	}
}

// TestState maps a job's status to the page's state.
func TestState(t *testing.T) {
	for _, tt := range []struct {
		js   JobStatus
		want string
	}{
		{JobStatus{}, StateIdle},
		{JobStatus{Running: true}, StateRunning},
		{JobStatus{ConsecutiveFailures: 2}, StateRetrying},
		{JobStatus{Stopped: true, Running: true}, StateStopped},
	} {
		if got := tt.js.State(); got != tt.want {
			t.Errorf("%+v: state %s, want %s", tt.js, got, tt.want)
		}
	}
}
