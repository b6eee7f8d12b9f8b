package postgres

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/cdc"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// ChangesQuery returns the SQL text of one read of stream s on tracked
// table t, from position from (nil: everything the log holds) to the read
// point to. It is the single definition of a read, used by Changes and,
// as a subquery, by pushdown.
//
// The query must run in a REPEATABLE READ transaction whose snapshot is
// to.Snap (pg_current_snapshot() in that transaction): the initial rows of
// a SHOW_INITIAL_ROWS stream are read from the table itself. Every value is
// a literal; there are no parameters.
//
// Result columns, in order: "__change_type" text (INSERT, UPDATE_BEFORE,
// UPDATE_AFTER, DELETE), "__commit_version" bigint, "__commit_timestamp"
// timestamptz, then the table's columns (types other than those of
// sinkpg.LogicalType's mapping cast to text). Rows are ordered by
// __commit_version, an UPDATE_BEFORE directly before its UPDATE_AFTER.
func ChangesQuery(t *Tracked, s *runner.StreamInfo, from *Position, to Position) string {
	return changesQuery(t, s, from, to, queryOptions{ordered: true, base: literalBase(to)})
}

// literalBase is the window's min(__seq) - 1 of read point to as a
// literal, "" when the window has no usable base (Position.hasSeqBase).
func literalBase(to Position) string {
	if !to.hasSeqBase {
		return ""
	}
	return fmt.Sprintf("%d", to.seqBase)
}

// queryOptions vary the text of changesQuery.
type queryOptions struct {
	// ordered adds the final ORDER BY (commit order); pushdown leaves it
	// out, the sink orders or collapses by __commit_version itself.
	ordered bool
	// base is the SQL of the window's min(__seq) - 1 (a literal or a bound
	// parameter): when set, the STANDARD read from an offset versions a
	// change (batch << 32) + (__tmax - base); when empty, by the dense
	// rank of __tmax (versionedWindowCTE).
	base string
	// afterOnly leaves UPDATE_BEFORE out of a STANDARD read from an offset
	// (runner.ReadOptions.OmitUpdateBefore): one row per key with a net
	// change, each UPDATE_AFTER standing for its omitted UPDATE_BEFORE.
	afterOnly bool
	// keyOrdered orders a STANDARD read from an offset by the primary key
	// (instead of ordered's commit order), which costs no sort: the window
	// pass sorts by the key already. A query around it can then join the
	// read along an index on the key (a merge join) without sorting it.
	// Ignored for other reads.
	keyOrdered bool
	// counted, when set, adds a last column to a STANDARD read from an
	// offset: counted(the change type's SQL expression), e.g. a column that
	// counts the rows by type (the one-statement pushdown's counters).
	counted func(changeType string) string
	// noTimestamp outputs NULL as a STANDARD read's __commit_timestamp,
	// for a caller that does not use it: the window pass then neither
	// reads nor sorts the log's __ts.
	noTimestamp bool
	// noVersion outputs NULL as the __commit_version of a STANDARD read
	// from an offset without UPDATE_BEFORE ordered by the key (afterOnly,
	// keyOrdered) and without a seq base, for a caller that does not use
	// it: the window then
	// needs no transaction's last __seq (__tmax, a window pass over the
	// log sorted by __txid) and no rank.
	noVersion bool
	// fromTable takes a STANDARD read from an offset without
	// UPDATE_BEFORE (afterOnly) from the first log row per key and the
	// table itself, ordered by the key, with NULL versions and times
	// (tableImagesQuery): for a caller that uses neither.
	fromTable bool
	// native outputs every table column in the table's own type: the
	// columns the log window carries as text (json, uuid, arrays, …,
	// sinkpg.LogicalType) are cast back, so a same-database write stores
	// them in their own type (pushdown). Without it they stay text, as
	// Changes decodes them.
	native bool
}

// out returns the SQL of an output column of c, sql, cast back to c's
// type when o.native and the read carries c as text.
func (o queryOptions) out(c sinkpg.Column, sql string) string {
	if o.native && !c.Native {
		return "(" + sql + ")::" + c.PGType
	}
	return sql
}

// outTable is the table's columns as read from the table itself: text
// as the log carries them (textCols), or with o.native the columns
// themselves.
func (o queryOptions) outTable(t *Tracked, textCols []string) string {
	if !o.native {
		return strings.Join(textCols, ", ")
	}
	return sinkpg.QuoteList("t.", t.Table.Schema().Names())
}

// outList is the table's columns by name, through out.
func (o queryOptions) outList(t *Tracked) string {
	l := make([]string, len(t.Table.Columns))
	for i, c := range t.Table.Columns {
		n := sinkpg.Quote(c.Name)
		l[i] = n
		if o.native && !c.Native {
			l[i] = o.out(c, n) + " AS " + n
		}
	}
	return strings.Join(l, ", ")
}

// seqVersioned reports whether a read from from uses the __seq offset
// version (seqBase) rather than a dense rank: the STANDARD read from an
// offset.
func seqVersioned(s *runner.StreamInfo, from *Position) bool {
	return from != nil && !from.Initial && s.Mode != dsl.ModeAppendOnly
}

// countOmittedBefore adds to read, the changes of a read by type, the
// UPDATE_BEFOREs a read without them (queryOptions.afterOnly) left out:
// one per UPDATE_AFTER.
func countOmittedBefore(read map[cdc.Op]int64) {
	if n := read[cdc.OpUpdateAfter]; n > 0 {
		read[cdc.OpUpdateBefore] += n
	}
}

// unversioned reports whether a STANDARD read from an offset with o
// leaves __commit_version NULL (noVersion). A read given a seq base (a
// bound parameter) keeps its versions: its statement binds the base.
func (o queryOptions) unversioned() bool {
	return o.noVersion && o.afterOnly && o.keyOrdered && o.base == ""
}

// usesTable reports whether a STANDARD read from an offset with o is
// tableImagesQuery (fromTable, without UPDATE_BEFORE).
func (o queryOptions) usesTable() bool { return o.fromTable && o.afterOnly }

// countedColumn is o.counted's column, with its leading comma, or "".
func (o queryOptions) countedColumn(changeType string) string {
	if o.counted == nil {
		return ""
	}
	return ", " + o.counted(changeType)
}

// fence ends a read with a counted column with OFFSET 0: PostgreSQL then
// pushes no condition of a query around the read into it (a job's filter
// would otherwise skip the count of the rows it drops).
func (o queryOptions) fence() string {
	if o.counted == nil {
		return ""
	}
	return "\nOFFSET 0"
}

// keyOrderable reports whether a read from from takes the STANDARD
// window pass, whose output queryOptions.keyOrdered orders by the key at
// no cost (not an APPEND_ONLY read, not the initial rows).
func keyOrderable(s *runner.StreamInfo, from *Position) bool {
	return s.Mode != dsl.ModeAppendOnly && (from == nil || !from.Initial)
}

// changesQuery is ChangesQuery with the variations of o.
func changesQuery(t *Tracked, s *runner.StreamInfo, from *Position, to Position, o queryOptions) string {
	cols := t.Table.Columns
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = sinkpg.Quote(c.Name)
	}
	list := strings.Join(names, ", ")
	version := fmt.Sprintf("(%d::bigint << 32) + ", to.Batch)
	w := windowCTE(t, from, to)
	unversioned := keyOrderable(s, from) && o.unversioned()
	if !(keyOrderable(s, from) && o.usesTable()) && !unversioned {
		w = versionedWindowCTE(t, from, to)
	}

	if from != nil && from.Initial {
		created := sinkpg.Literal(s.Created.UTC().Format("2006-01-02 15:04:05.999999Z07:00")) + "::timestamptz"
		tableCols := make([]string, len(cols))
		for i, c := range cols {
			tableCols[i] = c.Select("t.") + " AS " + names[i]
		}
		if s.Mode == dsl.ModeAppendOnly {
			// Rows present at the offset, as a multiset: the rows at the
			// read point, plus images removed since, minus images added since.
			return w + fmt.Sprintf(`,
i AS ((SELECT %[1]s FROM %[2]s t UNION ALL SELECT %[3]s FROM w WHERE __op IN ('B', 'D'))
      EXCEPT ALL SELECT %[3]s FROM w WHERE __op IN ('I', 'A', 'U')),
u AS (SELECT 0 AS __part, 0::bigint AS __tmax, 0::bigint AS __seq, %[4]s AS __ts, %[3]s FROM i
      UNION ALL SELECT 1, __tmax, __seq, __ts, %[3]s FROM w WHERE __op = 'I')
SELECT 'INSERT' AS "__change_type", %[5]sdense_rank() OVER (ORDER BY __part, __tmax) AS "__commit_version",
       __ts AS "__commit_timestamp", %[6]s
FROM u ORDER BY __part, __tmax, __seq`, strings.Join(tableCols, ", "), sinkpg.Quote(t.Table.Name), list, created, version, o.outList(t))
		}
		// STANDARD from nothing: every row at the read point is an INSERT.
		// Rows untouched since the offset share the first version (the
		// creation point's); changed rows take the version of the
		// transaction of their last change, in __tmax order.
		// z's keys come from the window, which carries a type without a
		// Go form (uuid, …) as text (Column.Select): the table side of
		// the join is read the same way, so a uuid key compares as text
		// with text, not text with uuid.
		var on []string
		for _, k := range t.Table.Key {
			side := "t." + sinkpg.Quote(k)
			for _, c := range cols {
				if c.Name == k {
					side = c.Select("t.")
				}
			}
			on = append(on, "z."+sinkpg.Quote(k)+" = "+side)
		}
		keys := sinkpg.QuoteList("", t.Table.Key)
		return w + fmt.Sprintf(`,
z AS (SELECT DISTINCT ON (%[1]s) %[1]s, __tmax, __ts FROM w ORDER BY %[1]s, __seq DESC)
SELECT 'INSERT' AS "__change_type", %[2]sdense_rank() OVER (ORDER BY coalesce(z.__tmax, 0)) AS "__commit_version",
       coalesce(z.__ts, %[3]s) AS "__commit_timestamp", %[4]s
FROM %[5]s t LEFT JOIN z ON %[6]s ORDER BY coalesce(z.__tmax, 0), %[7]s`,
			keys, version, created, o.outTable(t, tableCols), sinkpg.Quote(t.Table.Name), strings.Join(on, " AND "), sinkpg.QuoteList("t.", t.Table.Key))
	}

	if s.Mode == dsl.ModeAppendOnly {
		return w + fmt.Sprintf(`
SELECT 'INSERT' AS "__change_type", %sdense_rank() OVER (ORDER BY __tmax) AS "__commit_version",
       __ts AS "__commit_timestamp", %s
FROM w WHERE __op = 'I' ORDER BY __tmax, __seq`, version, o.outList(t))
	}

	if o.usesTable() {
		return tableImagesQuery(t, w, o)
	}
	// STANDARD: net change per key from the first and last log row, in one
	// sort of the window by (key, __seq): one WindowAgg carries the first
	// row's image (first_value) to every row and marks the last row (no
	// lead), which alone is kept.
	keys := sinkpg.QuoteList("", t.Table.Key)
	var wcols, firsts, fz, fRow, zRow, out, img []string
	for i, n := range names {
		wcols = append(wcols, "w."+n)
		fi, zi := sinkpg.Quote(fmt.Sprintf("__f%d", i)), sinkpg.Quote(fmt.Sprintf("__z%d", i))
		if slices.Contains(t.Table.Key, cols[i].Name) {
			// The partition key: the same in every row of the partition,
			// so it is output as it is (no CASE, no cast: it keeps its type
			// modifier, and a query around the read sees the window's
			// order by it).
			fz = append(fz, "x."+n+" AS "+fi, "x."+n+" AS "+zi)
			out = append(out, o.out(cols[i], "d."+zi)+" AS "+n)
			img = append(img, o.out(cols[i], "d."+zi)+" AS "+n)
			continue
		}
		firsts = append(firsts, fmt.Sprintf("first_value(w.%s) OVER __k AS %s", n, fi))
		fz = append(fz, "x."+fi+" AS "+fi, "x."+n+" AS "+zi)
		fRow = append(fRow, "d."+fi)
		zRow = append(zRow, "d."+zi)
		// first_value drops the type modifier (numeric(10,2), char(84)):
		// the result columns cast back to the table's types, once per
		// change rather than per log row.
		cast := ""
		if (cols[i].Native || o.native) && cols[i].PGType != "" {
			cast = "::" + cols[i].PGType
		}
		out = append(out, fmt.Sprintf("(CASE WHEN e.pre THEN d.%s ELSE d.%s END)%s AS %s", fi, zi, cast, n))
		img = append(img, fmt.Sprintf("(CASE WHEN d.__is THEN d.%s ELSE d.%s END)%s AS %s", zi, fi, cast, n))
	}
	firstCols := ""
	if len(firsts) > 0 {
		firstCols = ", " + strings.Join(firsts, ", ")
	}
	rank := "dense_rank() OVER (ORDER BY d.__tmax)"
	if o.base != "" {
		rank = "(d.__tmax - " + o.base + ")"
	}
	ts, wts := "d.__ts", "w.__ts"
	if o.noTimestamp {
		ts, wts = "NULL::timestamptz", "NULL::timestamptz AS __ts"
	}
	tmax := "w.__tmax"
	if unversioned {
		tmax = "NULL::bigint AS __tmax" // windowCTE: no transaction's last __seq
	}
	netCTE := fmt.Sprintf(`,
x AS (SELECT w.__seq, %[6]s, w.__op, %[5]s, %[4]s, lead(true, 1, false) OVER __k AS __more, first_value(w.__op) OVER __k AS __fop%[2]s
      FROM w WINDOW __k AS (PARTITION BY %[1]s ORDER BY w.__seq ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)),
d AS (SELECT x.__seq, x.__tmax, x.__ts, x.__fop IN ('B', 'D') AS __was, x.__op IN ('I', 'A', 'U') AS __is, %[3]s
      FROM x WHERE NOT x.__more)`, keys, firstCols, strings.Join(fz, ", "), strings.Join(wcols, ", "), wts, tmax)
	// Whether the last image differs from the first, on the columns other
	// than the key (equal within a partition); a table of key columns
	// only has no update that keeps its key and changes anything.
	changed := "false"
	if len(fRow) > 0 {
		changed = fmt.Sprintf("ROW(%s) IS DISTINCT FROM ROW(%s)", strings.Join(fRow, ", "), strings.Join(zRow, ", "))
	}
	if o.afterOnly {
		// One row per key: the key's net change with the image it carries
		// (a DELETE the first image, the others the last); an update whose
		// last image equals its first is no change.
		order := ""
		switch {
		case o.keyOrdered:
			order = "\nORDER BY " + keys
		case o.ordered:
			order = "\nORDER BY d.__tmax, d.__seq"
		}
		ct := "CASE WHEN NOT d.__was THEN 'INSERT' WHEN d.__is THEN 'UPDATE_AFTER' ELSE 'DELETE' END"
		if unversioned {
			version, rank = "", "NULL::bigint"
		}
		return w + netCTE + fmt.Sprintf(`
SELECT %[6]s AS "__change_type",
       %[1]s%[2]s AS "__commit_version", %[7]s AS "__commit_timestamp", %[3]s%[8]s
FROM d
WHERE (d.__was OR d.__is) AND (NOT (d.__was AND d.__is) OR %[4]s)%[5]s%[9]s`, version, rank, strings.Join(img, ", "), changed, order, ct, ts, o.countedColumn(ct), o.fence())
	}
	order := ""
	switch {
	case o.keyOrdered:
		order = "\nORDER BY " + keys + ", e.o"
	case o.ordered:
		order = "\nORDER BY d.__tmax, d.__seq, e.o"
	}
	return w + netCTE + fmt.Sprintf(`
SELECT e.ct AS "__change_type", %[1]s%[5]s AS "__commit_version",
       %[6]s AS "__commit_timestamp", %[2]s%[7]s
FROM d CROSS JOIN LATERAL (VALUES ('DELETE', 0, true), ('UPDATE_BEFORE', 0, true),
                                  ('UPDATE_AFTER', 1, false), ('INSERT', 1, false)) AS e(ct, o, pre)
WHERE CASE e.ct WHEN 'INSERT' THEN NOT d.__was AND d.__is
                WHEN 'DELETE' THEN d.__was AND NOT d.__is
                ELSE d.__was AND d.__is AND %[3]s END%[4]s%[8]s`,
		version, strings.Join(out, ", "), changed, order, rank, ts, o.countedColumn("e.ct"), o.fence())
}

// windowCTE returns "WITH w AS (…)": the log rows of the transactions
// visible in to and not in from.
func windowCTE(t *Tracked, from *Position, to Position) string {
	cols := make([]string, len(t.Table.Columns))
	for i, c := range t.Table.Columns {
		cols[i] = c.Select("l.") + " AS " + sinkpg.Quote(c.Name)
	}
	return fmt.Sprintf(`WITH w AS (SELECT l.__seq, l.__op, l.__ts, %s FROM %s l WHERE %s)`,
		strings.Join(cols, ", "), t.LogRef(), WindowPredicate("l.__txid", from, to))
}

// versionedWindowCTE is windowCTE with __tmax, the highest __seq of the
// row's transaction in the window: a read versions a change by its
// transaction's __tmax, so every change of one transaction shares its
// __commit_version (DESIGN.md: one commit, one version). All log rows of a
// transaction belong to one window (a window is the transactions newly
// visible at the read point), so __tmax is the transaction's last log row.
// Ordered by __tmax, transactions follow commit order per key: a writer
// that changes a key another transaction changed waited for that
// transaction's commit (the row lock), so its own log row of the key, and
// with it its __tmax, comes after every log row of the other. Transactions
// that share no key are ordered by their last log row, which need not be
// their commit order (PostgreSQL records no commit order without
// track_commit_timestamp); across windows the batch number orders them.
func versionedWindowCTE(t *Tracked, from *Position, to Position) string {
	cols := make([]string, len(t.Table.Columns))
	for i, c := range t.Table.Columns {
		cols[i] = c.Select("l.") + " AS " + sinkpg.Quote(c.Name)
	}
	return fmt.Sprintf(`WITH w AS (SELECT l.__seq, max(l.__seq) OVER (PARTITION BY l.__txid) AS __tmax, l.__op, l.__ts, %s FROM %s l WHERE %s)`,
		strings.Join(cols, ", "), t.LogRef(), WindowPredicate("l.__txid", from, to))
}

// WindowPredicate returns the SQL condition on a txid column (xid8) that
// selects the transactions visible in to and not in from (nil: every
// transaction visible in to): col >= xmax(from) OR col = ANY(xip(from)),
// with literals so the txid index is used, AND pg_visible_in_snapshot(col,
// to).
func WindowPredicate(col string, from *Position, to Position) string {
	vis := fmt.Sprintf("pg_visible_in_snapshot(%s, '%s'::pg_snapshot)", col, to.Snap)
	if from == nil {
		return vis
	}
	cond := fmt.Sprintf("%s >= '%d'::xid8", col, from.Xmax())
	if xip := from.Xip(); len(xip) > 0 {
		ids := make([]string, len(xip))
		for i, x := range xip {
			ids[i] = fmt.Sprint(x)
		}
		cond = fmt.Sprintf("(%s OR %s = ANY('{%s}'::xid8[]))", cond, col, strings.Join(ids, ","))
	}
	return cond + " AND " + vis
}
