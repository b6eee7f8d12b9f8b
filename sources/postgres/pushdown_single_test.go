package postgres

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
)

// TestSingleCounts: the one-statement pushdown counts the changes read
// and the rows written with sequences inside the statement. Every kind of
// read is covered: the initial rows (counted by the wrapping subquery), a
// STANDARD read from an offset (counted by the read itself), without a
// filter, with a filter on the key (which PostgreSQL could otherwise push
// below the count) and with one on a value. Without a filter the
// UPDATE_AFTERs are derived from the MERGE's row count (derivedCounts):
// into an empty target, into one holding the rows (the DELETE and the
// update then match) and into one of key columns only (no UPDATE clause:
// the matched update is left alone). The expected rows and counts are
// worked out by hand from the changes below.
func TestSingleCounts(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE sc (id int PRIMARY KEY, v int)`, `INSERT INTO sc VALUES (1, 1), (2, 2), (3, 3)`,
		`CREATE TABLE t_pre (id int PRIMARY KEY, v int)`, `INSERT INTO t_pre SELECT * FROM sc`,
		`CREATE TABLE t_keys (id int PRIMARY KEY)`, `INSERT INTO t_keys SELECT id FROM sc`)
	track(t, b, "sc")
	mkStream(t, b, "sc_init", "sc", dsl.ModeStandard, true)
	for _, s := range []string{"sc_all", "sc_key", "sc_val", "sc_ver", "sc_pre", "sc_keys"} {
		mkStream(t, b, s, "sc", dsl.ModeStandard, false)
	}
	sqlExec(t, b,
		`UPDATE sc SET v = 10 WHERE id = 1`,                           // UPDATE_BEFORE (1, 1), UPDATE_AFTER (1, 10)
		`DELETE FROM sc WHERE id = 2`,                                 // DELETE (2, 2)
		`INSERT INTO sc VALUES (4, 4)`,                                // INSERT (4, 4)
		`UPDATE sc SET v = 3 WHERE id = 3`,                            // no change
		`INSERT INTO sc VALUES (5, 5)`, `DELETE FROM sc WHERE id = 5`) // nothing

	sink := func(table string) plan.SinkStage {
		return plan.SinkStage{Backend: "postgres", Table: table, Mode: plan.ModeMerge, Keys: []string{"id"}, OneChangePerKey: true}
	}
	fromOffset := map[cdc.Op]int64{cdc.OpUpdateBefore: 1, cdc.OpUpdateAfter: 1, cdc.OpDelete: 1, cdc.OpInsert: 1}
	fromOffsetWritten := map[cdc.Op]int64{cdc.OpUpdateAfter: 1, cdc.OpDelete: 1, cdc.OpInsert: 1}
	for _, tc := range []struct {
		name, stream, filter, target string
		read, written                map[cdc.Op]int64
		rows                         []string
		sel                          []string // default id, v
	}{
		// The rows at the read point, each an INSERT.
		{"initial rows", "sc_init", "", "t_init", map[cdc.Op]int64{cdc.OpInsert: 3}, map[cdc.Op]int64{cdc.OpInsert: 3}, []string{"1 10", "3 3", "4 4"}, nil},
		{"no filter", "sc_all", "", "t_all", fromOffset, map[cdc.Op]int64{cdc.OpUpdateAfter: 1, cdc.OpDelete: 1, cdc.OpInsert: 1}, []string{"1 10", "4 4"}, nil},
		// id > 1: the DELETE of 2 (a key the empty target never had) and the INSERT of 4.
		{"filter on the key", "sc_key", "id > 1", "t_key", fromOffset, map[cdc.Op]int64{cdc.OpDelete: 1, cdc.OpInsert: 1}, []string{"4 4"}, nil},
		// v >= 4: the DELETE carries its first image (2, 2) and is dropped.
		{"filter on a value", "sc_val", "v >= 4", "t_val", fromOffset, map[cdc.Op]int64{cdc.OpUpdateAfter: 1, cdc.OpInsert: 1}, []string{"1 10", "4 4"}, nil},
		// A job that reads __commit_version: the read with versions (the
		// window pass over the log), not the one from the table.
		{"filter on the version", "sc_ver", "__commit_version > 0", "t_ver", fromOffset, map[cdc.Op]int64{cdc.OpUpdateAfter: 1, cdc.OpDelete: 1, cdc.OpInsert: 1}, []string{"1 10", "4 4"}, nil},
		// The update and the DELETE match rows of the target.
		{"no filter, target holding the rows", "sc_pre", "", "t_pre", fromOffset, fromOffsetWritten, []string{"1 10", "3 3", "4 4"}, nil},
		// No UPDATE clause: the matched update is left alone.
		{"no filter, target of key columns only", "sc_keys", "", "t_keys", fromOffset, fromOffsetWritten, []string{"1 1", "3 3", "4 4"}, []string{"id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, rowsQuery := tc.sel, "SELECT id, v FROM "+tc.target+" ORDER BY id"
			if sel == nil {
				sel = []string{"id", "v"}
			} else {
				rowsQuery = "SELECT id, id FROM " + tc.target + " ORDER BY id"
			}
			p, s := bindPlan(t, b, tc.stream, tc.filter, sel, sink(tc.target))
			pd, err := b.Pushdown(ctx, p, s)
			if err != nil {
				t.Fatal(err)
			}
			single := pd.(*pushdown).single
			if single == nil {
				t.Fatal("want the one-statement pushdown")
			}
			if fromTable := single.noVersion && single.noTimestamp; fromTable == (tc.stream == "sc_ver") {
				t.Errorf("read from the table = %v for filter %q", fromTable, tc.filter)
			}
			// The sort runs' work_mem goes with the merge join over the read
			// from the table only (the initial rows are not key-ordered).
			var steps []string
			for _, st := range pd.Steps() {
				steps = append(steps, st.SQL)
			}
			if got, want := strings.Contains(strings.Join(steps, "\n"), sortRunSQL), tc.stream != "sc_ver" && tc.stream != "sc_init"; got != want {
				t.Errorf("plan sets %q: %v, want %v", sortRunSQL, got, want)
			}
			st, _, _, err := pd.Run(ctx, "job_"+tc.stream)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(st.Read, tc.read) {
				t.Errorf("read %v, want %v", st.Read, tc.read)
			}
			if !maps.Equal(st.Written, tc.written) {
				t.Errorf("written %v, want %v", st.Written, tc.written)
			}
			check(t, tc.target, tableRows(t, b, rowsQuery), tc.rows)
		})
	}

	// The stream of the initial rows reads from its offset from now on.
	sqlExec(t, b, `UPDATE sc SET v = 30 WHERE id = 3`)
	p, s := bindPlan(t, b, "sc_init", "", []string{"id", "v"}, sink("t_init"))
	pd, err := b.Pushdown(ctx, p, s)
	if err != nil {
		t.Fatal(err)
	}
	st, _, _, err := pd.Run(ctx, "job_sc_init")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[cdc.Op]int64{cdc.OpUpdateBefore: 1, cdc.OpUpdateAfter: 1}; !maps.Equal(st.Read, want) {
		t.Errorf("second run read %v, want %v", st.Read, want)
	}
	check(t, "t_init after the second run", tableRows(t, b, "SELECT id, v FROM t_init ORDER BY id"), []string{"1 10", "3 30", "4 4"})
}

// TestPreferMergeJoin: the merge join is chosen only with an index that
// leads with the merge keys in key order, and a window of at least an
// eighth as many log rows as the target's estimated rows (1,000 here,
// after ANALYZE).
func TestPreferMergeJoin(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b,
		`CREATE TABLE mj_pk (a int PRIMARY KEY, v int)`,
		`CREATE TABLE mj_none (a int, v int)`,
		`CREATE TABLE mj_ba (a int, b int, v int)`, `CREATE UNIQUE INDEX ON mj_ba (b, a)`,
		`CREATE TABLE mj_ab (a int, b int, v int)`, `CREATE INDEX ON mj_ab USING hash (a)`, `CREATE INDEX ON mj_ab (a, b, v)`,
		`CREATE TABLE "order" ("user" int PRIMARY KEY)`,
		`CREATE TABLE mj_empty (a int PRIMARY KEY)`)
	for _, table := range []string{"mj_pk", "mj_none", "mj_ba", "mj_ab", `"order"`} {
		col := "a, v"
		switch table {
		case "mj_ba", "mj_ab":
			col = "a, b, v"
		case `"order"`:
			col = `"user"`
		}
		vals := "g, g"
		switch table {
		case "mj_ba", "mj_ab":
			vals = "g, g, g"
		case `"order"`:
			vals = "g"
		}
		sqlExec(t, b, "INSERT INTO "+table+" ("+col+") SELECT "+vals+" FROM generate_series(1, 1000) g", "ANALYZE "+table)
	}
	for _, tc := range []struct {
		name, target string
		keys         []string
		window       int64
		want         bool
	}{
		{"primary key, large window", `"mj_pk"`, []string{"a"}, 125, true},
		{"primary key, small window", `"mj_pk"`, []string{"a"}, 124, false},
		{"no index", `"mj_none"`, []string{"a"}, 100_000, false},
		{"index in the other order", `"mj_ba"`, []string{"a", "b"}, 100_000, false},
		{"index in key order", `"mj_ba"`, []string{"b", "a"}, 100_000, true},
		{"btree index leading with the keys", `"mj_ab"`, []string{"a", "b"}, 100_000, true},
		{"hash index only", `"mj_ab"`, []string{"v"}, 100_000, false},
		{"reserved words", `"order"`, []string{"user"}, 125, true},
		{"never analyzed", `"mj_empty"`, []string{"a"}, 1, true},
		{"no such table", `"mj_missing"`, []string{"a"}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &single{target: tc.target, keys: tc.keys}
			var got bool
			err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
				var err error
				got, err = s.preferMergeJoin(ctx, tx, tc.window)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("preferMergeJoin(%s %v, window %d) = %v, want %v", tc.target, tc.keys, tc.window, got, tc.want)
			}
		})
	}
}
