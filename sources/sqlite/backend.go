package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"sync"

	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/internal/redact"
	"github.com/sluicedata/sluice/internal/rowhash"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
	sinksqlite "github.com/sluicedata/sluice/sinks/sqlite"
)

func init() {
	runner.Register(open, "sqlite")
	// The functions go on the driver before any connection of the process
	// opens: a connection sees only the functions registered before it
	// opened, and the process's connections to a file are shared
	// (sqlitex.OpenShared) — the run history or a job lock on the same
	// file may open them before the first Open here (the walkthrough's
	// orders.db is the state database too: 'no such function:
	// sluice_dec_same').
	if err := registerFunctions(); err != nil {
		panic(err)
	}
}

// Backend is an open SQLite database: a table-stream source (change capture
// by triggers, doc.go), a statement executor, a pushdown target and — by
// delegation to sinks/sqlite on the same connections — a sink. Its
// connections are the process's shared ones to the file
// (sqlitex.OpenShared: one writer, a bounded set of readers), whatever
// the number of Backends, jobs or URLs naming the file.
type Backend struct {
	// Sink provides runner.Sink (Target, PrepareSink) on the same connections.
	*sinksqlite.Sink

	db       *sqlitex.Handle
	loc      sqlitex.Location
	url      string
	identity string
	log      *slog.Logger

	// purged is, per change log, what purgeAll last left in it
	// (retention.go).
	purgeMu sync.Mutex
	purged  map[string]purged

	// facts keeps sqlite_schema's answers about captures per schema
	// version (statuscache.go).
	facts schemaFacts
}

// Interface checks.
var (
	_ runner.Backend   = (*Backend)(nil)
	_ runner.Executor  = (*Backend)(nil)
	_ runner.Source    = (*Backend)(nil)
	_ runner.Sink      = (*Backend)(nil)
	_ runner.LogKeeper = (*Backend)(nil)
)

func open(ctx context.Context, url string, log *slog.Logger) (runner.Backend, error) {
	return Open(ctx, url, log)
}

// Open opens the database of a sqlite: URL (sqlitex.ParseURL; a missing
// file is created, or under runner.MustExist(ctx) an error wrapping
// sqlitex.ErrNoDatabase) and creates sluice's catalog tables (sluice_tracking,
// sluice_streams) if they are missing. log may be nil.
func Open(ctx context.Context, url string, log *slog.Logger) (*Backend, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := registerFunctions(); err != nil {
		return nil, err
	}
	loc, err := sqlitex.ParseURL(url)
	if err != nil {
		return nil, &runner.ConnError{Err: err}
	}
	path := loc.Path
	if runner.MustExist(ctx) {
		if err := loc.MustExist(); err != nil {
			if !runner.StandIn(ctx) {
				return nil, err
			}
			// An empty in-memory stand-in for the database a run would
			// create (plan): nothing is written to disk.
			loc = sqlitex.Location{Path: ":memory:", Memory: true}
		}
	}
	db, err := sqlitex.OpenShared(ctx, loc)
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, catalogSQL); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: create catalog: %w", loc.Path, err)
	}
	if err := catalogUpgrade(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: upgrade catalog: %w", loc.Path, err)
	}
	b := &Backend{Sink: sinksqlite.New(db, log), db: db, loc: loc, url: url, identity: path, log: log}
	if loc.Memory && path == ":memory:" {
		b.identity = fmt.Sprintf(":memory:%p", b)
	}
	return b, nil
}

// registerFunctions registers expr's SQL functions (expr.SQLiteFunctions,
// which SQL rendered for SQLite calls) and sluice diff's row hashes
// (rowhash.Functions) on the driver, once per process.
func registerFunctions() error {
	fs := make([]sqlitex.Function, len(expr.SQLiteFunctions))
	for i, f := range expr.SQLiteFunctions {
		fs[i] = sqlitex.Function{Name: f.Name, NArgs: int32(f.NArgs), Fn: f.Func}
	}
	for _, f := range rowhash.Functions {
		fs = append(fs, sqlitex.Function{Name: f.Name, NArgs: int32(f.NArgs), Fn: f.Func})
	}
	if err := sqlitex.RegisterFunctions(fs); err != nil {
		return err
	}
	return sqlitex.RegisterAggregates([]sqlitex.Aggregate{{Name: rowhash.FuncBuckets, NArgs: -1, New: newBuckets}})
}

// DB is the database handle, shared with the sink (and with every other
// user of the file in the process: sqlitex.OpenShared).
func (b *Backend) DB() *sqlitex.Handle { return b.db }

// Scheme implements runner.Backend.
func (b *Backend) Scheme() string { return "sqlite" }

// Identity implements runner.Backend: the absolute file path (":memory:…"
// unique per Open for an in-memory database).
func (b *Backend) Identity() string { return b.identity }

// Redacted implements runner.Backend (a sqlite URL holds no password).
func (b *Backend) Redacted() string { return redact.Conn(b.url) }

// Close implements runner.Backend: it releases the Backend's reference to
// the file's shared connections (the last reference closes them).
func (b *Backend) Close() error { return b.db.Close() }

// bucketsState adapts rowhash.Buckets to sqlitex.AggregateState.
type bucketsState struct{ *rowhash.Buckets }

func newBuckets() sqlitex.AggregateState { return bucketsState{rowhash.NewBuckets()} }

func (b bucketsState) Final() (driver.Value, error) { return b.Buckets.Final(), nil }
