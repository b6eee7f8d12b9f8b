// Package postgres writes projected change rows into PostgreSQL tables: the
// sink side of sluice's "postgres" backend (package sources/postgres
// registers the backend and delegates its runner.Sink methods here).
//
// # Modes
//
//   - append: the rows are COPYed (pgx.CopyFrom) straight into the target
//     inside the sink transaction.
//   - overwrite: DELETE FROM the target, then COPY (one transaction).
//   - errorifexists: fails with runner.ErrTargetExists when the target
//     exists, else creates it and COPYs.
//   - ignore: writes nothing when the target existed.
//   - merge: every batch is COPYed into a temporary staging table
//     (__op, __ver, __ord, __present, <columns>); at commit the staging
//     table is collapsed to the last change per key (DISTINCT ON … ORDER BY
//     keys, __ver DESC, __ord DESC — or, when partial rows were staged, a
//     per-column fold of the carried columns) and applied with one MERGE INTO
//     (PostgreSQL 15+) or, on 13/14, DELETE + INSERT … ON CONFLICT DO
//     UPDATE. A SQL job's own MERGE clauses (plan.SinkStage.Merge) are
//     rendered into a native MERGE.
//
// The SQL that applies a relation of staged rows to the target is built by
// CompileApply, shared by the cross-database path (relation = the staging
// table) and by pushdown (relation = the stream's filtered, projected net
// changes).
//
// # Exactly once
//
// The job's checkpoint is upserted into sluice.checkpoints in the same
// transaction as the rows (SinkTx.Commit).
//
// # Values
//
// Rows arrive as canonical cdc values. Each value is coerced to the target
// column's logical type (cdc.Coerce; a failure names the row's key and the
// column) and encoded for pgx: DECIMAL as pgtype.Numeric built from the
// decimal's coefficient and exponent, so NUMERIC never passes through
// float64; TIMESTAMP as time.Time (timestamptz keeps the instant).
package postgres
