package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/sinks/changerel"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// The one-statement pushdown. A merge with one change per key
// (plan.SinkStage.OneChangePerKey) on PostgreSQL 15+ needs no collapse, so
// the read, the counts and the MERGE run as one statement: the read is a
// MATERIALIZED CTE (kept in memory, work_mem permitting, rather than
// written to a TEMP table and read back), two data-modifying CTEs put the
// counts by change type into a small TEMP table, and the MERGE applies the
// filtered, projected net changes. On bench/pgapply's workload (1M
// changes, 632k net changes) the statements of the TEMP-table path took
// 8.0–8.9 s, this statement 7.3–8.0 s (psql, three runs each, alternating;
// the machine's noise is about ±10%).

// Names of the one-statement pushdown.
const (
	readCTE     = "sluice_read"   // the read, as a CTE of the statement
	countsTable = "sluice_counts" // TEMP table of the counts
)

// single is the compiled one-statement pushdown.
type single struct {
	statement string // with the read's seq base as $1 when seqBase
}

// Statements around the one statement.
var (
	createCounts = fmt.Sprintf("CREATE TEMP TABLE %s (what text NOT NULL, op text NOT NULL, n bigint NOT NULL) ON COMMIT DROP", countsTable)
	dropCounts   = "DROP TABLE IF EXISTS pg_temp." + countsTable
	readCounts   = fmt.Sprintf("SELECT op, n FROM pg_temp.%s WHERE what = $1", countsTable)
)

// compileSingle returns the one-statement pushdown of pd, or nil when the
// plan does not qualify (no OneChangePerKey, no MERGE on this server, a
// filter or projection that cannot be rendered).
func (pd *pushdown) compileSingle(merge func(relation string) (string, bool)) (*single, error) {
	if !pd.full || (pd.b.version != 0 && pd.b.version < sinkpg.MinMergeVersion) {
		return nil, nil
	}
	relation, err := projectSQL(pd.p, readCTE)
	if err != nil {
		return nil, err
	}
	net := fmt.Sprintf("(SELECT * FROM %s AS __r WHERE __r.%s <> 'UPDATE_BEFORE')", relation, changerel.Op)
	m, ok := merge(relation) // the sink's FullRows merge leaves UPDATE_BEFORE out itself
	if !ok {
		return nil, nil
	}
	return &single{statement: fmt.Sprintf(`WITH %[1]s AS MATERIALIZED (%%s),
__read_counts AS (INSERT INTO pg_temp.%[2]s SELECT 'read', "__change_type", count(*) FROM %[1]s GROUP BY 2),
__written_counts AS (INSERT INTO pg_temp.%[2]s SELECT 'written', __c.%[3]s, count(*) FROM %[4]s AS __c GROUP BY 2)
%[5]s`, readCTE, countsTable, changerel.Op, net, m)}, nil
}

// text is the statement around the read query read.
func (s *single) text(read string) string { return fmt.Sprintf(s.statement, read) }

// run executes the statement over read (args: its parameters) in tx and
// returns the changes read and the rows written, by change type; a read
// without UPDATE_BEFORE counts one per UPDATE_AFTER.
func (s *single) run(ctx context.Context, tx pgx.Tx, read string, args []any, after bool) (readN, written map[cdc.Op]int64, err error) {
	for _, q := range []string{dropCounts, createCounts} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return nil, nil, err
		}
	}
	if _, err := tx.Exec(ctx, s.text(read), args...); err != nil {
		return nil, nil, err
	}
	readN, written = map[cdc.Op]int64{}, map[cdc.Op]int64{}
	for what, into := range map[string]map[cdc.Op]int64{"read": readN, "written": written} {
		rows, err := tx.Query(ctx, readCounts, what)
		if err != nil {
			return nil, nil, err
		}
		err = changerel.CountOps(rows, into)
		rows.Close()
		if err != nil {
			return nil, nil, err
		}
	}
	if after {
		countOmittedBefore(readN)
	}
	return readN, written, nil
}

// singleSteps are the plan steps of the one statement over read.
func (s *single) steps(read string) []plan.Step {
	src := func(what, sql string) plan.Step { return plan.Step{Where: "source", What: what, SQL: sql} }
	return []plan.Step{
		src("a TEMP table for the counts by change type", dropCounts+"\n"+createCounts),
		src("read the stream's changes after the offset up to the read point (one row per changed key: the merge ignores UPDATE_BEFORE, counted one per UPDATE_AFTER; $1, where present, = min(__seq) - 1 of the window), count them, and MERGE the filtered, projected net changes into the target, in one statement", s.text(read)),
		src("the counts of the changes read and the rows written ($1 = 'read', then 'written')", readCounts),
	}
}
