package postgres

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// One key's whole life in one run (insert, update, an update to equal
// values, update to NULL, delete, insert again), a key updated in a second run,
// and a text column holding JSON compared as text: every real change makes
// a version, equal ones make none, the delete closes.
func TestHistoryVersions(t *testing.T) {
	pool := openPool(t)
	sk := New(pool, 0, nil)
	at := func(op cdc.Op, ver int64, sec int, row ...any) cdc.Change {
		c := ch(op, ver, row...)
		c.CommitTime = time.Unix(int64(sec), 0).UTC()
		return c
	}
	ts := func(sec int) string { return time.Unix(int64(sec), 0).UTC().Format(time.RFC3339Nano) }
	st := stage("hist", plan.ModeHistory, []string{"id"}, ordersSchema)
	stats, err := runBatches(t, sk, st, cpAt("7"), []cdc.Change{
		at(cdc.OpInsert, 1, 1, 1, "a", dec("1.50")),
		at(cdc.OpInsert, 1, 1, 2, "b", dec("2")),
		at(cdc.OpUpdateBefore, 2, 2, 1, "a", dec("1.50")),
		at(cdc.OpUpdateAfter, 2, 2, 1, "a", dec("3")),
	}, []cdc.Change{
		at(cdc.OpUpdateAfter, 3, 3, 1, "a", dec("3.00")), // equal: no version
		at(cdc.OpUpdateAfter, 4, 4, 1, nil, dec("3")),
		at(cdc.OpDelete, 5, 5, 1, nil, dec("3")),
		at(cdc.OpDelete, 6, 6, 1, nil, dec("3")), // already closed: nothing
		at(cdc.OpInsert, 7, 7, 1, "a", dec("1.5")),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1|a|1.5|" + ts(1) + "|" + ts(2),
		"1|a|3|" + ts(2) + "|" + ts(4),
		"1|NULL|3|" + ts(4) + "|" + ts(5),
		"1|a|1.5|" + ts(7) + "|NULL",
		"2|b|2|" + ts(1) + "|NULL",
	}
	checkRows(t, "after run 1", dump(t, pool, "hist", "id, __valid_from"), want)
	if w := stats.Written; w[cdc.OpInsert] != 3 || w[cdc.OpUpdateAfter] != 2 || w[cdc.OpDelete] != 1 {
		t.Errorf("written %v, want INSERT 3, UPDATE_AFTER 2, DELETE 1", w)
	}
	if _, err := runBatches(t, sk, st, cpAt("9"), []cdc.Change{
		at(cdc.OpUpdateAfter, 8, 8, 2, "b2", dec("2")),
		at(cdc.OpInsert, 8, 8, 1, "a", dec("1.50")),
		at(cdc.OpDelete, 9, 9, 3, "c", dec("1")),
	}); err != nil {
		t.Fatal(err)
	}
	want = append(want[:4], "2|b|2|"+ts(1)+"|"+ts(8), "2|b2|2|"+ts(8)+"|NULL")
	checkRows(t, "after run 2", dump(t, pool, "hist", "id, __valid_from"), want)

	// A json target column: equal documents make no version.
	exec(t, pool, `CREATE TABLE jh (id int NOT NULL, doc json, __valid_from timestamptz NOT NULL, __valid_to timestamptz)`)
	js := cdc.Schema{Columns: []cdc.Column{{Name: "id", Type: cdc.TypeInt}, {Name: "doc", Type: cdc.TypeString}}}
	if _, err := runBatches(t, sk, stage("jh", plan.ModeHistory, []string{"id"}, js), cpAt("2"), []cdc.Change{
		at(cdc.OpInsert, 1, 1, 1, `{"a": 1}`), at(cdc.OpUpdateAfter, 2, 2, 1, `{"a": 1}`), at(cdc.OpUpdateAfter, 3, 3, 1, `{"a": 2}`),
	}); err != nil {
		t.Fatal(err)
	}
	checkRows(t, "json history", dump(t, pool, "jh", "__valid_from"), []string{`1|map[a:1]|` + ts(1) + "|" + ts(3), `1|map[a:2]|` + ts(3) + "|NULL"})
}

// An existing target without the validity columns is refused with the
// ALTER TABLE that adds them.
func TestHistoryTargetNeedsValidity(t *testing.T) {
	pool := openPool(t)
	exec(t, pool, `CREATE TABLE old (id bigint, "user" text, amount numeric(38,10), __valid_from timestamptz)`)
	_, err := runBatches(t, New(pool, 0, nil), stage("old", plan.ModeHistory, []string{"id"}, ordersSchema), cpAt("1"))
	if !errors.Is(err, ErrAddedColumn) {
		t.Fatalf("err = %v, want ErrAddedColumn", err)
	}
	if want := `ALTER TABLE "old" ADD COLUMN "__valid_to" timestamptz`; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// on_delete: soft keeps a deleted row with its last values and the
// DELETE's commit time, and a later INSERT clears the mark; ignore keeps
// the row as it was; delete (the default) deletes it. Each on PostgreSQL
// 15+ (MERGE) and as PostgreSQL 13/14 runs it (DELETE/UPDATE + ON
// CONFLICT), with one change per key and with the collapse.
func TestMergeOnDelete(t *testing.T) {
	pool := openPool(t)
	at := func(op cdc.Op, ver int64, sec int, row ...any) cdc.Change {
		c := ch(op, ver, row...)
		c.CommitTime = time.Unix(int64(sec), 0).UTC()
		return c
	}
	del := time.Unix(2, 0).UTC().Format(time.RFC3339Nano)
	n := 0
	for _, version := range []int{0, 140000} {
		for _, one := range []bool{false, true} {
			for _, tc := range []struct {
				onDelete plan.OnDelete
				want     []string
			}{
				{plan.OnDeleteDelete, []string{"2|b|2.5", "3|c|3"}},
				{plan.OnDeleteSoft, []string{"1|a|1|" + del, "2|b|2.5|NULL", "3|c|3|NULL"}},
				{plan.OnDeleteIgnore, []string{"1|a|1", "2|b|2.5", "3|c|3"}},
			} {
				n++
				table := fmt.Sprintf("m%d", n)
				st := stage(table, plan.ModeMerge, []string{"id"}, ordersSchema)
				st.OnDelete, st.OneChangePerKey = tc.onDelete, one
				sk := New(pool, version, nil)
				if version != 0 {
					exec(t, pool, fmt.Sprintf(`CREATE TABLE %s (id bigint PRIMARY KEY, "user" text, amount numeric(38,10)%s)`, table,
						map[bool]string{true: ", __deleted_at timestamptz"}[tc.onDelete == plan.OnDeleteSoft]))
				}
				for i, batch := range [][]cdc.Change{
					{at(cdc.OpInsert, 1, 1, 1, "a", dec("1")), at(cdc.OpInsert, 1, 1, 2, "b", dec("2")), at(cdc.OpInsert, 1, 1, 3, "c", dec("3"))},
					{at(cdc.OpDelete, 2, 2, 1, "a", dec("1")), at(cdc.OpDelete, 2, 2, 2, "b", dec("2"))},
					{at(cdc.OpInsert, 3, 3, 2, "b", dec("2.5"))},
				} {
					if _, err := runBatches(t, sk, st, cpAt(fmt.Sprint(i)), batch); err != nil {
						t.Fatalf("%s (version %d, one change per key %v): %v", tc.onDelete, version, one, err)
					}
				}
				checkRows(t, fmt.Sprintf("%s (version %d, one change per key %v)", tc.onDelete, version, one), dump(t, pool, table, "id"), tc.want)
			}
		}
	}
}
