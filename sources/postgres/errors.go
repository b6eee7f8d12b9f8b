package postgres

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sluicedata/sluice/runner"
)

// Sentinel errors of package sources/postgres. ErrTriggersMissing,
// ErrTableChanged and ErrKeyNotLogged, refusals because of a schema
// change, match runner.ErrSourceSchema too.
var (
	// ErrClusterMismatch is an offset taken on another PostgreSQL cluster
	// (different system_identifier) or ahead of this cluster's transaction
	// counter (restored to an earlier point).
	ErrClusterMismatch = errors.New("offset belongs to another PostgreSQL cluster")
	// ErrNotTracked is a stream on a table without change tracking.
	ErrNotTracked = errors.New("table has no change tracking")
	// ErrNoPrimaryKey is a STANDARD stream on a table without a primary key.
	ErrNoPrimaryKey = errors.New("table has no primary key")
	// ErrStreamExists is CREATE TABLE STREAM of an existing name.
	ErrStreamExists = errors.New("table stream already exists")
	// ErrNoTable is a statement on a table that does not exist.
	ErrNoTable = errors.New("table does not exist")
	// ErrTableDropped is a tracked table that was dropped (the oid recorded
	// when tracking was enabled no longer exists).
	ErrTableDropped = errors.New("tracked table was dropped")
	// ErrNameInUse is enabling tracking on a table whose name is the
	// tracking key of another tracked table whose new name sluice could
	// not record: moved out of the search_path (SET SCHEMA), or renamed
	// to a name recorded for yet another tracking (followRenames).
	ErrNameInUse = errors.New("name is recorded for another tracked table")
	// ErrTriggersMissing is a tracked table whose capture triggers are
	// missing or disabled.
	ErrTriggersMissing = runner.SchemaSentinel("capture triggers are missing")
	// ErrNotOwner is enabling change tracking, or changing the capture
	// of a table, as a role that is neither the table's owner nor a
	// member of it: CREATE and DROP TRIGGER need the owner's rights.
	ErrNotOwner = errors.New("change tracking needs the table's owner")
	// ErrIsPartition is enabling change tracking on a partition: its
	// statement-level triggers do not fire for statements on the
	// partitioned table, so changes made through it would be missed.
	ErrIsPartition = errors.New("table is a partition")
	// ErrDeferredKey is a STANDARD stream on a table whose primary key
	// is DEFERRABLE INITIALLY DEFERRED: a transaction may hold two rows
	// of one key between its statements, the log's changes per key then
	// mix two rows, and net changes per key would be wrong (a row could
	// be read as deleted while it exists).
	ErrDeferredKey = errors.New("table's primary key is initially deferred")
	// ErrHasStreams is disabling change tracking on a table with streams.
	ErrHasStreams = errors.New("table has table streams")
	// ErrBadPosition is a stored position that does not parse.
	ErrBadPosition = errors.New("bad PostgreSQL stream position")
	// ErrUnsupported is a statement this backend does not execute.
	ErrUnsupported = errors.New("statement not supported by the postgres backend")
	// ErrPurged is a read from an offset behind the stream's own offset:
	// another run consumed the changes in between, and the change log may
	// already have purged them.
	ErrPurged = errors.New("offset is behind the stream's offset")
	// ErrTableChanged is a tracked table whose columns changed since
	// tracking was enabled.
	ErrTableChanged = runner.SchemaSentinel("tracked table changed since change tracking was enabled")
	// ErrLogNotAligned is a read that found the table's columns or key
	// changed and could not bring the change log in line with them (a
	// DDL racing with the move, a narrowing type, a role that may not
	// alter the log): nothing was read, and serve retries it with backoff
	// (runner.ErrSourceSchema), as the next attempt usually succeeds.
	ErrLogNotAligned = runner.SchemaSentinel("bringing the change log in line with the table failed")
	// ErrKeyNotLogged is enabling change tracking again under a primary
	// key that changes still in the change log have no value for.
	ErrKeyNotLogged = runner.SchemaSentinel("pending changes in the change log lack the new primary key")
	// ErrLockTimeout is enabling or disabling change tracking that did not
	// get its lock on the table within Backend.LockWait (LockTimeoutError
	// names the sessions holding it).
	ErrLockTimeout = errors.New("lock on the table not available")
	// ErrRestoredLog is a change log holding rows of transactions this
	// cluster has not run (restored from another cluster, or the cluster
	// restored to an earlier point; epoch.go).
	ErrRestoredLog = errors.New("change log holds rows from another cluster or a later point")
	// ErrBadConn is a connection URL sluice cannot read unambiguously (a
	// password with a character that must be percent-encoded).
	ErrBadConn = errors.New("unreadable connection URL")
)

// secretError hides a password that a driver error may contain.
type secretError struct {
	err    error
	secret string
}

func (e *secretError) Error() string { return strings.ReplaceAll(e.err.Error(), e.secret, "xxxxx") }
func (e *secretError) Unwrap() error { return e.err }

// hide wraps err so that its text never shows secret.
func hide(err error, secret string) error {
	if err == nil || secret == "" {
		return err
	}
	return &secretError{err: err, secret: secret}
}

// pgCode returns the SQLSTATE of a server error, "" for other errors.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// isUndefinedTable reports a missing relation (42P01), e.g. sluice's own
// tables before anything created them.
func isUndefinedTable(err error) bool { return pgCode(err) == "42P01" }
