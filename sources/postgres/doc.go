// Package postgres is sluice's "postgres" backend (schemes postgres and
// postgresql, also key=value DSNs): table streams with change capture on
// stock PostgreSQL 13+ (no superuser, no wal_level=logical), the statements
// of the dialect, pushdown of whole plans, and — through package
// sinks/postgres — target writes.
//
// # Change capture
//
// ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true') creates, in the
// schema "sluice":
//
//   - a typed change log sluice."log_<t>" with the table's columns (same
//     PostgreSQL types, no constraints) plus __seq bigserial, __txid xid8
//     (pg_current_xact_id()), __op "char" and __ts timestamptz (now(), the
//     writing transaction's timestamp), indexed on __txid;
//   - one plpgsql function sluice."cap_<t>"(), SECURITY DEFINER (it runs
//     as the role that enabled tracking, so any role that may write the
//     table has its changes logged).
//
// The four statement-level triggers that call the function — AFTER
// INSERT / UPDATE / DELETE with transition tables (one INSERT … SELECT
// per statement, however many rows it touched) and BEFORE TRUNCATE, which
// logs every row as deleted (reading the table by TG_RELID, not by name),
// all ENABLE ALWAYS, so session_replication_role = replica does not skip
// them — exist only while a stream is on the table: the first CREATE
// TABLE STREAM creates them in the transaction that records the stream,
// under SHARE ROW EXCLUSIVE on the table (which waits for the transactions
// that wrote it), and takes the stream's offset snapshot after them, so
// the stream holds exactly the changes committed after its creation;
// dropping the last stream drops them (ACCESS EXCLUSIVE) and empties the
// log in the same transaction (CreateStream, DropStream, enableIn). A
// tracked table without a stream logs nothing and its writers pay nothing.
// Reads check that the triggers are there (checkTriggers), so a table
// whose triggers were dropped by hand fails loudly instead of reading
// nothing.
//
// A tracked table is its oid (sluice.tracking.relid), not its name. When
// the application renames it, the next statement or run that reads the
// catalog records the tracking and its streams under the new name and
// rewrites the capture function for the new name's NOTIFY channel
// (followRenames, rename.go); a table created under the old name is
// another table, untracked until tracking is enabled on it, which gives
// it a log and function of their own (freeObjectNames).
//
// Every statement that creates, enables or drops the triggers locks the
// table first (enabling tracking on a table with neither streams nor
// triggers only takes ACCESS SHARE), in attempts bounded by lock_timeout,
// retried until Backend.LockWait, naming the sessions that hold the table
// and the lock it waits for (locks.go).
//
// The function checks once per statement that the table still has the
// columns (attnum, name, type) it had when tracking was enabled (a
// constant PostgreSQL computes when it plans the check, through the
// IMMUTABLE sluice.columns_are, and computes again after any change of
// the table's columns, which invalidates the session's cached plan;
// shapeCheck; a function written by an earlier sluice queries
// pg_attribute on every statement until sluice rewrites it: when
// tracking is enabled again, or after a change of the table's columns;
// after a restore from a dump, whose new table oid makes the check
// false, the next read rewrites it);
// after a DDL that adds, drops, renames or retypes one, it logs each row
// as its record text ((r.*)::text, every value by its type's output
// function, as a JSON string) in the log's __extra column instead of
// naming columns that may no longer exist, so the application's
// statements never fail because of capture (the "JSON path",
// rowtext.go). Each such row also records the attnums of its values
// (__attnums), so a value is never taken for another column by its
// name, and is read back by its column type's input function, exactly
// as the typed path's values. Describing a stream (Stream, which every run does first)
// finds the table's columns out of line with the log (checkLog,
// logBehind) and brings the log in line without locking the table: the
// log's columns follow the table's by attnum (renamed, converted,
// dropped with a dropped column, added), the function is rewritten for
// them (CREATE OR REPLACE keeps its oid: the triggers are not touched),
// and then the JSON rows move into the typed columns by attnum
// (schemachange.go, followColumnsNow). After the primary key changed, it
// enables tracking again instead (the table locked, so that no statement
// still pairs UPDATE images under the old key). A read
// whose window still holds such rows (written after that) refuses with an
// error wrapping ErrTableChanged and runner.ErrPlanStale: the runner plans
// again, which brings them in.
//
// The capture function also runs pg_notify(NotifyChannel(t)) (empty
// payload) after a statement that logged at least one row, while some
// session listens: one that holds the channel's advisory lock in share
// mode (RegisterListener, RegisterListeners for many channels at once;
// `sluice serve` registers its LISTEN connection, and the lock goes with
// the session). The function tests
// the lock by taking it exclusively and releasing it at once
// (notifyGate). PostgreSQL
// delivers a NOTIFY when the writing transaction commits (never for a
// rolled-back one) and sends one per channel and transaction however many
// statements raised it, so the cost is one queue entry per writing
// transaction. The channel is "sluice_changes_<t>" (hashed when longer
// than 63 bytes, see NotifyChannel); `sluice serve` LISTENs on it
// (serve.PGListener) to run a continuous job as soon as its changes commit
// instead of at its next poll. Notifications are only a wake-up: they
// carry no data and a missed one merely delays a job until its poll.
// PostgreSQL serializes the commits of notifying transactions in the whole
// cluster (a lock held from the queue insertion to the end of commit),
// which matters only for many concurrent writers committing very small
// transactions. Tables whose tracking was enabled by an earlier sluice
// get this function when change tracking is enabled again (ALTER TABLE t
// SET PROPERTIES ('change_tracking' = 'true') rewrites it); until then
// their function works as before (RegisterListener also registers in
// sluice.listeners, the previous gate).
//
// Log rows: 'I' inserted image, 'D' deleted image, 'B' the old image of
// an UPDATE, 'U' or 'A' its new image. Transition tables do not pair old
// and new rows, so images are paired by primary key when changes are read:
// per key, the first log row in a batch tells the state at the offset
// (B/D: present with that image; I/A: absent) and the last one the state
// at the read point (I/A/U: present; B/D: absent). An update that changes
// the key is thus a DELETE of the old key plus an INSERT of the new one.
// Per key, __seq order is commit order (row locks serialize writers;
// within one UPDATE the old images are logged before the new ones), so
// first/last by __seq is right. That needs one row per key between
// statements, which a primary key checked only at commit does not give:
// STANDARD streams on a table whose key is DEFERRABLE INITIALLY DEFERRED
// are refused when created and when read (ErrDeferredKey). A key that is
// DEFERRABLE INITIALLY IMMEDIATE is checked after every statement, and
// the capture sees whole statements; a transaction that defers it (SET
// CONSTRAINTS … DEFERRED) and leaves two rows of one key between its
// statements is read wrong, and is not detected.
//
// An UPDATE statement whose new rows' keys are all among its old rows'
// keys (one that sets no key column, the common case) logs its new
// images as 'U': each then follows an old image of its key, so a 'U' row
// is never a key's first row, and the read that
// needs only first rows (tableImagesQuery) sorts the log without them,
// about half the rows of an update. A statement that changes a key logs
// 'A'. The function checks this with one EXCEPT of the transition tables'
// keys per statement, under the primary key recorded in sluice.tracking
// (paired_key) when tracking was enabled; a read uses the 'U' marks only
// while the table's primary key is still that one (Tracked.pairsKnown),
// and enabling tracking again under another key turns the log's 'U' rows
// into 'A'. Logs written before the marks have only 'A' rows, which every
// read treats like 'U' but never leaves out.
//
// # TRUNCATE
//
// The BEFORE TRUNCATE branch of the capture function copies every row of
// the table into the log as 'D', in the truncating transaction, under
// TRUNCATE's ACCESS EXCLUSIVE lock. A read then needs nothing special: a
// truncated key's first log row in a window is a 'D' (or an earlier row
// of the window), so it is a DELETE with its image at the offset unless a
// later row re-inserts it (an UPDATE, or nothing when equal); APPEND_ONLY
// reads ignore the 'D' rows, and their SHOW_INITIAL_ROWS read finds in
// them the rows at creation the table no longer holds. The price is a
// copy: on a 1M-row table (bigint key, md5 text, numeric, timestamptz)
// 9–22 s and 126 MB of log against 0.3–2.9 s untracked, on a loaded
// 2-core machine (docs/benchmarks.md, bench/pgtruncate).
//
// Issue #17 asks for one event resolved at read time. What a window
// holding a truncate must yield is fixed by the net-change semantics:
// for every key present just before it and absent at the read point, a
// DELETE carrying the key's image at the offset (its first log row in
// the window, else its values then). Those values exist after the
// truncate only where something copied them: TRUNCATE gives the table a
// new file and unlinks the old one at commit, and it is not MVCC-safe (no
// snapshot reads the old rows afterwards); a BEFORE TRUNCATE trigger can
// neither cancel it (raising fails the application's statement) nor keep
// the old file (no SQL does; ALTER TABLE on the table is refused inside
// its own TRUNCATE). So the choice is where the copy is made.
//
// Made at the truncate, every variant measured costs seconds per million
// rows (in a trigger like this one, three rounds, load 15–21, PostgreSQL
// 15): the log as now 9.0–13.8 s; the same rows into a side table without
// index, sequence or defaults 6.1–7.8 s; an UNLOGGED side table 3.6–6.3 s
// (lost in a crash, not on standbys); the keys alone 4.4–6.8 s; untracked
// 0.3–2.1 s. The cheapest safe copy halves the time at best, and the keys
// alone would lose the DELETE's values, which a job's WHERE on the
// deleted row, an aggregate or a history sink reads: a change dropped
// without a word, so that is not an option.
//
// Made ahead, it is a base image of the table at the purge horizon (the
// lowest stream offset), sluice."img_<t>": a full copy taken in the
// snapshot of the table's first stream, kept current by the purge, which
// merges into it the net changes it removes from the log (one more write
// of every change, outside the application's transactions). A TRUNCATE
// then logs one 'T' row, and a read resolves a 'T' in its window into 'D'
// rows of the state just before it: the image plus the log rows numbered
// below the 'T' (after an earlier 'T', the rows between the two). That is
// exact because ACCESS EXCLUSIVE splits the other writers: each holds
// ROW EXCLUSIVE on the table until it commits, so every log row numbered
// below the 'T' belongs to a transaction committed before it and every
// other one to a transaction committed after it. Its price is paid by
// every tracked table all the time: one more copy of the table in
// storage, a full copy when tracking starts, and every change written
// again at purge — for a statement most applications never run on a
// tracked table. It is not built yet (#17); until then, truncating a
// large tracked table costs the copy above, and the way around it is to
// disable tracking (which drops the triggers, the log and the streams),
// truncate, enable tracking again, create the streams again and backfill
// the jobs' targets (README). TestRunPostgresTruncate holds the
// semantics any replacement must keep.
//
// # Offsets: snapshot batches (PgQ style)
//
// A position (Position) is "sys=<system_identifier> batch=<n>
// snap=<xmin:xmax:xip>" and, until the first read of a SHOW_INITIAL_ROWS
// stream, the word "initial". A read runs in a REPEATABLE READ transaction
// with snapshot N (pg_current_snapshot()). The batch is the log rows of
// transactions visible in N and not in the old snapshot F: __txid >=
// xmax(F) OR __txid = ANY(xip(F)) (literals from the stored offset, so the
// __txid index is used) AND pg_visible_in_snapshot(__txid, N). The read
// point R stored afterwards is N narrowed to what the table saw: xmax(R) =
// max(xmax(F), highest txid in the batch + 1) and xip(R) = the ids of N's
// running transactions below it. R makes exactly the batch's transactions
// newly visible, so nothing is skipped or repeated, and it depends on the
// table's changes rather than on unrelated activity in the cluster (a read
// with nothing new keeps the offset). A transaction running at a read is
// in xip(R), or at or above xmax(R), and is read by a later read exactly
// once. The system identifier (pg_control_system(), readable without
// superuser) is checked on every read: an offset from another cluster, or
// one ahead of this cluster's xid counter (a restore to an earlier point),
// is refused with ErrClusterMismatch. A log restored from another cluster
// or a cluster restored to an earlier point can hold rows of transaction
// ids the cluster has not assigned yet, which would be read as new once
// its counter passed them: every read refuses a log with a visible row at
// or above its snapshot's xmax (ErrRestoredLog), and enabling tracking
// again deletes such rows (epoch.go). A read from an offset behind the
// stream's own offset (Covers) is refused with ErrPurged.
//
// __commit_version is one per source transaction: (batch << 32) + an
// offset of the last log row of the transaction that made the change (of
// the key's last change, for a STANDARD net change) within the batch,
// __tmax (versionedWindowCTE: max(__seq) over the transaction's log rows,
// all of which are in one batch). It increases strictly from batch to
// batch (batch counts reads that saw a new snapshot); within a batch it
// follows __tmax, which is commit order for transactions that touch a
// common key (the later one waited for the earlier one's row lock, so
// its log row of that key comes after all of the earlier one's); the
// commit order of transactions that share no key and commit within one
// batch is not recorded anywhere (no track_commit_timestamp), and they
// are ordered by their last log row. Every change of a transaction, an
// UPDATE_BEFORE and its UPDATE_AFTER included, shares its version. For a
// STANDARD read from an offset the offset is __tmax - (min(__seq) of the
// window - 1), with the window's min and max __seq taken by the query
// that narrows the read point; it lies in 1 .. 2^32-1 while the window's
// __seq span is below 2^32, and a wider window (and the other reads:
// initial rows, APPEND_ONLY, the first read of a stream without an
// offset) uses the dense rank of __tmax instead. Versions within a batch
// are thus increasing, not dense. Versions are computed when a stream is
// read, from the __txid every log row has carried since tracking was
// first enabled: streams, offsets and logs of an earlier sluice read on
// unchanged, their next read already versioned per transaction. A read
// that reports no version (changes_table.go) does not compute __tmax.
// __commit_timestamp is the writing transaction's now() in UTC
// (PostgreSQL does not expose commit times without
// track_commit_timestamp); initial rows carry the stream's creation time.
//
// After a run commits, log rows of transactions visible in every stream
// offset on the table are purged in a transaction of their own: by
// TRUNCATE when no session holds the log and no stream needs a row of it,
// else by DELETE (purge.go explains why the TRUNCATE is safe: every read
// that commits locks the log before taking its snapshot).
//
// A read for a merge sink (runner.ReadOptions.OmitUpdateBefore) leaves
// UPDATE_BEFORE out: one row per changed key, counted as one omitted
// UPDATE_BEFORE per UPDATE_AFTER. A read sets work_mem for its own
// transaction from the size of its window (sinkpg.WorkMemSQL), so the sort of
// the window's log rows stays in memory.
//
// ChangesQuery is the single SQL text of a read, used by Changes and by
// pushdown.
package postgres
