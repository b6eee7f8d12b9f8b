package serve

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/redact"
	"github.com/sluicedata/sluice/runner"
)

// RunsTable is the run history table: sluice_runs in SQLite, and
// sluice.sluice_runs (schema sluice, like sluice's other tables) in
// PostgreSQL.
const RunsTable = "sluice_runs"

// Status is the outcome of a recorded run.
type Status string

// The outcomes of a run.
const (
	// StatusCommitted: the sink rows and the new offset were committed.
	StatusCommitted Status = "committed"
	// StatusSkipped: the run consumed nothing on purpose (mode ignore with
	// an existing target, a stdout sink); Run.Skipped says why.
	StatusSkipped Status = "skipped"
	// StatusTransient: failed with a transient error; the server retries.
	StatusTransient Status = "transient"
	// StatusFailed: failed permanently; the server stopped the job.
	StatusFailed Status = "failed"
	// StatusCancelled: cancelled (shutdown after the grace period); nothing
	// was committed.
	StatusCancelled Status = "cancelled"
	// StatusError: a one-off run (sluice run) failed; nothing was
	// committed and nothing retries it: the next run tries again from the
	// same offset. Run.Error says why. serve never records it.
	StatusError Status = "error"
	// StatusEmpty: a committed run that found nothing pending (nothing
	// read, offset unchanged; empty.go). Never in the history: only the
	// last_run of /healthz and status shows it, as
	// sluice_runs_total{result="empty"} counts it.
	StatusEmpty Status = "empty"
)

// Run is one recorded run of a job, a row of the run history.
type Run struct {
	ID      int64     // assigned by the history; 0 before Record
	Job     string    // job name
	Node    string    // the server that ran it (Config.Node)
	Start   time.Time // UTC
	End     time.Time // UTC
	Status  Status
	Read    map[cdc.Op]int64 // changes read from the stream, by change type
	Written map[cdc.Op]int64 // rows applied at the sink, by change type
	// DeadLettered counts the rows the sink rejected and the run stored
	// in the job's dead-letter table (runner.Stats.DeadLettered).
	DeadLettered int64
	From         cdc.Offset // offset the run read from (zero if it failed before)
	To           cdc.Offset // offset after the run (zero unless committed)
	Error        string     // the error, "" when it succeeded
	Skipped      string     // why nothing was consumed (StatusSkipped)
	Note         string     // a remark on a committed run: it accepted a new stream incarnation (runner.Stats.Note); "" for none
	RetryAt      time.Time  // StatusTransient: when the server retries (UTC); zero otherwise
}

// Duration is End − Start.
func (r *Run) Duration() time.Duration { return r.End.Sub(r.Start) }

// Rows returns the total of a by-change-type count.
func Rows(m map[cdc.Op]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// History stores the run history. Implementations are safe for concurrent
// use.
type History interface {
	// Record appends a run and returns its ID.
	Record(ctx context.Context, r *Run) (int64, error)
	// List returns the newest runs first, at most limit (<= 0: 50), of job,
	// or of every job when job is "".
	List(ctx context.Context, job string, limit int) ([]Run, error)
}

// Store is a database that holds the run history and the job locks of one
// or more servers: the database they share.
type Store interface {
	History
	Locker
	// Close releases the store's connections (held locks are released).
	Close() error
}

// StoreOptions tune OpenStore.
type StoreOptions struct {
	// Node identifies this process in lock rows and history; "" → host:pid.
	Node string
	// Lease is how long a SQLite lock stays claimed without a heartbeat
	// (a crashed server's jobs are free again after it); 0 → 30s.
	// PostgreSQL advisory locks need no lease: they die with the session.
	Lease time.Duration
	// Clock for lease times; nil → SystemClock.
	Clock Clock
	// Log receives lock and history warnings; nil discards them.
	Log *slog.Logger
	// MustExist makes opening a SQLite store whose file does not exist an
	// error (wrapping sqlitex.ErrNoDatabase) instead of creating it: for
	// readers (status, history).
	MustExist bool
}

// OpenStore opens the run history and job locks in the database of a
// connection URL (already ${ENV}-expanded): "sqlite:PATH" (the tables
// sluice_runs and sluice_locks) or a PostgreSQL URL/DSN (sluice.sluice_runs
// and advisory locks), creating the tables if needed. It returns an error
// wrapping ErrUnknownHistory for other schemes and the database's error if
// it cannot connect.
func OpenStore(ctx context.Context, url string, opt StoreOptions) (Store, error) {
	switch runner.Scheme(url) {
	case "sqlite":
		return OpenSQLiteStore(ctx, url, opt)
	case "postgres", "postgresql":
		return OpenPGStore(ctx, url, opt)
	}
	return nil, &runner.ConnError{Err: fmt.Errorf("%w: %s (want sqlite: or postgres://)", ErrUnknownHistory, redact.Conn(url))}
}

// opColumns are the per-change-type count columns of the history tables,
// in cdc.Op order (INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE).
var opColumns = []cdc.Op{cdc.OpInsert, cdc.OpUpdateBefore, cdc.OpUpdateAfter, cdc.OpDelete}

func opColumn(prefix string, op cdc.Op) string {
	return prefix + "_" + strings.ToLower(op.String())
}

// countArgs flattens a count map in opColumns order.
func countArgs(m map[cdc.Op]int64) []any {
	out := make([]any, len(opColumns))
	for i, op := range opColumns {
		out[i] = m[op]
	}
	return out
}

// countMap builds a count map from values in opColumns order, omitting
// zeros.
func countMap(vals []int64) map[cdc.Op]int64 {
	m := map[cdc.Op]int64{}
	for i, op := range opColumns {
		if vals[i] != 0 {
			m[op] = vals[i]
		}
	}
	return m
}

func encodeOffset(o cdc.Offset) string {
	if o.IsZero() {
		return ""
	}
	return o.Encode()
}

func defaultLimit(n int) int {
	if n <= 0 {
		return 50
	}
	return n
}

func decodeOffset(s string) (cdc.Offset, error) {
	o, err := cdc.DecodeOffset(s)
	if err != nil {
		return cdc.Offset{}, fmt.Errorf("run history offset %q: %w", s, err)
	}
	return o, nil
}
