package serve

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// A scheduled run that finds nothing pending writes no run-history row and
// counts as sluice_runs_total{result="empty"}; the store keeps its time as
// the job's last empty check (at most every EmptyNoteInterval); a run that
// consumed something is history as before.
func TestEmptyScheduledRunsAreQuiet(t *testing.T) {
	clock := NewFakeClock(t0)
	store := openSQLite(t, filepath.Join(t.TempDir(), "state.db"), "n1", clock)
	metrics := NewMetrics()
	fires := 0
	run := func(ctx context.Context, job *plan.Job) (*runner.Result, error) {
		fires++
		now := clock.Now().UTC()
		res := &runner.Result{Job: job.Name, Start: now, End: now, From: cdc.SingleOffset("5"), To: cdc.SingleOffset("5")}
		if fires == 4 { // the fourth fire finds a change
			res.To = cdc.SingleOffset("6")
			res.Stats.Read = map[cdc.Op]int64{cdc.OpInsert: 1}
		}
		return res, nil
	}
	_, _, rec := newTestServer(t, Config{Run: run, Clock: clock, History: store, Metrics: metrics}, testJob("j", "@every 3s"))
	var ends []time.Time
	for i := range 4 {
		next := rec.wait(t, "schedule", func(ev Event) bool { return ev.Kind == EventScheduled && ev.Next.After(clock.Now()) }).Next
		clock.Set(next)
		ev := rec.wait(t, "run", func(ev Event) bool { return ev.Kind == EventDone && !ev.At.Before(next) })
		if ev.Err != nil {
			t.Fatalf("fire %d: %v", i, ev.Err)
		}
		ends = append(ends, ev.Run.End)
	}
	if got := runsTotal(t, metrics, "empty"); got != 3 {
		t.Errorf(`sluice_runs_total{result="empty"} = %v, want 3`, got)
	}
	if got := runsTotal(t, metrics, "committed"); got != 1 {
		t.Errorf(`sluice_runs_total{result="committed"} = %v, want 1`, got)
	}
	// Fires every 3s: the first empty check is stored, the second is within
	// EmptyNoteInterval of it, the third (9s after the first) too.
	last, err := store.LastEmpty(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !last["j"].Equal(ends[0]) {
		t.Errorf("last empty check %v, want the first empty run's end %v (later ones within %s)", last["j"], ends[0], EmptyNoteInterval)
	}
	var header strings.Builder
	if err := WriteEmptyChecks(t.Context(), &header, store, ""); err != nil {
		t.Fatal(err)
	}
	if want := "last empty check: j at " + ends[0].UTC().Format("2006-01-02 15:04:05Z") + " (nothing pending; not in the history)\n"; header.String() != want {
		t.Errorf("history header %q, want %q", header.String(), want)
	}
	var runs []Run
	for deadline := time.Now().Add(waitLimit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if runs, err = store.List(t.Context(), "j", 10); err != nil || len(runs) > 0 {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || Rows(runs[0].Read) != 1 {
		t.Errorf("history %+v, want only the run that read a change", runs)
	}
}

func runsTotal(t *testing.T, m *Metrics, result string) float64 {
	t.Helper()
	v, ok := metricValue(t, m, "sluice_runs_total", map[string]string{"job": "j", "result": result})
	if !ok {
		return 0
	}
	return v.GetCounter().GetValue()
}

// TestLastEmptyBeforeAnyCheck: a store that never noted an empty check
// has no checks table yet; reading the checks (the header of `sluice
// history`) gives none instead of failing, on PostgreSQL (where the error
// comes from Query, not from the rows) and on SQLite; the first note
// creates the table.
func TestLastEmptyBeforeAnyCheck(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 3, 0, time.UTC)
	for _, c := range []struct {
		name  string
		store interface {
			LastEmpty(context.Context) (map[string]time.Time, error)
			NoteEmpty(context.Context, string, time.Time) error
		}
	}{
		{"sqlite", openSQLite(t, filepath.Join(t.TempDir(), "h.db"), "n1", nil)},
		{"postgres", openPG(t, pgtest.NewDatabase(t), "n1")},
	} {
		t.Run(c.name, func(t *testing.T) {
			last, err := c.store.LastEmpty(t.Context())
			if err != nil || len(last) != 0 {
				t.Fatalf("LastEmpty before any check = %v, %v; want none, nil", last, err)
			}
			if err := c.store.NoteEmpty(t.Context(), "j", at); err != nil {
				t.Fatal(err)
			}
			last, err = c.store.LastEmpty(t.Context())
			if err != nil || !last["j"].Equal(at) {
				t.Fatalf("LastEmpty after a check = %v, %v; want j at %v", last, err, at)
			}
		})
	}
}

// TestLastRunEmptyAndNetZero: /healthz's last_run (Status) shows a run
// that found nothing pending as "empty", as sluice_runs_total counts it,
// not as "committed"; a run that read nothing but moved its offset
// (changes that cancel out) is a committed run in the history.
func TestLastRunEmptyAndNetZero(t *testing.T) {
	clock := NewFakeClock(t0)
	store := openSQLite(t, filepath.Join(t.TempDir(), "state.db"), "n1", clock)
	metrics := NewMetrics()
	fires := 0
	run := func(ctx context.Context, job *plan.Job) (*runner.Result, error) {
		fires++
		now := clock.Now().UTC()
		res := &runner.Result{Job: job.Name, Start: now, End: now, From: cdc.SingleOffset("5"), To: cdc.SingleOffset("5")}
		if fires == 2 { // nothing read, offset moved: an insert and a delete of one key
			res.To = cdc.SingleOffset("7")
		}
		return res, nil
	}
	srv, _, rec := newTestServer(t, Config{Run: run, Clock: clock, History: store, Metrics: metrics}, testJob("j", "@every 3s"))
	for i, want := range []Status{StatusEmpty, StatusCommitted} {
		next := rec.wait(t, "schedule", func(ev Event) bool { return ev.Kind == EventScheduled && ev.Next.After(clock.Now()) }).Next
		clock.Set(next)
		rec.wait(t, "run", func(ev Event) bool { return ev.Kind == EventDone && !ev.At.Before(next) })
		st := srv.Status(t.Context())
		if len(st) != 1 || st[0].LastRun == nil || st[0].LastRun.Status != want {
			t.Errorf("fire %d: last_run %+v, want status %q", i+1, st, want)
		}
	}
	if e, c := runsTotal(t, metrics, "empty"), runsTotal(t, metrics, "committed"); e != 1 || c != 1 {
		t.Errorf(`sluice_runs_total empty %v committed %v, want 1 and 1`, e, c)
	}
	var runs []Run
	var err error
	for deadline := time.Now().Add(waitLimit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if runs, err = store.List(t.Context(), "j", 10); err != nil || len(runs) > 0 {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Status != StatusCommitted || runs[0].To.String() != "7" {
		t.Errorf("history %+v, want only the run that moved the offset to 7", runs)
	}
}
