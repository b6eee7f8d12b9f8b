package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// decode parses out as JSON into v, failing the test otherwise.
func decode(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("not JSON (%v):\n%s", err, out)
	}
}

// TestFormatJSON: plan, preview, status and history print JSON documents
// with --format json; offsets are in their raw form there.
func TestFormatJSON(t *testing.T) {
	d := seededDB(t)
	job := writeFile(t, d.dir, "orders_append.yaml", "name: orders_append\nsource: orders_stream\n"+
		"filter: \"`__change_type` IN ('INSERT', 'UPDATE_AFTER')\"\nselect: [id, name, amount, status]\n"+
		"sink: {table: orders_target, mode: append}\nschedule: \"@every 1s\"\n")

	var plans []struct {
		Job    string `json:"job"`
		Source struct {
			Stream, Mode string
		} `json:"source"`
		Filter struct {
			Dropped []string `json:"consumes_for_good"`
		} `json:"filter"`
		Sink struct {
			Table, Mode string
		} `json:"sink"`
		Pushdown bool `json:"pushdown"`
		Steps    []struct {
			SQL string `json:"sql"`
		} `json:"steps"`
	}
	decode(t, mustSluice(t, "plan", "--conn", d.conn, "--format", "json", job).stdout, &plans)
	if len(plans) != 1 || plans[0].Job != "orders_append" || plans[0].Source.Stream != "orders_stream" || plans[0].Sink.Table != "orders_target" ||
		plans[0].Sink.Mode != "append" || !plans[0].Pushdown || len(plans[0].Steps) == 0 ||
		strings.Join(plans[0].Filter.Dropped, ",") != "UPDATE_BEFORE,DELETE" {
		t.Errorf("plan JSON = %+v", plans)
	}

	var pv struct {
		Stream  string `json:"stream"`
		Offset  any    `json:"offset"`
		More    bool   `json:"more_pending"`
		Changes []struct {
			Type   string `json:"__change_type"`
			ID     int64  `json:"id"`
			Amount string `json:"amount"`
		} `json:"changes"`
	}
	decode(t, mustSluice(t, "preview", "--conn", d.conn, "--format", "json", "orders_stream").stdout, &pv)
	var got []string
	for _, c := range pv.Changes {
		got = append(got, c.Type+" "+c.Amount)
	}
	// The seed's changes (seedChanges), amounts exact as strings.
	if want := "INSERT 3000.00,UPDATE_BEFORE 1000.00,UPDATE_AFTER 1500.00,DELETE 500.00"; strings.Join(got, ",") != want || pv.Stream != "orders_stream" || pv.More {
		t.Errorf("preview JSON: %+v (changes %q, want %s)", pv, got, want)
	}
	if _, ok := pv.Offset.(string); !ok {
		t.Errorf("preview offset %#v, want the single position as a string", pv.Offset)
	}

	var st struct {
		Jobs []struct {
			Job      string `json:"job"`
			Schedule string `json:"schedule"`
			Health   string `json:"health"`
			Lag      struct {
				Changes int64 `json:"changes"`
			} `json:"lag"`
		} `json:"jobs"`
	}
	decode(t, mustSluice(t, "status", "--conn", d.conn, "--state", d.conn, "--format", "json", job).stdout, &st)
	if len(st.Jobs) != 1 || st.Jobs[0].Job != "orders_append" || st.Jobs[0].Schedule != "@every 1s" || st.Jobs[0].Health != "never run" || st.Jobs[0].Lag.Changes != 4 {
		t.Errorf("status JSON = %+v", st)
	}

	// serve records a run; history shows it with rows by change type.
	addr := startServe(t, "--conn", d.conn, "--state", d.conn, job)
	waitHealth(t, addr, "orders_append")
	var h struct {
		Runs []struct {
			Job     string           `json:"job"`
			Status  string           `json:"status"`
			Written map[string]int64 `json:"written"`
			To      any              `json:"to"`
		} `json:"runs"`
	}
	decode(t, mustSluice(t, "history", "--state", d.conn, "--format", "json", "orders_append").stdout, &h)
	last := h.Runs[len(h.Runs)-1] // the oldest: the first run
	if last.Job != "orders_append" || last.Status != "committed" || last.Written["INSERT"] != 1 || last.Written["UPDATE_AFTER"] != 1 {
		t.Errorf("history JSON, first run = %+v", last)
	}
	if _, ok := last.To.(string); !ok {
		t.Errorf("history offset %#v, want the single position as a string", last.To)
	}
}
