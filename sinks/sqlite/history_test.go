package sqlite

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// at builds a full-row change committed at second sec after a fixed
// instant.
func at(op cdc.Op, ver int64, sec int, row ...any) cdc.Change {
	c := ch(op, ver, row...)
	c.CommitTime = time.Unix(1705312800+int64(sec), 0).UTC()
	return c
}

// ts is the instant at second sec as dump prints a TIMESTAMP column (the
// driver reads the declared type as a time).
func ts(sec int) string {
	return time.Unix(1705312800+int64(sec), 0).UTC().String()
}

// One key's whole life in one run (insert, update, an update to equal
// values, update, delete, insert again) and a second key's in two runs:
// every real change makes a version, the equal one makes none, the delete
// closes, and the second run closes the version the first left current.
func TestHistoryVersions(t *testing.T) {
	db := openDB(t)
	st := stage("hist", plan.ModeHistory, []string{"id"}, orders)
	run1 := []cdc.Change{
		at(cdc.OpInsert, 1, 1, 1, "a", dec("1.50"), "new"),
		at(cdc.OpInsert, 1, 1, 2, "b", dec("2"), "new"),
		at(cdc.OpUpdateBefore, 2, 2, 1, "a", dec("1.50"), "new"),
		at(cdc.OpUpdateAfter, 2, 2, 1, "a", dec("3"), "new"),
		at(cdc.OpUpdateAfter, 3, 3, 1, "a", dec("3.00"), "new"), // equal: no version
		at(cdc.OpUpdateAfter, 4, 4, 1, "a", dec("3"), nil),
		at(cdc.OpDelete, 5, 5, 1, "a", dec("3"), nil),
		at(cdc.OpDelete, 6, 6, 1, "a", dec("3"), nil), // already closed: nothing
		at(cdc.OpInsert, 7, 7, 1, "a", dec("1.5"), "back"),
	}
	stats, err := runBatches(t, db, st, cpAt("7"), run1[:4], run1[4:])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1|a|1.50|new|" + ts(1) + "|" + ts(2),
		"1|a|3.00|new|" + ts(2) + "|" + ts(4),
		"1|a|3.00|NULL|" + ts(4) + "|" + ts(5),
		"1|a|1.50|back|" + ts(7) + "|NULL",
		"2|b|2.00|new|" + ts(1) + "|NULL",
	}
	checkRows(t, dump(t, db, "hist", "id, __valid_from"), want)
	if w := stats.Written; w[cdc.OpInsert] != 3 || w[cdc.OpUpdateAfter] != 2 || w[cdc.OpDelete] != 1 {
		t.Errorf("written %v, want INSERT 3, UPDATE_AFTER 2, DELETE 1", w)
	}

	// The second run: key 2 updated (closes the version run 1 left current),
	// key 1 re-delivered with its current values (nothing), key 3 deleted
	// without a version (nothing).
	if _, err := runBatches(t, db, st, cpAt("9"), []cdc.Change{
		at(cdc.OpUpdateAfter, 8, 8, 2, "b2", dec("2"), "new"),
		at(cdc.OpInsert, 8, 8, 1, "a", dec("1.50"), "back"),
		at(cdc.OpDelete, 9, 9, 3, "c", dec("1"), nil),
	}); err != nil {
		t.Fatal(err)
	}
	want = append(want[:4], "2|b|2.00|new|"+ts(1)+"|"+ts(8), "2|b2|2.00|new|"+ts(8)+"|NULL")
	checkRows(t, dump(t, db, "hist", "id, __valid_from"), want)
	if got := storedOffset(t, db, "job1"); got != "9" {
		t.Errorf("checkpoint %q, want 9", got)
	}
}

// A target sluice creates has the validity columns and the index on the
// keys and __valid_to; an existing target without them is refused with
// the ALTER TABLE that adds them.
func TestHistoryTarget(t *testing.T) {
	db := openDB(t)
	st := stage("hist", plan.ModeHistory, []string{"id"}, orders)
	if _, err := runBatches(t, db, st, cpAt("1"), []cdc.Change{at(cdc.OpInsert, 1, 1, 1, "a", dec("1"), "x")}); err != nil {
		t.Fatal(err)
	}
	var cols string
	if err := db.QueryRow(`SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_index_info('hist_keys_valid_to') ORDER BY seqno)`).Scan(&cols); err != nil || cols != "id,__valid_to" {
		t.Errorf("index hist_keys_valid_to on %q (%v), want id,__valid_to", cols, err)
	}

	exec(t, db, `CREATE TABLE old (id INT, name TEXT, amount TEXT, status TEXT, __valid_from TIMESTAMP)`)
	_, err := runBatches(t, db, stage("old", plan.ModeHistory, []string{"id"}, orders), cpAt("1"))
	if !errors.Is(err, ErrAddedColumn) {
		t.Fatalf("err = %v, want ErrAddedColumn", err)
	}
	if want := `ALTER TABLE "old" ADD COLUMN "__valid_to" TIMESTAMP`; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// on_delete: soft keeps a deleted row with its last values and the
// DELETE's commit time; a later INSERT clears the mark; ignore keeps the
// row as it was; delete (the default) deletes it. One relation per case,
// through the net change per key (the last change wins).
func TestMergeOnDelete(t *testing.T) {
	for _, tc := range []struct {
		onDelete plan.OnDelete
		want     []string
	}{
		{plan.OnDeleteDelete, []string{"2|b|2.50|y", "3|c|3.00|x"}},
		{plan.OnDeleteSoft, []string{"1|a|1.00|x|" + ts(2), "2|b|2.50|y|NULL", "3|c|3.00|x|NULL"}},
		{plan.OnDeleteIgnore, []string{"1|a|1.00|x", "2|b|2.50|y", "3|c|3.00|x"}},
	} {
		t.Run(string(tc.onDelete), func(t *testing.T) {
			db := openDB(t)
			st := stage("m", plan.ModeMerge, []string{"id"}, orders)
			st.OnDelete = tc.onDelete
			if _, err := runBatches(t, db, st, cpAt("1"), []cdc.Change{
				at(cdc.OpInsert, 1, 1, 1, "a", dec("1"), "x"), at(cdc.OpInsert, 1, 1, 2, "b", dec("2"), "x"), at(cdc.OpInsert, 1, 1, 3, "c", dec("3"), "x"),
			}); err != nil {
				t.Fatal(err)
			}
			// Key 2 is deleted in the second run and inserted again in the third.
			if _, err := runBatches(t, db, st, cpAt("2"), []cdc.Change{
				at(cdc.OpDelete, 2, 2, 1, "a", dec("1"), "x"), at(cdc.OpDelete, 2, 2, 2, "b", dec("2"), "x"),
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := runBatches(t, db, st, cpAt("3"), []cdc.Change{at(cdc.OpInsert, 3, 3, 2, "b", dec("2.5"), "y")}); err != nil {
				t.Fatal(err)
			}
			checkRows(t, dump(t, db, "m", "id"), tc.want)
		})
	}
}

// The validity columns hold every commit time with six fraction digits,
// whatever its own (0, 0.12, 0.123456 s): text of one width, that sorts.
func TestHistoryCommitTimeWidth(t *testing.T) {
	db := openDB(t)
	st := stage("hist_w", plan.ModeHistory, []string{"id"}, orders)
	base := time.Date(2026, 12, 1, 10, 0, 3, 0, time.UTC)
	change := func(op cdc.Op, ver int64, frac time.Duration, row ...any) cdc.Change {
		c := ch(op, ver, row...)
		c.CommitTime = base.Add(frac)
		return c
	}
	if _, err := runBatches(t, db, st, cpAt("3"), []cdc.Change{
		change(cdc.OpInsert, 1, 0, 1, "a", dec("1"), "x"),
		change(cdc.OpUpdateAfter, 2, 120*time.Millisecond, 1, "a", dec("2"), "x"),
		change(cdc.OpUpdateAfter, 3, 123456*time.Microsecond, 1, "a", dec("3"), "x"),
	}); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT "__valid_from" || '', coalesce("__valid_to", '') FROM hist_w ORDER BY "__valid_from"`) // expressions: the driver reads the text, not a time
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var from, to string
		if err := rows.Scan(&from, &to); err != nil {
			t.Fatal(err)
		}
		got = append(got, from+" "+to)
	}
	want := []string{
		"2026-12-01 10:00:03.000000+00:00 2026-12-01 10:00:03.120000+00:00",
		"2026-12-01 10:00:03.120000+00:00 2026-12-01 10:00:03.123456+00:00",
		"2026-12-01 10:00:03.123456+00:00 ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stored validity text:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
