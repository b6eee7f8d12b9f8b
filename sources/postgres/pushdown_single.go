package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/plan"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// The one-statement pushdown. A merge with one change per key
// (plan.SinkStage.OneChangePerKey) on PostgreSQL 15+ needs no collapse, so
// the read, the counts and the MERGE run as one statement: the MERGE's
// source is the filtered, projected read itself, never materialized.
//
// Counting without materializing: PostgreSQL 15 has no MERGE … RETURNING,
// and reading the changes twice (once to count them, once to merge them)
// means keeping them in a CTE or a TEMP table. Instead the read carries a
// column that calls nextval() on a TEMP sequence per change type (and, when
// the job filters, so does the filtered relation for the rows written);
// after the statement each sequence's last value is the count. PostgreSQL
// never pulls up a subquery whose output calls a volatile function, pushes
// no condition of the query around into one that has OFFSET (a job's
// filter would otherwise skip the count of the rows it drops), and never
// drops a volatile output column, so the column is evaluated exactly once
// per row the subquery returns. A STANDARD read from an offset carries the
// column itself, with OFFSET 0 (queryOptions.counted); other reads are
// wrapped in a subquery fenced with OFFSET 0 that adds it.
//
// Keeping the key order: a STANDARD read from an offset comes out of its
// window pass sorted by the primary key (queryOptions.keyOrdered), so the
// MERGE can join the changes to the target along an index on the merge
// keys (a merge join) instead of hashing the target. When the window is
// large next to the target, the run turns hash and nested-loop joins off
// for the transaction (mergeJoinSQL): PostgreSQL's estimate of a read's
// row count through the window's conditions is a guess, too low on large
// windows, and it then picks a nested loop of index lookups, one per
// change. The read also leaves __commit_timestamp NULL when the job does
// not use it (queryOptions.noTimestamp): the MERGE's source is referenced
// as a whole row, which keeps every column of the read alive.
//
// On bench/pgapply's workload (1M changes, 632k keys; server log, three
// runs each): the statement with the read in a MATERIALIZED CTE and the
// counts as data-modifying CTEs took 6.5–7.2 s, this one over the window
// read 5.3–5.4 s, over the read from the table (tableImagesQuery) about
// 4.5 s; the hand-written last-change MERGE 4.1–4.5 s. With the 'U' rows
// left out of the read's sort, SortRunMem and derived counts, `go run
// ./bench/pgapply -rounds 5` measured the whole run at 4.71 s median
// against the hand-written MERGE's 4.90 s (docs/benchmarks.md).

// counter is the TEMP sequence that counts the rows of one change type,
// or (what "idle") the rows of the MERGE's source that none of its
// actions took.
type counter struct {
	what string // "read", "written" or "idle"
	op   cdc.Op // none for "idle"
}

func (c counter) seq() string {
	if c.what == "idle" {
		return "pg_temp.sluice_n_idle"
	}
	return fmt.Sprintf("pg_temp.sluice_n_%s_%s", c.what, strings.ToLower(c.op.String()))
}

// The counters of the read (every change type) and of the rows written (a
// merge writes no UPDATE_BEFORE); without a filter, of INSERT and DELETE
// read and of the rows the MERGE left alone (derivedCounts).
var (
	readCounters     = []counter{{"read", cdc.OpInsert}, {"read", cdc.OpUpdateBefore}, {"read", cdc.OpUpdateAfter}, {"read", cdc.OpDelete}}
	writtenCounters  = []counter{{"written", cdc.OpInsert}, {"written", cdc.OpUpdateAfter}, {"written", cdc.OpDelete}}
	readRareCounters = []counter{{"read", cdc.OpInsert}, {"read", cdc.OpDelete}}
	idleCounter      = counter{what: "idle"}
)

// countIdleSQL is the MERGE's condition that counts a row it leaves alone
// (sinkpg.ApplyOptions.CountIdle).
var countIdleSQL = "nextval('" + idleCounter.seq() + "') > 0"

// Derived counts. Without a filter every change the read returns is a row
// of the MERGE's source (UPDATE_BEFORE left out by the read), so the
// UPDATE_AFTERs, the bulk of most windows, need no nextval() of their own:
// UPDATE_AFTER = the MERGE's row count + the rows it left alone (a DELETE
// of a key the target lacks; counted by a last WHEN … THEN DO NOTHING
// clause) - INSERT - DELETE, the latter two counted by the read. On
// bench/pgapply's 632k net changes this saved about 0.18 s of 4.2 s
// (psql, four runs each, alternating).

// countColumn returns the column expression that counts the row of col (a
// change type column) with counters.
func countColumn(col string, cs []counter) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CASE %s", col)
	for _, c := range cs {
		fmt.Fprintf(&b, " WHEN '%s' THEN nextval('%s')", c.op, c.seq())
	}
	b.WriteString(" END AS __counted")
	return b.String()
}

// resetCounters creates the counters in this session (once) and sets them
// to zero; the sequences stay, so a cached plan of the statement stays
// valid. setval is not transactional: a run that fails leaves counts the
// next run resets.
func resetCounters(cs []counter) string {
	var create, reset []string
	for _, c := range cs {
		create = append(create, "CREATE TEMP SEQUENCE IF NOT EXISTS "+strings.TrimPrefix(c.seq(), "pg_temp.")+";")
		reset = append(reset, fmt.Sprintf("setval('%s', 1, false)", c.seq()))
	}
	return strings.Join(create, "\n") + "\nSELECT " + strings.Join(reset, ", ")
}

// readCountersSQL returns the query of the counts: rows (what, change
// type, count).
func readCountersSQL(cs []counter) string {
	var parts []string
	for _, c := range cs {
		op := ""
		if c.what != idleCounter.what {
			op = c.op.String()
		}
		parts = append(parts, fmt.Sprintf("SELECT '%s', '%s', CASE WHEN is_called THEN last_value ELSE 0 END FROM %s", c.what, op, c.seq()))
	}
	return strings.Join(parts, "\nUNION ALL ")
}

// single is the compiled one-statement pushdown.
type single struct {
	// statement is the text around a read (%s) wrapped in the counting
	// subquery; ordered is the text around a read that counts itself and
	// is ordered by the key (readOptions). Both have the read's seq base as
	// $1 when the read has one.
	statement, ordered string
	counters           []counter
	noTimestamp        bool // the job does not use __commit_timestamp
	noVersion          bool // the job does not use __commit_version
	// target and keys (the target's merge-key columns, in the order of
	// the table's primary key) for the merge-join choice.
	target string
	keys   []string
	// readCounted are the change types the read counts; derived: the
	// UPDATE_AFTERs are derived from the MERGE's row count (see above).
	readCounted []counter
	derived     bool
	filtered    bool // the job filters: the rows written are counted apart
}

// compileSingle returns the one-statement pushdown of pd, or nil when the
// plan does not qualify (no OneChangePerKey, no MERGE on this server, a
// filter or projection that cannot be rendered).
func (pd *pushdown) compileSingle(merge func(relation, countIdle string) (string, bool)) (*single, error) {
	if !pd.full || (pd.b.version != 0 && pd.b.version < sinkpg.MinMergeVersion) {
		return nil, nil
	}
	// The merge keys, in the primary key's order: exactly the primary
	// key passed through, so an index on them follows the read's order.
	sinkKeys, ok := plan.PassedKeys(pd.p.Project, pd.p.Sink.Keys, pd.p.Source.TableSchema)
	if !ok || len(sinkKeys) != len(pd.p.Sink.Keys) {
		return nil, nil
	}
	filtered := pd.p.Filter != nil && pd.p.Filter.Expr != nil
	s := &single{counters: readCounters, readCounted: readCounters, filtered: filtered, target: sinkpg.Quote(pd.p.Sink.Table), keys: sinkKeys,
		noTimestamp: !usesColumn(pd.p, cdc.ColCommitTimestamp) && !pd.p.Sink.NeedsCommitTime(), noVersion: !usesColumn(pd.p, cdc.ColCommitVersion)}
	countIdle := ""
	switch {
	case filtered:
		s.counters = append(append([]counter(nil), readCounters...), writtenCounters...)
	case pd.after:
		s.derived, s.readCounted, countIdle = true, readRareCounters, countIdleSQL
		s.counters = append(append([]counter(nil), readRareCounters...), idleCounter)
	}
	for _, ordered := range []bool{false, true} {
		read := fmt.Sprintf("(SELECT __read.*, %s FROM (%%s) AS __read OFFSET 0)", countColumn(`__read."__change_type"`, s.readCounted))
		if ordered {
			read = "(%s)"
		}
		relation, err := projectSQL(pd.p, read)
		if err != nil {
			return nil, err
		}
		if filtered {
			order := ""
			if ordered {
				order = " ORDER BY " + sinkpg.QuoteList("", sinkKeys)
			}
			relation = fmt.Sprintf("(SELECT __written.*, %s FROM %s AS __written%s OFFSET 0)", countColumn("__written.__op", writtenCounters), relation, order)
		}
		m, ok := merge(relation, countIdle) // the sink's FullRows merge leaves UPDATE_BEFORE out itself
		if !ok {
			return nil, nil
		}
		if ordered {
			s.ordered = m
		} else {
			s.statement = m
		}
	}
	return s, nil
}

// readOptions sets, in o, what the one statement asks of a read that
// keyOrderable allows: ordered by the key, counting its rows, without
// __commit_timestamp or __commit_version when the job does not use it,
// and, with fromTable when it uses neither, with the images at the read
// point taken from the table (tableImagesQuery).
func (s *single) readOptions(o queryOptions, fromTable bool) queryOptions {
	o.keyOrdered = true
	o.counted = func(changeType string) string { return countColumn(changeType, s.readCounted) }
	o.noTimestamp = s.noTimestamp
	o.noVersion = s.noVersion
	o.fromTable = fromTable && s.noTimestamp && s.noVersion
	return o
}

// tableReadMinShare: a run whose window holds at least 1/tableReadMinShare
// as many log rows as the table has rows takes the images at the read
// point from the table (tableImagesQuery), a smaller window from the log
// (the window pass, without versions). The read from the table joins the
// table's every row (a scan of the whole table, hashed or merged), which
// pays off on large windows (bench/pgapply, 1M changes over a 1M-row
// table: 4.2–4.3 s against 4.8–5.1 s over the log) and dominates small
// ones: 100,000 changes (95k keys, 200k log rows) over the same table
// took 11.5–13.7 s from the table (two scans of 1M rows: the table's and,
// hashed, the target's), 8.0 s from the log (server log, auto_explain, on
// a loaded machine; the hand-written MERGE 5.5–7.6 s). Measured again with
// the merge joins and 16MB sort runs (docs/benchmarks.md, 2026-12-02): the
// read from the table alone was faster at that size (256 ms against 292 ms
// for the window pass), but whole runs with this set to 16 were not (the
// MERGE 1.02–1.40 s against 0.95–2.29 s, four rounds alternating): the
// table's pages are one more cold scan.
const tableReadMinShare = 4

// fromTable reports whether the run whose read point is to takes the
// images from the table: the job uses no version or time
// (pushdown.noVersions) and the window's estimated log rows reach
// 1/tableReadMinShare of the table's estimated rows (or the table's are
// unknown).
func (pd *pushdown) fromTable(to Position) bool {
	return pd.noVersions() && (to.tableRows <= 0 || to.windowRows*tableReadMinShare >= to.tableRows)
}

// usesColumn reports whether p's filter or projection reads the source
// column name.
func usesColumn(p *plan.Plan, name string) bool {
	i := p.Source.Schema.Index(name)
	if i < 0 {
		return false
	}
	var bound []*expr.Bound
	if p.Filter != nil && p.Filter.Expr != nil {
		bound = append(bound, p.Filter.Expr)
	}
	for _, it := range p.Project {
		if it.Expr != nil {
			bound = append(bound, it.Expr)
		}
	}
	for _, b := range bound {
		for _, ref := range b.Columns() {
			if ref.Col == i {
				return true
			}
		}
	}
	return false
}

// text is the statement around the read query read.
func (s *single) text(read string, ordered bool) string {
	if ordered {
		return fmt.Sprintf(s.ordered, read)
	}
	return fmt.Sprintf(s.statement, read)
}

// mergeJoinMinShare is the share of the target's rows (pg_class.reltuples)
// the window's log rows must reach for a run to prefer a merge join: a
// merge join reads the target's index across the changed keys' range, a
// nested loop looks up each changed key, so the merge join pays off when
// the changes are a good part of the target. On bench/pgapply's 100,000
// changes (200k log rows, 95k keys) over a 1M-row target, the planner,
// left alone, looked up each key (7.0 s of the MERGE on a loaded
// machine), where the hand-written MERGE's merge join read the whole
// index in 4.1 s: the lookups cost about as much as a merge join at a
// tenth of the target. (It was a quarter before, which left that window
// to the lookups.)
const mergeJoinMinShare = 8

// mergeJoinCheckSQL returns, for the target ($1, quoted name) and its
// merge-key columns in key order ($2), the target's estimated rows and
// whether a valid btree index leads with those columns in that order.
const mergeJoinCheckSQL = `SELECT greatest(c.reltuples, 0)::float8, EXISTS (
  SELECT 1 FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam
  WHERE i.indrelid = c.oid AND i.indisvalid AND am.amname = 'btree' AND i.indnkeyatts >= cardinality($2::text[])
    AND ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
              JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
              WHERE k.n <= cardinality($2::text[]) ORDER BY k.n) = $2::text[])
FROM pg_class c WHERE c.oid = to_regclass($1)`

// mergeJoinSQL turns off the joins other than a merge join for the rest of
// the transaction.
const mergeJoinSQL = "SET LOCAL enable_hashjoin = off; SET LOCAL enable_nestloop = off"

// SortRunMem is the work_mem of a statement over the read from the table
// (tableImagesQuery) joined by merge joins, whose one user of work_mem is
// the sort of the window's first log rows: sorted in runs of this size
// and merged, they came out faster than from one quicksort over all of
// them in memory, whose comparisons miss the CPU cache. bench/pgapply's
// run of 1M changes (1M log rows sorted), four rounds alternating:
// 4.13 s median with 16MB, 4.33 s with 4MB, 4.37 s with 64MB, 4.47 s with
// the window-sized 512MB (sinkpg.WorkMemSQL).
const SortRunMem = 16 << 20

// sortRunSQL sets work_mem to SortRunMem for the rest of the transaction.
var sortRunSQL = fmt.Sprintf("SET LOCAL work_mem = '%dkB'", SortRunMem>>10)

// joinSQL is what a run whose read is o sets for the merge join.
func joinSQL(o queryOptions) string {
	if o.usesTable() {
		return mergeJoinSQL + "; " + sortRunSQL
	}
	return mergeJoinSQL
}

// preferMergeJoin reports whether a run over windowRows log rows should
// join the changes to the target by a merge join: the read is ordered by
// the key, the window holds at least 1/mergeJoinMinShare as many log rows
// as the target has rows, and an index leads with the merge keys.
func (s *single) preferMergeJoin(ctx context.Context, tx pgx.Tx, windowRows int64) (bool, error) {
	var rows float64
	var indexed bool
	err := tx.QueryRow(ctx, mergeJoinCheckSQL, s.target, s.keys).Scan(&rows, &indexed)
	if err == pgx.ErrNoRows {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return indexed && float64(windowRows)*mergeJoinMinShare >= rows, nil
}

// run executes the statement over read (the read of options o, ordered
// by the key when o.keyOrdered; args: its parameters; windowRows: the
// window's log rows) in tx and returns the changes read and the rows
// written, by change type; a read without UPDATE_BEFORE (o.afterOnly)
// counts one per UPDATE_AFTER.
func (s *single) run(ctx context.Context, tx pgx.Tx, read string, args []any, o queryOptions, windowRows int64) (readN, written map[cdc.Op]int64, err error) {
	if _, err := tx.Exec(ctx, resetCounters(s.counters)); err != nil {
		return nil, nil, err
	}
	ordered := o.keyOrdered
	if ordered {
		merge, err := s.preferMergeJoin(ctx, tx, windowRows)
		if err != nil {
			return nil, nil, err
		}
		if merge {
			if _, err := tx.Exec(ctx, joinSQL(o)); err != nil {
				return nil, nil, err
			}
		}
	}
	tag, err := tx.Exec(ctx, s.text(read, ordered), args...)
	if err != nil {
		return nil, nil, err
	}
	readN, written = map[cdc.Op]int64{}, map[cdc.Op]int64{}
	var idle int64
	rows, err := tx.Query(ctx, readCountersSQL(s.counters))
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var what, op string
		var n int64
		if err := rows.Scan(&what, &op, &n); err != nil {
			return nil, nil, err
		}
		if what == idleCounter.what {
			idle = n
			continue
		}
		o, err := cdc.ParseOp(op)
		if err != nil {
			return nil, nil, err
		}
		if n > 0 {
			if what == "read" {
				readN[o] += n
			} else {
				written[o] += n
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if s.derived {
		n := tag.RowsAffected() + idle - readN[cdc.OpInsert] - readN[cdc.OpDelete]
		if n < 0 {
			return nil, nil, fmt.Errorf("counting the changes: the MERGE took %d rows and left %d alone, fewer than the %d INSERT and %d DELETE read",
				tag.RowsAffected(), idle, readN[cdc.OpInsert], readN[cdc.OpDelete])
		}
		if n > 0 {
			readN[cdc.OpUpdateAfter] = n
		}
	}
	if !s.filtered {
		// No filter: every change read but UPDATE_BEFORE is written.
		for o, n := range readN {
			if o != cdc.OpUpdateBefore {
				written[o] = n
			}
		}
	}
	if o.afterOnly {
		countOmittedBefore(readN)
	}
	return readN, written, nil
}

// steps are the plan steps of the one statement over read, the read of
// options o; small, when set, is the read of a window too small for the
// read from the table (pushdown.fromTable).
func (s *single) steps(read string, o queryOptions, small string) []plan.Step {
	ordered := o.keyOrdered
	src := func(what, sql string) plan.Step { return plan.Step{Where: "source", What: what, SQL: sql} }
	counted := "the changes read by change type"
	switch {
	case s.derived:
		counted = "the INSERTs and DELETEs read and the rows the MERGE leaves alone (its last WHEN … THEN DO NOTHING); UPDATE_AFTER = rows merged + rows left alone - INSERT - DELETE"
	case s.filtered:
		counted += " and the rows written (the job filters)"
	}
	steps := []plan.Step{
		src("TEMP sequences that count "+counted+"; created once per session and set to zero", resetCounters(s.counters)),
	}
	if ordered {
		steps = append(steps,
			src(fmt.Sprintf("the target's estimated rows, and whether an index leads with the merge keys ($1 = %s, $2 = %s)", s.target, "{"+strings.Join(s.keys, ",")+"}"), mergeJoinCheckSQL),
			src(fmt.Sprintf("with such an index and a window of at least 1/%d as many log rows as the target's: join the key-ordered changes to the target along the index (a merge join), not by a hash of the target or a lookup per change%s", mergeJoinMinShare, sortNote(o)), joinSQL(o)))
	}
	what := "read the stream's changes after the offset up to the read point (one row per changed key: the merge ignores UPDATE_BEFORE, counted one per UPDATE_AFTER; $1, where present, = min(__seq) - 1 of the window), count them, and MERGE the filtered, projected net changes into the target, in one statement"
	if small != "" {
		what += fmt.Sprintf(" — with the images at the read point taken from the table, when the window's log rows (estimated) reach 1/%d of the table's rows", tableReadMinShare)
	}
	steps = append(steps, src(what, s.text(read, ordered)))
	if small != "" {
		steps = append(steps, src(fmt.Sprintf("instead, when the window's log rows (estimated) are under 1/%d of the table's rows: the same statement over the read that takes every image from the log (a window pass over the window's log rows, without versions), so the table is not scanned", tableReadMinShare),
			s.text(small, ordered)))
	}
	return append(steps, src("the counts", readCountersSQL(s.counters)))
}

// sortNote explains joinSQL's work_mem in a plan step.
func sortNote(o queryOptions) string {
	if !o.usesTable() {
		return ""
	}
	return fmt.Sprintf("; the sort of the first log rows then merges runs of %dMB, faster than one sort in memory", SortRunMem>>20)
}
