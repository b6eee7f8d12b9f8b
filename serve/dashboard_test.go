package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// metricNames are the names of every metric Metrics registers, read from
// the collectors' descriptions.
func metricNames(t *testing.T) map[string]bool {
	t.Helper()
	m := NewMetrics()
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range []prometheus.Collector{m.runs, m.failures, m.rows, m.duration, m.lagChanges, m.lagSeconds,
			m.stopped, m.running, m.skipped, m.lastSuccess, m.deadLetters} {
			c.Describe(ch)
		}
		close(ch)
	}()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for d := range ch {
		if s := fq.FindStringSubmatch(d.String()); s != nil {
			names[s[1]] = true
		}
	}
	return names
}

// TestGrafanaDashboard: deploy/grafana/sluice.json is a dashboard whose
// every query names only metrics serve exports (a histogram's _bucket
// series by its base name), and which charts lag, runs by result, rows by
// change type and run duration.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "sluice.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	have := metricNames(t)
	used := map[string]bool{}
	metric := regexp.MustCompile(`\bsluice_[a-z_]+`)
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, name := range metric.FindAllString(tg.Expr, -1) {
				base := regexp.MustCompile(`_(bucket|sum|count)$`).ReplaceAllString(name, "")
				if !have[name] && !have[base] {
					t.Errorf("panel %q queries %s, which serve does not export", p.Title, name)
				}
				used[base] = true
			}
		}
	}
	for _, want := range []string{"sluice_stream_lag_changes", "sluice_stream_lag_seconds", "sluice_runs_total", "sluice_rows_total", "sluice_run_duration_seconds", "sluice_dead_letters_total"} {
		if !used[want] {
			t.Errorf("the dashboard does not chart %s", want)
		}
	}
	var missing []string
	for name := range have {
		if !used[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("metrics without a panel: %v", missing)
	}
}
