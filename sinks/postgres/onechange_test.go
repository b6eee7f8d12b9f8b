package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// TestMergeOneChangePerKey: with OneChangePerKey (net changes, keys passed
// through) each staged batch is merged as it arrives, without the collapse
// into sluice_net; the result and the counts equal those of the collapsing
// merge over the same net changes, written in several batches, on both the
// MERGE and the ON CONFLICT path.
func TestMergeOneChangePerKey(t *testing.T) {
	// Net changes: one per key (an update as a BEFORE/AFTER pair).
	net := []cdc.Change{
		ch(cdc.OpInsert, 1, int64(1), "a", dec("1.10")),
		ch(cdc.OpUpdateBefore, 2, int64(2), "old", dec("0")),
		ch(cdc.OpUpdateAfter, 2, int64(2), "b2", dec("2.22")),
		ch(cdc.OpDelete, 3, int64(5), "gone", dec("5")),
		ch(cdc.OpDelete, 4, int64(6), "never", dec("6")),  // not in the target
		ch(cdc.OpUpdateAfter, 5, int64(7), "u", dec("7")), // not in the target: inserted
	}
	want := []string{"1|a|1.1", "2|b2|2.22", "7|u|7", "9|keep|9"}
	for _, version := range []int{150000, 140000} {
		for _, one := range []bool{true, false} {
			t.Run(map[int]string{150000: "MERGE", 140000: "ON CONFLICT"}[version]+map[bool]string{true: " one per key", false: " collapse"}[one], func(t *testing.T) {
				p := openPool(t)
				sk := New(p, version, nil)
				exec(t, p, `CREATE TABLE tgt (id bigint PRIMARY KEY, "user" text, amount numeric(38,10))`,
					`INSERT INTO tgt VALUES (2, 'old', 0), (5, 'gone', 5), (9, 'keep', 9)`)
				st := stage("tgt", plan.ModeMerge, []string{"id"}, ordersSchema)
				st.OneChangePerKey = one
				sp, err := sk.PrepareSink(context.Background(), st)
				if err != nil {
					t.Fatal(err)
				}
				var sqls []string
				for _, s := range sp.Steps() {
					if !strings.HasPrefix(s.What, "instead") { // the partial-row variant always collapses
						sqls = append(sqls, s.SQL)
					}
				}
				all := strings.Join(sqls, "\n")
				if collapses := strings.Contains(all, "sluice_net"); collapses == one {
					t.Errorf("OneChangePerKey=%v but collapse into sluice_net = %v:\n%s", one, collapses, all)
				}
				// One change per key: each batch is merged as it arrives and
				// the staging table emptied; else one merge at commit after an
				// ANALYZE of the net changes.
				if perBatch := strings.Contains(all, "TRUNCATE pg_temp.sluice_stage"); perBatch != one {
					t.Errorf("OneChangePerKey=%v but per-batch merge = %v:\n%s", one, perBatch, all)
				}
				if analyzed := strings.Contains(all, "ANALYZE"); analyzed == one {
					t.Errorf("OneChangePerKey=%v but ANALYZE = %v:\n%s", one, analyzed, all)
				}
				stats, err := runBatches(t, sk, st, cpAt("p1"), net[:2], net[2:4], net[4:])
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, "merge", dump(t, p, "tgt", "id"), want)
				wantW := map[cdc.Op]int64{cdc.OpInsert: 1, cdc.OpUpdateAfter: 2, cdc.OpDelete: 2}
				for op, n := range wantW {
					if stats.Written[op] != n {
						t.Errorf("written %v, want %v", stats.Written, wantW)
						break
					}
				}
			})
		}
	}
}
