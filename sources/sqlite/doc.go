// Package sqlite is sluice's embedded backend, registered for the URL
// scheme "sqlite" (sqlite:PATH, sqlite://PATH, sqlite::memory:): a table
// stream source with change capture by triggers, an executor of the
// dialect's statements, a sink (delegated to package sinks/sqlite on the
// same connections) and, when source and sink are the same file, a
// pushdown target that runs a whole job as SQL in one transaction. Every
// Backend on a file uses the process's shared connections to it
// (sqlitex.OpenShared: one writer, at most sqlitex.DefaultReaders
// readers), as do serve's run history and change watcher.
//
// # Catalog
//
// sluice_tracking(tbl, log, columns, enabled, table_sql) lists the tables
// with change tracking, their change log, the columns captured and the
// table's definition (its CREATE TABLE and CREATE INDEX statements) when
// capture was installed; sluice_streams(name, tbl, mode, show_initial_rows,
// comment, created, id, "offset") the table streams. created is UTC; id is
// random per incarnation (CREATE OR REPLACE makes a new one, so old
// checkpoints are not applied to it).
//
// # Change capture
//
// ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true') creates the
// change log sluice_changes_<t> and registers the table; the helper tables
// and triggers below exist only while a stream is on the table: the first
// CREATE TABLE STREAM installs them (tracking.go, captureOn) in its write
// transaction, which holds the database's write lock (no application write
// is under way, and the stream's offset, the log's last seq, is taken
// after them), and dropping the last stream removes them and empties the
// log (captureOff). A tracked table without a stream logs nothing. The
// log:
//
//	seq  INTEGER PRIMARY KEY AUTOINCREMENT  -- commit order
//	op   TEXT     I, U, D; KD + KI for an UPDATE that changes the primary key
//	ts   TEXT     statement time, UTC, millisecond precision ("…+00:00")
//	rid  INTEGER  the row's rowid
//	o_<col>…      the old image (U, D, KD), values exactly as stored
//	n_<col>…      the new image (I, U, KI)
//
// two helper tables, sluice_pending_<t> (old images of rows a statement is
// changing, by rowid) and sluice_absent_<t> (one row of absent markers),
// and six row triggers (capture.go, captureSpec.triggers): BEFORE INSERT,
// UPDATE and DELETE take the old images of the row and of every row the new
// values conflict with (rowid, each UNIQUE index), AFTER INSERT, UPDATE and
// DELETE write the log rows — a delete for each of those rows a REPLACE
// removed, whatever the connection's recursive_triggers. An UPDATE that
// changes the primary key is logged as KD (old row) + KI (new row): for net
// changes it is a DELETE of the old key and an INSERT of the new one, but it
// is not an insert for APPEND_ONLY streams. SQLite has one writer at a time
// and the triggers run inside the writing transaction, so seq order is
// commit order and a transaction's rows become visible all at once when it
// commits: a read never sees half a transaction, and a long transaction that
// commits after a read shows up in the next one (its seqs are above that
// read's read point).
//
// # Schema changes
//
// The triggers name no column an application can drop: values are read back
// from the table by rowid through a NATURAL LEFT JOIN with sluice_absent_<t>,
// so a column the table lost resolves to sluice_absent_<t>'s (NULL: the
// join never matches) instead of failing, and ALTER TABLE … DROP / RENAME / ADD COLUMN and the writes after
// them succeed with sluice not running. Each reference carries a marker
// comment naming its log column; SQLite rewrites the reference on RENAME
// COLUMN and keeps the comment. RENAME TABLE moves the triggers with the
// table.
//
// The table's definition is compared with the one recorded at install;
// when they differ (any DDL), the next run — Stream, a pushed-down run, a
// new stream — re-installs capture first (tracking.go, syncCapture): the
// triggers follow a renamed table (its log and registration are renamed,
// its streams follow it, and a new table under the old name is untracked);
// log columns follow renamed columns; a new column gets o_<col> with the
// column's DEFAULT — the value SQLite reads for rows older than the column —
// and n_<col> with the absent marker. A read then takes an absent new image
// from the table (STANDARD: the key's last change in the window left the
// row as the table holds it at the read point; APPEND_ONLY: the row by
// rowid, and the read refuses, consuming nothing, when the row was changed
// or deleted since, see checkAppendAbsent). Old images are right as logged:
// a read's offset is always a point where capture covered every column the
// table had (every consuming read checks, in its snapshot, that the
// definition is the recorded one, else ErrSchemaChanged "run again"), so
// a column missing from a change after the offset did not exist at the
// offset and its DEFAULT is its value there. A column dropped and added
// again under its name is such a new column too, also with no run in
// between, when its position or declaration tells it (readd.go,
// readdedColumns): its old log columns are moved aside, so no change
// carries the dropped column's values in it.
//
// When the triggers of a table with a stream are gone (DROP TABLE, or the
// rebuild migration CREATE new_t / INSERT … SELECT / DROP TABLE t / ALTER
// TABLE new_t RENAME TO t), runs fail with ErrCaptureLost, saying which and how to go on; enabling
// tracking again re-installs capture into the kept log (streams go on), and
// DROP TABLE STREAM and disabling tracking work on a dropped table.
// Capture installed by an earlier sluice (AFTER triggers naming every
// column) is replaced by the first run, keeping its log and offsets. A
// table without a stream has no triggers to follow it: a rename leaves its
// tracking with the old name (enable tracking under the new one).
//
// # Commit versions
//
// __commit_version is the seq of the change (STANDARD: of the key's last
// change in the window): strictly increasing in commit order, but one per
// change, not one per transaction. Triggers cannot tell transactions
// apart: what a trigger program can observe — the tables of its schema
// (its own transaction's uncommitted rows look exactly like committed
// ones: SQLite has no row visibility a query can test), changes(),
// total_changes(), last_insert_rowid() (per connection and statement),
// 'now' (per statement) and random() — is the same when two transactions
// T1, T2 run one after the other on a connection as when T1's and T2's
// statements run as one transaction, and COMMIT fires no trigger; so no
// trigger program can give T2 a different number in the first case and
// the same number in the second. (pragma_data_version() changes only when
// another connection commits; a commit hook is C API of the writing
// connection, which is the application's.) Nor can a read find the
// boundaries afterwards: with one writer a transaction's log rows are
// contiguous in seq, but the log rows of the two histories above are the
// same (their 'now' may differ, and may not), and the WAL's commit
// frames are pages, gone at the next checkpoint. A read knows one
// boundary only: the read point, after which a later commit's rows
// start. So SQLite keeps one version per change.
//
// The commit timestamp is SQLite's 'now' of the statement that made the
// change (millisecond precision, not microsecond), UTC.
//
// # Offsets and reads
//
// An offset is cdc.SingleOffset("<seq>") or, as a read hands it out,
// "<seq>:<anchor>" (anchor.go: a fingerprint of the log row numbered seq):
// every change with seq <= it is
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
// A read from an offset past the last seq ever assigned (a checkpoint in
// another file, taken before the database was replaced by an earlier copy
// of itself) is refused with ErrRestored instead of skipping the changes
// the restored log numbers again up to it. A restored copy whose log has
// numbered past that offset since is told by the offset's anchor: the
// row with that seq is another change now (ErrRestored, anchor.go).
//
// Advance is a compare-and-set of the offset (and of the stream's id) in a
// BEGIN IMMEDIATE transaction, which then purges the log rows every stream
// on the table has consumed (seq <= the smallest offset; all rows when the
// table has no stream). Dropping a stream purges the same way.
package sqlite
