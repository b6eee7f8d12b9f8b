package sqlite

import (
	"errors"

	"github.com/sluicedata/sluice/runner"
)

// Sentinel errors of the sqlite backend. Errors returned by the backend wrap
// them (and runner's sentinels where one applies: a missing stream wraps
// runner.ErrNoStream, a concurrent offset move runner.ErrOffsetMoved, a plan
// that cannot run as SQL runner.ErrNoPushdown; ErrSchemaChanged and
// ErrCaptureLost match runner.ErrSourceSchema).
var (
	// ErrNoTable: the statement names a table that does not exist.
	ErrNoTable = errors.New("table does not exist")
	// ErrNotTracked: a stream is created on a table without change tracking.
	ErrNotTracked = errors.New("change tracking is not enabled on the table")
	// ErrNoPrimaryKey: a STANDARD stream on a table without a primary key.
	ErrNoPrimaryKey = errors.New("table has no primary key")
	// ErrStreamsExist: change tracking is disabled, or the table dropped,
	// while streams still read the table.
	ErrStreamsExist = errors.New("table has table streams")
	// ErrStreamExists: CREATE TABLE STREAM of an existing name without OR
	// REPLACE or IF NOT EXISTS.
	ErrStreamExists = errors.New("table stream already exists")
	// ErrSchemaChanged: the table's definition changed (DDL) between the
	// moment a run prepared its read and the read itself, or differs from
	// the one a job was planned with; running again re-installs capture.
	ErrSchemaChanged = runner.SchemaSentinel("table changed since change tracking was enabled")
	// ErrCaptureLost: a tracked table's capture triggers are gone (the
	// table was dropped, or dropped and created again by a rebuild); the
	// error says how to go on.
	ErrCaptureLost = runner.SchemaSentinel("change capture of the table is gone")
	// ErrBehindOffset: a read from an offset behind the stream's own offset
	// (a job checkpoint left behind by another consumer of the stream).
	ErrBehindOffset = errors.New("offset is behind the stream's offset")
	// ErrBusy: enabling or disabling change tracking waited busy_timeout
	// (sqlitex.BusyTimeout) for the database's write lock, which another
	// connection held; nothing was changed.
	ErrBusy = errors.New("the database's write lock is held by another connection")
	// ErrRestored: a read from an offset past the last change the
	// database's log numbered, or whose anchor names another change than
	// the log's row of that seq now (anchor.go): the file was replaced by
	// an earlier copy.
	ErrRestored = errors.New("offset is ahead of the database (restored from an earlier copy)")
	// ErrUnsupported: a statement or construct the backend does not run.
	ErrUnsupported = errors.New("not supported by the sqlite backend")
)
