package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
)

// TestSeqOffsetVersions: a STANDARD read from an offset versions changes
// by their __seq offset in the window (no dense_rank sort): versions lie
// within the batch's 2^32 range, increase in read order, an UPDATE_BEFORE
// shares its UPDATE_AFTER's version, and the next batch's are higher. The
// pushdown plan shows the read with the bound parameter the run passes.
func TestSeqOffsetVersions(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE sv (id int PRIMARY KEY, v int)`, `INSERT INTO sv VALUES (1, 1), (2, 2)`)
	track(t, b, "sv")
	mkStream(t, b, "svs", "sv", dsl.ModeStandard, false)

	p, s := bindPlan(t, b, "svs", "", []string{"id", "v"},
		plan.SinkStage{Backend: "postgres", Table: "svr", Mode: plan.ModeMerge, Keys: []string{"id"}})
	pd, err := b.Pushdown(ctx, p, s)
	if err != nil {
		t.Fatal(err)
	}
	var readSQL string
	for _, st := range pd.Steps() {
		if strings.HasPrefix(st.SQL, "CREATE TEMP TABLE "+readTable) {
			readSQL = st.SQL
		}
	}
	if !strings.Contains(readSQL, "(d.__tmax - $1::bigint)") || strings.Contains(readSQL, "dense_rank") {
		t.Errorf("plan's read: want the __seq offset from $1, no dense_rank:\n%s", readSQL)
	}

	sqlExec(t, b, `UPDATE sv SET v = 10 WHERE id = 1`, `INSERT INTO sv VALUES (3, 3)`, `DELETE FROM sv WHERE id = 2`, `UPDATE sv SET v = 11 WHERE id = 1`)
	chs, got := read(t, b, "svs", true)
	check(t, "first batch", got, []string{"INSERT 3 3", "DELETE 2 2", "UPDATE_BEFORE 1 1", "UPDATE_AFTER 1 11"})
	batch := chs[0].CommitVersion >> 32
	for i, c := range chs {
		if c.CommitVersion>>32 != batch || c.CommitVersion&(1<<32-1) == 0 {
			t.Errorf("change %d: version %#x outside batch %d", i, c.CommitVersion, batch)
		}
		if i > 0 && c.CommitVersion < chs[i-1].CommitVersion {
			t.Errorf("versions decrease: %d then %d", chs[i-1].CommitVersion, c.CommitVersion)
		}
		if c.Op == cdc.OpUpdateBefore && chs[i+1].CommitVersion != c.CommitVersion {
			t.Errorf("UPDATE_BEFORE %d, UPDATE_AFTER %d", c.CommitVersion, chs[i+1].CommitVersion)
		}
	}
	if chs[0].CommitVersion == chs[1].CommitVersion {
		t.Errorf("changes of different keys share version %d", chs[0].CommitVersion)
	}
	sqlExec(t, b, `UPDATE sv SET v = 12 WHERE id = 3`)
	chs2, got := read(t, b, "svs", true)
	check(t, "second batch", got, []string{"UPDATE_BEFORE 3 3", "UPDATE_AFTER 3 12"})
	if chs2[0].CommitVersion <= chs[len(chs)-1].CommitVersion {
		t.Errorf("second batch version %d not above %d", chs2[0].CommitVersion, chs[len(chs)-1].CommitVersion)
	}

	// The pushed-down run executes the read with $1 bound.
	sqlExec(t, b, `UPDATE sv SET v = 13 WHERE id = 3`)
	if _, _, _, err := pd.Run(ctx, "svj"); err != nil {
		t.Fatal(err)
	}
	rs, err := b.Query(ctx, `SELECT id, v FROM svr ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs.Rows {
		out = append(out, cdc.FormatValue(r[0], rs.Columns[0].Type)+" "+cdc.FormatValue(r[1], rs.Columns[1].Type))
	}
	// The job starts at the stream's offset, after the two reads: only id 3 changed.
	check(t, "pushed-down merge", out, []string{"3 13"})
}
