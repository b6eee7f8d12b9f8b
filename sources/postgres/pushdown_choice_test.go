package postgres

import (
	"context"
	"testing"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
)

// TestPushdownReadChoice: the one-statement pushdown reads a window of few
// log rows next to the table's rows from the log alone, and a large window
// with the images taken from the table (pushdown.fromTable); both leave
// the target equal to the source table, and the plan shows both reads.
// The table (2,000 rows, analyzed) and the windows are sized so that the
// estimates fall clearly on either side: 5 changes (one page of log: 50
// estimated rows, under a quarter of 2,000) and an update of every row
// plus inserts and deletes (thousands of log rows).
func TestPushdownReadChoice(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE "order" (id int PRIMARY KEY, "user" text, qty int)`,
		`INSERT INTO "order" SELECT g, 'u' || g, g % 7 FROM generate_series(1, 2000) g`,
		`CREATE TABLE order_copy (id int PRIMARY KEY, "user" text, qty int)`,
		`INSERT INTO order_copy SELECT * FROM "order"`,
		`ANALYZE "order"`)
	track(t, b, "order")
	mkStream(t, b, "order_s", "order", dsl.ModeStandard, false)
	sink := plan.SinkStage{Backend: "postgres", Table: "order_copy", Mode: plan.ModeMerge, Keys: []string{"id"}, OneChangePerKey: true}
	want := func() []string { return tableRows(t, b, `SELECT id, "user", qty FROM "order" ORDER BY id`) }
	for _, tc := range []struct {
		name      string
		changes   []string
		tableRead bool
	}{
		{"small window: from the log", []string{
			`UPDATE "order" SET qty = qty + 1 WHERE id IN (3, 4)`,
			`UPDATE "order" SET qty = qty WHERE id = 5`, // no change
			`DELETE FROM "order" WHERE id = 6`,
			`INSERT INTO "order" VALUES (2001, 'new', 1)`,
			`UPDATE "order" SET "user" = NULL WHERE id = 7`,
		}, false},
		{"large window: images from the table", []string{
			`UPDATE "order" SET qty = qty * 2`,
			`DELETE FROM "order" WHERE id % 10 = 0`,
			`INSERT INTO "order" SELECT g, 'n' || g, 0 FROM generate_series(3001, 3500) g`,
			`UPDATE "order" SET "user" = 'back' WHERE id BETWEEN 100 AND 120`,
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sqlExec(t, b, tc.changes...)
			p, s := bindPlan(t, b, "order_s", "", []string{"id", "user", "qty"}, sink)
			pdp, err := b.Pushdown(ctx, p, s)
			if err != nil {
				t.Fatal(err)
			}
			pd := pdp.(*pushdown)
			if pd.single == nil || !pd.noVersions() {
				t.Fatal("want the one-statement pushdown of a job without versions")
			}
			n := 0
			for _, st := range pd.Steps() {
				if len(st.SQL) > 5 && st.SQL[:5] == "MERGE" {
					n++
				}
			}
			if n != 2 {
				t.Errorf("the plan shows %d MERGE statements, want 2 (over the read from the table and over the log)", n)
			}
			if _, _, _, err := pd.Run(ctx, "job_choice"); err != nil {
				t.Fatal(err)
			}
			if got := pd.tableRead.Load(); got != tc.tableRead {
				t.Errorf("read the images from the table: %v, want %v", got, tc.tableRead)
			}
			check(t, "order_copy", tableRows(t, b, `SELECT id, "user", qty FROM order_copy ORDER BY id`), want())
		})
	}
}
