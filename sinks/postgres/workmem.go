package postgres

import "fmt"

// Memory of a read or a merge. A read of a table stream sorts the
// window's change-log rows by key (a WindowAgg over them); a merge hashes
// the target or the net changes. At PostgreSQL's default work_mem of 4MB
// both spill to temporary files from a few ten thousand changes on, and
// spilling costs (the read of 1M pgbench changes, 2M log rows: 5.6 s with
// a 256MB work_mem that spilled, 4.3 s in memory; the MERGE of 632k net
// changes hashed the 1M-row target in 8 batches). So each sets work_mem
// for its own transaction (SET LOCAL: the session's value returns at its
// end) from the rows it handles: WorkMemPerRow per row (an in-memory sort
// of pgbench_accounts' log rows took about 180 bytes each), between
// MinWorkMem and MaxWorkMem. It is a per-sort/per-hash limit of one
// backend, used only while the statement runs.
const (
	WorkMemPerRow = 256 // bytes
	MinWorkMem    = 64 << 20
	MaxWorkMem    = 1 << 30
)

// WorkMemSQL is the SET LOCAL work_mem for about rows rows (0: unknown,
// the minimum), in kB.
func WorkMemSQL(rows int64) string {
	b := min(max(rows*WorkMemPerRow, MinWorkMem), MaxWorkMem)
	return fmt.Sprintf("SET LOCAL work_mem = '%dkB'", b>>10)
}
