// Package sqlite is sluice's SQLite sink: it writes a job's projected rows
// into a table of a SQLite database in every mode (append, overwrite,
// errorifexists, ignore, merge, and SQL MERGE INTO jobs), and stores the
// job's checkpoint in the same transaction (exactly-once, see
// docs/architecture.md). The sqlite backend (sources/sqlite) embeds Sink, so
// one `sqlite:` connection is both source and sink, and its pushdown reuses
// the same statements through CompileApply and Plan.Attach.
//
// # Transactions
//
// Plan.Begin takes a dedicated connection and runs BEGIN IMMEDIATE: the
// write lock is held from the start, so two runs of one job serialize.
// Inside it: the checkpoint table sluice_checkpoints(job TEXT PRIMARY KEY,
// stream, stream_id, "offset" (cdc.Offset.Encode), updated_at (UTC)) is
// created if missing, a missing target is created from the projected schema
// (declared types of the storage conventions; NOT NULL + PRIMARY KEY(keys)
// for mode merge), and the mode applies: overwrite deletes the target's
// rows; errorifexists fails (runner.ErrTargetExists) on an existing target;
// ignore returns an error matching ErrIgnored and runner.ErrTargetExists on
// an existing target — the runner must then report the job as skipped and
// not move the stream's offset. Commit applies staged rows, upserts the
// checkpoint and COMMITs; any error rolls back rows and checkpoint together.
//
// Values are converted to the target column's type with cdc.Coerce and
// stored per the conventions (internal/sqlitex.Encode). A value that does
// not fit is a *cdc.ValueError naming the row's key (merge keys, MERGE ON
// columns, or the target's primary key) and the column; the transaction
// then commits nothing.
//
// # Backfill chunks as COPY text
//
// A backfill from PostgreSQL streams each chunk as PostgreSQL COPY text
// (runner.CopySinkTx, copytext.go): when every projected column has a
// reader from its source type to its target column (copyReaderFor: the
// integers, boolean, double precision, numeric(p,s), text, varchar, date,
// timestamps, bytea, and the types stored as PostgreSQL's text) and the
// mode inserts the rows as they come (append, overwrite, errorifexists,
// ignore; merge into a target that was empty when the backfill started),
// CopyFrom turns each field into its storage form — the value Encode
// stores for the same value read through sluice — and writes the rows with
// multi-row INSERTs, no value decoded into Go's types or coerced. When
// the target's only CHECK constraints are the DECIMAL checks sluice
// creates (sqlitex.DecimalCheckSQL) on columns the copy reads as numeric
// text, the inserts run with PRAGMA ignore_check_constraints (the reader
// took only text those checks pass; it is set back before CopyFrom
// returns). A text
// its reader does not take (a NaN, an infinity, a BC date) or a row the
// target refuses fails the chunk (ErrCopyValue or the database's error):
// the runner copies it again through sluice, which converts the value as
// a run does or names the row. A bulk copy inside SQLite (a backfill from
// the same or an attached file) skips the same CHECKs for the DECIMAL
// columns it copies as stored from a column that carries the same CHECK
// (Tx.InsertRelationChecked).
//
// Keyed modes stage the rows of a batch with multi-row INSERTs into the
// staging table (rowsPerInsert rows each), then apply them.
//
// # Change relations
//
// Merges are applied from a change relation: a table or parenthesized
// SELECT with these columns, in any order:
//
//	__op       TEXT     INSERT, UPDATE_BEFORE, UPDATE_AFTER or DELETE
//	__ver      INTEGER  the commit version (commit order)
//	__ord      INTEGER  arrival order, breaking ties within one version
//	__present  TEXT     NULL for a full row; for a partial row one '1'/'0'
//	                    per projected column, in SinkStage.Schema order,
//	                    telling whether the column is carried
//	<projected columns> named as SinkStage.Schema, each value stored per the
//	                    conventions for its projected type (DECIMAL as
//	                    fixed-scale text, TIMESTAMP as zoned text, …)
//
// Sink transactions stage rows into the TEMP table sluice_stage with
// exactly these columns; pushdown passes a subquery over the change log.
// Values of a projected type other than the target column's type are
// converted in SQL by sluice_sink_fit (registered by this package), which
// fails the statement with a *cdc.ValueError when a value does not fit.
//
// Mode merge (YAML `mode: merge` with keys): per relation, UPDATE_BEFORE
// rows are dropped and each key collapses to its last change in (__ver,
// __ord) order. A DELETE deletes the key (a missing key is no error). An
// INSERT/UPDATE_AFTER full row upserts all projected columns
// (INSERT … ON CONFLICT(keys) DO UPDATE, so the target needs a primary key
// or unique index on the keys). Partial rows fold: each column takes the
// value of the last change carrying it, since the key's last DELETE or full
// row; a partial row only sets the columns it carries on an existing key,
// and on a new key (or after a DELETE in the same batch) the columns it
// does not carry are NULL. Merge keys must not be NULL.
//
// SQL MERGE INTO jobs (SinkStage.Merge): SQL semantics, see
// compileMergeInto. Each (source row, target row) pair takes the first WHEN
// clause whose matched-ness (against the target before the merge) and AND
// condition hold; a target row touched by two source rows, or a key inserted
// twice, is an error (ErrMergeCardinality) naming the key and saying how to
// filter — never a silent pick. The target must exist.
//
// Append-like modes write every row they receive, whatever its change type:
// a DELETE the job's filter let through becomes a row (with the values it
// carries), and columns a partial row does not carry are NULL.
//
// Stats.Written counts, by change type: every row for append modes; the net
// change per key (by the op of its last change, a DELETE of a missing key
// included) for merge; the source rows that took a clause for SQL MERGE.
package sqlite
