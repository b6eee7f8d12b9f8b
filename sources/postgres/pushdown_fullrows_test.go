package postgres

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
)

// TestPushdownFullRows: a merge the planner marked OneChangePerKey (the
// table's primary key passed through; the decision is tested in runner)
// skips the collapse (no net-change table) and sets work_mem; a merge on a
// computed key, where several source keys meet, still collapses to the last
// change per sink key. Both read without UPDATE_BEFORE and count it.
func TestPushdownFullRows(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE fr (id int PRIMARY KEY, v numeric(10,2))`, `INSERT INTO fr VALUES (1, 1), (2, 2)`)
	track(t, b, "fr")
	mkStream(t, b, "sa", "fr", dsl.ModeStandard, false)
	mkStream(t, b, "sb", "fr", dsl.ModeStandard, false)
	mkStream(t, b, "sc", "fr", dsl.ModeStandard, false)

	pa, sa := bindPlan(t, b, "sa", "", []string{"id", "v"},
		plan.SinkStage{Backend: "postgres", Table: "ra", Mode: plan.ModeMerge, Keys: []string{"id"}, OneChangePerKey: true})
	pb, sb := bindPlan(t, b, "sb", "", []string{"id % 2 AS k", "v"},
		plan.SinkStage{Backend: "postgres", Table: "rb", Mode: plan.ModeMerge, Keys: []string{"k"}})
	// One statement with a filter: a DELETE is filtered by its first image.
	pc, sc := bindPlan(t, b, "sc", "v > 5", []string{"id", "v"},
		plan.SinkStage{Backend: "postgres", Table: "rc", Mode: plan.ModeMerge, Keys: []string{"id"}, OneChangePerKey: true})
	pdc, err := b.Pushdown(ctx, pc, sc)
	if err != nil {
		t.Fatal(err)
	}
	pda, err := b.Pushdown(ctx, pa, sa)
	if err != nil {
		t.Fatal(err)
	}
	pdb, err := b.Pushdown(ctx, pb, sb)
	if err != nil {
		t.Fatal(err)
	}
	sqlOf := func(steps []plan.Step) string {
		var all []string
		for _, st := range steps {
			all = append(all, st.SQL)
		}
		return strings.Join(all, "\n")
	}
	if a := sqlOf(pda.Steps()); strings.Contains(a, "sluice_net") || !strings.Contains(a, "SET LOCAL work_mem") {
		t.Errorf("pass-through key: want no net-change table and SET LOCAL work_mem:\n%s", a)
	}
	for name, q := range map[string]string{"pass-through": sqlOf(pda.Steps()), "filtered": sqlOf(pdc.Steps())} {
		if !strings.Contains(q, "nextval('pg_temp.sluice_n_read_insert')") || strings.Contains(q, "CREATE TEMP TABLE sluice_read") {
			t.Errorf("%s: want the one-statement pushdown (the read counted by sequences, no TEMP read table):\n%s", name, q)
		}
		if !strings.Contains(q, "\nORDER BY \"id\"") || !strings.Contains(q, mergeJoinSQL) {
			t.Errorf("%s: want the read ordered by the key and the merge-join choice:\n%s", name, q)
		}
		if !strings.Contains(q, `NULL::timestamptz AS "__commit_timestamp"`) {
			t.Errorf("%s: the job does not use __commit_timestamp, yet the read carries it:\n%s", name, q)
		}
	}
	if a, c := sqlOf(pda.Steps()), sqlOf(pdc.Steps()); strings.Contains(a, "sluice_n_written") || !strings.Contains(c, "nextval('pg_temp.sluice_n_written_update_after')") {
		t.Errorf("the rows written are counted apart only when the job filters:\n%s\n%s", a, c)
	}
	if bq := sqlOf(pdb.Steps()); !strings.Contains(bq, "sluice_net") {
		t.Errorf("computed key: want the collapse into sluice_net:\n%s", bq)
	}

	for _, q := range []string{sqlOf(pda.Steps()), sqlOf(pdb.Steps())} {
		if strings.Contains(q, "'UPDATE_BEFORE', 0, true") {
			t.Errorf("a merge's read should leave UPDATE_BEFORE out:\n%s", q)
		}
		if strings.Contains(q, "sluice_stage") {
			t.Errorf("a pushdown stages nothing, yet its plan has the staging table:\n%s", q)
		}
	}

	sqlExec(t, b, `UPDATE fr SET v = 10 WHERE id = 1`, `INSERT INTO fr VALUES (3, 3)`, `UPDATE fr SET v = 30 WHERE id = 3`,
		`DELETE FROM fr WHERE id = 2`, `INSERT INTO fr VALUES (4, 4)`, `UPDATE fr SET v = 4 WHERE id = 4`)
	stA, _, _, err := pda.Run(ctx, "ja")
	if err != nil {
		t.Fatal(err)
	}
	stB, _, _, err := pdb.Run(ctx, "jb")
	if err != nil {
		t.Fatal(err)
	}
	stC, _, _, err := pdc.Run(ctx, "jc")
	if err != nil {
		t.Fatal(err)
	}
	// ra started empty: updates of keys it never saw insert them.
	check(t, "pass-through merge", tableRows(t, b, `SELECT id, v FROM ra ORDER BY id`), []string{"1 10.00", "3 30.00", "4 4.00"})
	// Net changes in __seq order of their last log row: id 1 (k 1),
	// id 3 (k 1), id 2 deleted (k 0), id 4 inserted (k 0): the last per k wins.
	check(t, "computed-key merge", tableRows(t, b, `SELECT k, v FROM rb ORDER BY k`), []string{"0 4.00", "1 30.00"})
	if stA.Read[cdc.OpUpdateBefore] != 1 || stA.Written[cdc.OpUpdateAfter] != 1 || stA.Written[cdc.OpInsert] != 2 || stA.Written[cdc.OpDelete] != 1 {
		t.Errorf("pass-through stats: %+v", stA)
	}
	// v > 5: UPDATE_AFTER (1, 10) and INSERT (3, 30) pass; DELETE (2, 2)
	// (its first image) and INSERT (4, 4) do not.
	check(t, "filtered one-statement merge", tableRows(t, b, `SELECT id, v FROM rc ORDER BY id`), []string{"1 10.00", "3 30.00"})
	if w := map[cdc.Op]int64{cdc.OpUpdateAfter: 1, cdc.OpInsert: 1}; !maps.Equal(stC.Written, w) {
		t.Errorf("filtered written %v, want %v", stC.Written, w)
	}
	// Net changes: id 1 update, id 3 insert, id 2 delete, id 4 insert.
	wantRead := map[cdc.Op]int64{cdc.OpInsert: 2, cdc.OpUpdateBefore: 1, cdc.OpUpdateAfter: 1, cdc.OpDelete: 1}
	for name, st := range map[string]map[cdc.Op]int64{"pass-through": stA.Read, "computed-key": stB.Read, "filtered": stC.Read} {
		if !maps.Equal(st, wantRead) {
			t.Errorf("%s read counts %v, want %v", name, st, wantRead)
		}
	}
	if stB.Written[cdc.OpInsert]+stB.Written[cdc.OpUpdateAfter]+stB.Written[cdc.OpDelete] != 2 {
		t.Errorf("computed-key stats: %+v", stB)
	}
}
