package runner_test

import (
	"fmt"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestMergeKeyWithinPrimaryKey: merge keys (id) that are part of the
// source's primary key (id, region). An UPDATE that moves a row within its
// primary key reads as the DELETE of (id, old) and the INSERT of
// (id, new), one commit; after it the row exists, so the target's row of
// that id must hold the new values, whichever of the two changes arrives
// first (the new region sorts after the old one, then before it). A
// PostgreSQL sink deleted the row (a tie on the commit version picked the
// DELETE): a row lost with exit 0. Every source × sink path and the
// history mode's current versions; the expected rows are the source's.
func TestMergeKeyWithinPrimaryKey(t *testing.T) {
	pg, pg2 := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	for i, tc := range []struct {
		name, src, sink string // "" sink: the source's database (pushed down)
		mode            string
	}{
		{"postgres pushdown", pg, "", "merge"},
		{"postgres to postgres", pg, pg2, "merge"},
		{"postgres to sqlite", pg, "sqlite", "merge"},
		{"sqlite pushdown", "sqlite", "", "merge"},
		{"sqlite to postgres", "sqlite", pg2, "merge"},
		{"postgres history", pg, pg2, "history"},
		{"sqlite history", "sqlite", "", "history"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			src, sink := tc.src, tc.sink
			if src == "sqlite" {
				src = e.conn("src.db")
			}
			if sink == "sqlite" {
				sink = e.conn("sink.db")
			}
			table := fmt.Sprintf("mk%d", i)
			e.sql(src, `CREATE TABLE `+table+` (id INT, region STRING, v INT, PRIMARY KEY (id, region));
ALTER TABLE `+table+` SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM `+table+`_s ON TABLE `+table+` WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
INSERT INTO `+table+` VALUES (1, 'eu', 1), (2, 'eu', 2), (3, 'eu', 3);`)
			conn := ""
			if sink != "" {
				conn = ", connection: '" + sink + "'"
			}
			j := e.job("j.yaml", "name: "+table+"\nconnection: '"+src+"'\nsource: "+table+"_s\nsink: {table: "+table+"_t, mode: "+tc.mode+", keys: [id]"+conn+"}\n")
			target := sink
			if target == "" {
				target = src
			}
			current := "SELECT id, region, v FROM " + table + "_t ORDER BY id"
			if tc.mode == "history" {
				current = "SELECT id, region, v FROM " + table + "_t WHERE __valid_to IS NULL ORDER BY id"
			}
			for _, change := range []string{
				"UPDATE " + table + " SET region = 'us', v = 10 WHERE id = 1",                                                              // the new key sorts after the old
				"UPDATE " + table + " SET region = 'asia', v = 20 WHERE id = 2",                                                            // before it
				"UPDATE " + table + " SET region = 'us', v = 11 WHERE id = 1; UPDATE " + table + " SET region = 'eu', v = 12 WHERE id = 1", // back, in one run
			} {
				if _, err := e.run(j); err != nil {
					t.Fatal(err)
				}
				e.sql(src, change)
				if _, err := e.run(j); err != nil {
					t.Fatal(err)
				}
				want, got := e.sql(src, "SELECT id, region, v FROM "+table+" ORDER BY id"), e.sql(target, current)
				if !equalRows(got, want) {
					t.Fatalf("after %q: target %v, source %v", change, got, want)
				}
			}
		})
	}
}
