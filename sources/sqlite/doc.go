// Package sqlite is sluice's embedded backend, registered for the URL
// scheme "sqlite" (sqlite:PATH, sqlite://PATH, sqlite::memory:): a table
// stream source with change capture by triggers, an executor of the
// dialect's statements, a sink (delegated to package sinks/sqlite on the
// same *sql.DB) and, when source and sink are the same file, a pushdown
// target that runs a whole job as SQL in one transaction.
//
// # Catalog
//
// sluice_tracking(tbl, log, columns, enabled) lists the tables with change
// tracking and the columns their triggers capture; sluice_streams(name, tbl,
// mode, show_initial_rows, comment, created, id, "offset") the table
// streams. created is UTC; id is random per incarnation (CREATE OR REPLACE
// makes a new one, so old checkpoints are not applied to it).
//
// # Change capture
//
// ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true') creates the
// change log sluice_changes_<t>:
//
//	seq  INTEGER PRIMARY KEY AUTOINCREMENT  -- commit order
//	op   TEXT     I, U, D; KD + KI for an UPDATE that changes the primary key
//	ts   TEXT     statement time, UTC, millisecond precision ("…+00:00")
//	rid  INTEGER  the row's rowid
//	o_<col>…      the old image (U, D, KD), values exactly as stored
//	n_<col>…      the new image (I, U, KI)
//
// and AFTER INSERT / UPDATE / DELETE row triggers that append to it. An
// UPDATE that changes the primary key is logged as KD (old row) + KI (new
// row): for net changes it is a DELETE of the old key and an INSERT of the
// new one, but it is not an insert for APPEND_ONLY streams. REPLACE
// conflict resolution fires the delete trigger (recursive_triggers is on).
// SQLite has one writer at a time and the triggers run inside the writing
// transaction, so seq order is commit order and a transaction's rows become
// visible all at once when it commits: a read never sees half a transaction,
// and a long transaction that commits after a read shows up in the next one
// (its seqs are above that read's read point).
//
// The commit timestamp is SQLite's 'now' of the statement that made the
// change (millisecond precision, not microsecond), UTC.
//
// # Offsets and reads
//
// An offset is cdc.SingleOffset("<seq>"): every change with seq <= it is
// consumed. A SHOW_INITIAL_ROWS stream starts at "initial@<seq>" (seq = the
// log position at creation) until its first consumption. A read opens a
// read transaction, takes the read point from sqlite_sequence (the last seq
// ever assigned, so purging never moves it back) and runs ChangesQuery in
// the same snapshot.
//
// STANDARD (net change per primary key over the log rows in (from, to]):
// per key, the first row f gives the state at the offset (absent if f is I
// or KI, else f's old image) and the last row l the state at the read point
// (absent if l is D or KD, else l's new image). absent→present is INSERT
// (l's image), present→absent DELETE (f's image), present→present with a
// column that differs (IS NOT) UPDATE_BEFORE (f) + UPDATE_AFTER (l),
// otherwise nothing. __commit_version is l's seq, __commit_timestamp its
// ts; output is ordered by version, UPDATE_BEFORE first.
//
// APPEND_ONLY: every I row in (from, to], with its new image, version seq.
//
// SHOW_INITIAL_ROWS, first consumption (offset "initial@c"): STANDARD
// treats the state at the offset as empty, so the read is the table at the
// read point, every row an INSERT with its current values (a row deleted
// since creation is not returned; one updated since is returned with its
// final values); a row's version is the seq of its last change after c, or
// c with the stream's creation time when untouched. APPEND_ONLY returns the
// rows as they were at creation (rebuilt from the table and the old images
// of their first change after c, by rowid) with version c, then every
// insert after c. Consuming moves the offset to a plain "<seq>".
//
// Advance is a compare-and-set of the offset (and of the stream's id) in a
// BEGIN IMMEDIATE transaction, which then purges the log rows every stream
// on the table has consumed (seq <= the smallest offset; all rows when the
// table has no stream). Dropping a stream purges the same way.
package sqlite
