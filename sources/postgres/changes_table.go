package postgres

import (
	"fmt"
	"slices"
	"strings"

	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// The net change from the first log row and the table itself. A STANDARD
// read needs, per key, the image at the offset (the first log row of the
// window: a before image, or none when the key was inserted) and the
// image at the read point (the last log row). The general read
// (changesQuery) takes both from the log, with a window pass over the
// sorted log rows. The image at the read point is also the table's row as
// the read's snapshot sees it: the read runs in one REPEATABLE READ
// snapshot, every change the snapshot sees is in the window (the read
// point is narrowed to the window's transactions, Backend.readPoint), and
// the capture triggers log every change. So this read takes the first log
// row per key with DISTINCT ON, a Unique pass over the same sort, and
// joins the table by its primary key for the rest: present or absent, and
// its values.
//
// It cannot tell the last change's __seq or time: __commit_version and
// __commit_timestamp are NULL, so it serves only a reader that uses
// neither (the one-statement pushdown of a merge whose job does not read
// them, queryOptions.fromTable). On bench/pgapply's workload (1M changes,
// 632k keys) the MERGE over it took 4.2–4.3 s, over the window read
// 4.8–5.1 s, the hand-written last-change MERGE 4.1–4.2 s (psql, three
// runs each, alternating). Leaving the paired new images ('U') out of its
// sort then took the statement from 4.9 s to 4.0 s on cold copies
// (docs/benchmarks.md).

// tableImagesQuery is changesQuery's STANDARD read from an offset, one row
// per changed key (o.afterOnly), ordered by the key, with the images at
// the read point taken from the table t.
func tableImagesQuery(t *Tracked, w string, o queryOptions) string {
	cols := t.Table.Columns
	keys := sinkpg.QuoteList("", t.Table.Key)
	var fcols, on, out, first, last []string
	present := ""
	for i, c := range cols {
		n := sinkpg.Quote(c.Name)
		fcols = append(fcols, "w."+n)
		if slices.Contains(t.Table.Key, c.Name) {
			on = append(on, c.Select("t.")+" = f."+n)
			out = append(out, o.out(c, "d."+n)+" AS "+n)
			if present == "" {
				present = "t." + n + " IS NOT NULL"
			}
			continue
		}
		zi := sinkpg.Quote(fmt.Sprintf("__z%d", i))
		last = append(last, c.Select("t.")+" AS "+zi)
		out = append(out, o.out(c, fmt.Sprintf("CASE WHEN d.__is THEN d.%s ELSE d.%s END", zi, n))+" AS "+n)
		first = append(first, "d."+n)
	}
	lastCols, changed := "", "false"
	if len(last) > 0 {
		lastCols = ", " + strings.Join(last, ", ")
		var z []string
		for _, l := range last {
			z = append(z, "d."+l[strings.LastIndex(l, " AS ")+4:])
		}
		changed = fmt.Sprintf("ROW(%s) IS DISTINCT FROM ROW(%s)", strings.Join(first, ", "), strings.Join(z, ", "))
	}
	ct := "CASE WHEN NOT d.__was THEN 'INSERT' WHEN d.__is THEN 'UPDATE_AFTER' ELSE 'DELETE' END"
	// A paired new image ('U') always follows an old image of its key
	// in the same statement, so it is never a key's first log row: the
	// sort leaves those rows out, about half of an update's log rows.
	firstRows := ""
	if t.pairsKnown() {
		firstRows = " WHERE w.__op <> 'U'"
	}
	return w + fmt.Sprintf(`,
f AS (SELECT DISTINCT ON (%[1]s) w.__op, %[2]s FROM w%[12]s ORDER BY %[1]s, w.__seq),
d AS (SELECT f.*, f.__op IN ('B', 'D') AS __was, %[3]s AS __is%[4]s
      FROM f LEFT JOIN %[5]s t ON %[6]s)
SELECT %[7]s AS "__change_type", NULL::bigint AS "__commit_version", NULL::timestamptz AS "__commit_timestamp", %[8]s%[9]s
FROM d
WHERE (d.__was OR d.__is) AND (NOT (d.__was AND d.__is) OR %[10]s)
ORDER BY %[1]s%[11]s`, keys, strings.Join(fcols, ", "), present, lastCols, sinkpg.Quote(t.Table.Name),
		strings.Join(on, " AND "), ct, strings.Join(out, ", "), o.countedColumn(ct), changed, o.fence(), firstRows)
}
