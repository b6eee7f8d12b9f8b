package serve

import (
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
)

// TestDeadLetterMetric: sluice_dead_letters_total{job} adds the rows each
// committed run dead-lettered, per job; a run without dead letters adds
// no series, and a failed run counts nothing.
func TestDeadLetterMetric(t *testing.T) {
	m := NewMetrics()
	m.RunDone(&runner.Result{Job: "a", Stats: runner.Stats{Read: map[cdc.Op]int64{cdc.OpInsert: 7}, DeadLettered: 3}}, nil)
	m.RunDone(&runner.Result{Job: "a", Stats: runner.Stats{Read: map[cdc.Op]int64{cdc.OpInsert: 2}, DeadLettered: 2}}, nil)
	m.RunDone(&runner.Result{Job: "b", Stats: runner.Stats{Read: map[cdc.Op]int64{cdc.OpInsert: 1}}}, nil)
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "sluice_dead_letters_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "job" {
					got[l.GetValue()] = mt.GetCounter().GetValue()
				}
			}
		}
	}
	if len(got) != 1 || got["a"] != 5 {
		t.Errorf("sluice_dead_letters_total = %v, want {a: 5}", got)
	}
}
