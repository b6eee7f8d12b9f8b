package runner

import (
	"context"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
)

// Backend is an open connection to one database (or another endpoint),
// returned by the Opener registered for its URL scheme. A backend implements
// Source, Sink, Executor and Pushdowner as it can; the runner checks with
// type assertions.
type Backend interface {
	// Scheme is the registered scheme, e.g. "sqlite".
	Scheme() string
	// Identity names the database so that two connections to the same one
	// compare equal (an absolute file path; host:port/dbname). Never
	// contains a password.
	Identity() string
	// Redacted is the connection URL with any password masked.
	Redacted() string
	Close() error
}

// Executor runs statements of the dialect (`sluice sql`, SQL job setup).
type Executor interface {
	Backend
	// Exec executes one parsed statement. Statements that return rows
	// (SELECT, SHOW TABLE STREAMS, DESCRIBE TABLE STREAM) return a
	// ResultSet; INSERT, UPDATE and DELETE may return a ResultSet without
	// Columns whose Affected counts the rows they changed; others return
	// nil and a nil error.
	Exec(ctx context.Context, st dsl.Statement) (*ResultSet, error)
}

// ResultSet is a materialized query result, or (Columns nil) the count
// of rows an INSERT, UPDATE or DELETE changed.
type ResultSet struct {
	Columns  []cdc.Column
	Rows     [][]any // canonical values (package cdc)
	Affected int64   // rows inserted, updated or deleted, when Columns is nil
}

// StreamInfo describes a table stream.
type StreamInfo struct {
	Name            string
	Table           string
	Mode            string // "STANDARD" or "APPEND_ONLY"
	ShowInitialRows bool
	Comment         string
	Created         time.Time // UTC
	// ID identifies this incarnation of the stream: dropping and creating
	// the stream again changes it, so checkpoints of the old one are not
	// applied to the new one.
	ID string
	// TableSchema is the table's columns and primary key.
	TableSchema cdc.Schema
	// Offset is the stream's committed offset.
	Offset cdc.Offset
	// StaleAfter is the stream's retention: a change it leaves unconsumed
	// for longer makes it stale (0 on backends without one).
	StaleAfter time.Duration
	// StaleSince is when the stream was found stale (UTC); zero while it
	// is not. Only listings (SHOW TABLE STREAMS) return stale streams: a
	// read of one fails with ErrStreamStale.
	StaleSince time.Time
}

// DefaultStaleAfter is the retention of a stream created without
// 'STALE_AFTER': 14 days, the longest a Snowflake stream can go unread
// before it is stale (MAX_DATA_EXTENSION_TIME_IN_DAYS, default 14,
// https://docs.snowflake.com/en/user-guide/streams-intro#data-retention-period-and-staleness).
const DefaultStaleAfter = 14 * 24 * time.Hour

// LogKeeper is a Source that keeps a change log of its own (SQLite,
// PostgreSQL) and bounds it.
type LogKeeper interface {
	// TrimLogs purges from every change log of the database what no stream
	// can read any more — the whole log of a tracked table without a
	// stream, the changes every stream consumed, and the changes only
	// stale streams still wait for — after marking stale each stream whose
	// oldest unconsumed change is older than its StaleAfter. It returns
	// each tracked table's log size after the purge, by table name.
	TrimLogs(ctx context.Context) ([]LogSize, error)
}

// LogSize is the size of one tracked table's change log.
type LogSize struct {
	Database string // the database, without credentials (a file path, host:port/db)
	Table    string // the tracked table
	Rows     int64  // rows in the log
	Bytes    int64  // bytes the log occupies on disk, as the database reports them (0 when it cannot tell)
}

// ReadOptions tune a read.
type ReadOptions struct {
	// BatchSize bounds the changes returned by one ChangeReader.Next.
	BatchSize int
	// BatchBytes bounds the memory of one batch's changes, as the source
	// estimates it (a batch holds at least one change); 0 leaves it to
	// the source's default. With BatchSize it bounds a run's memory
	// whatever the width of the rows.
	BatchBytes int
	// OmitUpdateBefore allows the source to leave UPDATE_BEFORE changes
	// out of the read, because the sink ignores them
	// (plan.SinkStage.IgnoresUpdateBefore). A reader that does implements
	// OmittingReader, so the run still counts them as read, and may return
	// the changes in any order: such a sink orders them by
	// __commit_version itself.
	OmitUpdateBefore bool
}

// OmittingReader is a ChangeReader that can leave changes out of its read
// (ReadOptions.OmitUpdateBefore). Omitted returns how many changes it left
// out so far, by change type; after io.EOF, for the whole read.
type OmittingReader interface {
	ChangeReader
	Omitted() map[cdc.Op]int64
}

// NetChangeSource is a Source whose reads of some streams hold the net
// change per primary key: at most one change per key besides
// UPDATE_BEFORE (DESIGN.md: a STANDARD table stream). NetChanges reports
// whether reads of s do. The planner then lets a merge sink whose keys
// pass the primary key through skip its collapse to one change per key
// (plan.SinkStage.OneChangePerKey).
type NetChangeSource interface {
	Source
	NetChanges(s *StreamInfo) bool
}

// PartialRowSource is a Source whose reads of some streams may deliver
// partial rows (cdc.Change.Present set: only some columns carried), as
// Tablestore's UpdateRow does. PartialRows reports whether reads of s may;
// the planner then sets plan.SinkStage.PartialRows. A source that does not
// implement it delivers full rows only.
type PartialRowSource interface {
	Source
	PartialRows(s *StreamInfo) bool
}

// Source reads table streams.
type Source interface {
	Backend
	// Stream describes the job's source stream; it returns an error
	// wrapping ErrNoStream when there is none.
	Stream(ctx context.Context, src plan.Source) (*StreamInfo, error)
	// Changes opens a read of the stream's changes after from, up to a read
	// point fixed by this call (ChangeReader.ReadPoint). It never moves the
	// stream's offset.
	Changes(ctx context.Context, s *StreamInfo, from cdc.Offset, opt ReadOptions) (ChangeReader, error)
	// Advance moves the stream's stored offset to to, if it is still from
	// (compare-and-set); it returns an error wrapping ErrOffsetMoved when it
	// is not.
	Advance(ctx context.Context, s *StreamInfo, from, to cdc.Offset) error
}

// ChangeReader yields the changes of one read in commit order (for STANDARD
// streams: net changes, an UPDATE_BEFORE directly before its UPDATE_AFTER),
// except that an OmittingReader may yield them in any order.
// Change.Row is aligned with StreamInfo.TableSchema.
type ChangeReader interface {
	// ReadPoint is the offset the stream moves to when the read is consumed.
	ReadPoint() cdc.Offset
	// Next returns the next batch, at most ReadOptions.BatchSize changes,
	// or io.EOF after the last.
	Next(ctx context.Context) ([]cdc.Change, error)
	Close() error
}

// Checkpoint is a job's position as stored in its sink database, committed
// in the same transaction as the rows it covers.
type Checkpoint struct {
	Job      string
	Stream   string
	StreamID string
	Offset   cdc.Offset
	Updated  time.Time
}

// Sink writes projected rows into a target.
type Sink interface {
	Backend
	// Target describes the target table: its schema and whether it exists.
	Target(ctx context.Context, table string) (cdc.Schema, bool, error)
	// PrepareSink compiles how rows are written to st (its SQL, for the plan).
	PrepareSink(ctx context.Context, st *plan.SinkStage) (SinkPlan, error)
}

// SinkPlan is a compiled sink: the steps it will execute and a way to run
// them.
type SinkPlan interface {
	Steps() []plan.Step
	// Begin opens the sink transaction of one run of job.
	Begin(ctx context.Context, job string) (SinkTx, error)
}

// DeferredSyncPlan is a SinkPlan whose transactions can commit without
// waiting for the disk. Runner.Backfill begins every chunk but the last
// with it (see "Durability" in Runner.Backfill's doc): nothing outside the
// sink depends on those commits, and the last chunk's ordinary, durable
// commit makes them durable too.
type DeferredSyncPlan interface {
	SinkPlan
	// BeginDeferred is Begin, except that when Commit returns, the commit
	// may not be on disk yet: a crash of the machine (power loss, kernel
	// panic; not of the process) may undo it together with every later
	// commit of the database, never part of one and never an earlier one
	// alone, and the next durable commit of the database makes it durable.
	BeginDeferred(ctx context.Context, job string) (SinkTx, error)
}

// SinkTx is one run's transaction in the sink database.
type SinkTx interface {
	// Checkpoint returns the job's stored checkpoint, ok false if none.
	Checkpoint(ctx context.Context) (cp Checkpoint, ok bool, err error)
	// Write stages or writes a batch; Row is aligned with SinkStage.Schema.
	Write(ctx context.Context, batch []cdc.Change) error
	// Commit applies what was staged, stores cp and commits, atomically.
	Commit(ctx context.Context, cp Checkpoint) (Stats, error)
	// Rollback abandons the transaction; safe after Commit.
	Rollback(ctx context.Context) error
}

// Stats counts rows of a run.
type Stats struct {
	Read    map[cdc.Op]int64 // changes read from the stream, by change type
	Written map[cdc.Op]int64 // rows applied at the sink, by change type
	// Note is a remark for the run history, "" for none: the run accepted
	// a new incarnation of its stream (Start, WithAcceptNewStream).
	Note string
	// DeadLettered counts the changes the sink rejected for their value
	// and the run stored in the job's dead-letter table instead
	// (plan.SinkStage.DeadLetter).
	DeadLettered int64
}

// Pushdowner is a backend that can execute a whole plan inside its database
// when source and sink are both in it.
type Pushdowner interface {
	Backend
	// Pushdown compiles p to SQL; an error wrapping ErrNoPushdown means the
	// plan cannot run in the database and rows travel through sluice.
	Pushdown(ctx context.Context, p *plan.Plan, s *StreamInfo) (PushdownPlan, error)
}

// PushdownPlan is a compiled pushdown.
type PushdownPlan interface {
	Steps() []plan.Step
	// Run executes the read, the write and the offset advance in one
	// transaction and returns the new offset.
	Run(ctx context.Context, job string) (Stats, cdc.Offset, cdc.Offset, error)
}

// SteppedPushdown is a PushdownPlan that may commit a run in bounded steps
// instead of one transaction, each step consuming a slice of the stream's
// changes and committing the rows with the checkpoint and offset at the
// step's end (exactly-once holds per step); it does so only where that
// gives the same target as one transaction (see the backend's Pushdown).
type SteppedPushdown interface {
	PushdownPlan
	// SetCommitStep sets how long a step aims to hold the write lock; a
	// negative d runs the whole run in one transaction. It reports whether
	// runs will commit in steps. Call before Steps and Run.
	SetCommitStep(d time.Duration) bool
}

// Snapshotter is a Source that can read a consistent copy of a stream's
// table for `sluice backfill` (Runner.Backfill).
type Snapshotter interface {
	// Snapshot opens one long read transaction on info's table and fixes the
	// stream position its contents are consistent with. from is the offset
	// the job would read the stream from (its checkpoint or the stream's
	// offset; on a resumed backfill the previous snapshot's offset): the
	// snapshot's Offset is a read point after it, and Catchup reads the
	// changes between the two. Errors: a table without a primary key, a
	// stream whose table changed since info was read.
	Snapshot(ctx context.Context, info *StreamInfo, from cdc.Offset) (SnapshotReader, error)
}

// SnapshotReader reads the table as of one snapshot, in primary-key order.
// Every method runs in the snapshot's transaction; it is not safe for
// concurrent use.
type SnapshotReader interface {
	// Offset is the stream position the snapshot is consistent with: the
	// read point a stream read from `from` would produce at this snapshot.
	Offset() cdc.Offset
	// Count returns the number of rows in the snapshot.
	Count(ctx context.Context) (int64, error)
	// Chunk returns at most n rows with a primary key after `after` (nil:
	// from the start), in primary-key order, as OpInsert changes whose Row
	// is aligned with StreamInfo.TableSchema (canonical values). An empty
	// result means the end of the table.
	Chunk(ctx context.Context, after []any, n int) ([]cdc.Change, error)
	// Catchup reads the stream's changes in (from, Offset()] whose primary
	// key is at or before upTo (the key order Chunk uses), as a stream read
	// returns them; ReadPoint is Offset(). Closing the reader leaves the
	// snapshot open.
	Catchup(ctx context.Context, upTo []any, opt ReadOptions) (ChangeReader, error)
	// Steps describes the statements of the snapshot, for --dry-run.
	Steps() []plan.Step
	// Close ends the read transaction.
	Close() error
}

// ValueTexter is a Backend whose database has its own text form of values
// (PostgreSQL's output functions): `sluice sql` and `sluice preview` print
// result sets with it. Backends without it print cdc.FormatValue.
type ValueTexter interface {
	Backend
	// ValueText returns a function rendering a canonical value (package
	// cdc) of logical type t, as this backend reads it, in the database's
	// own text form under the session's settings. NULL (nil) renders as
	// "NULL". The function is safe for concurrent use.
	ValueText(ctx context.Context) (func(v any, t cdc.Type) string, error)
}
