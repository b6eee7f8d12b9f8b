package sqlitex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultReaders is how many read connections a process keeps at most to
// one database file (Handle): reads beyond them wait for one to be free.
// One: every connection holds the file's parsed schema (57 MB at 1,000
// tracked tables, docs/benchmarks.md), and at 1,000 jobs on one file two
// readers delivered no faster than one (issue #19). So a caller that holds a read
// (BeginTx, ReadConn, open *sql.Rows) does its other reads of the file
// through what it holds, never through the Handle again: that read would
// wait for the caller itself.
const DefaultReaders = 1

// Pool is what sluice's SQLite code needs of a database handle: *sql.DB
// and *Handle have it. QueryContext, QueryRowContext and BeginTx read;
// ExecContext and Conn write (on a *Handle: on its one write connection).
type Pool interface {
	Querier
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
	Conn(ctx context.Context) (*sql.Conn, error)
}

// Handle is a process's one set of connections to a database file (issue
// #19): one write connection and at most DefaultReaders read
// connections, shared by everything in the process that opens the file
// with OpenShared (the jobs' sources and sinks, the run history, the
// change watcher). Every connection parses the file's whole schema and
// keeps it (tens of MB at 1,000 tracked tables), so their number, not the
// number of jobs, sets the memory a process needs per file.
//
// Writes wait for the write connection in the process (first come, first
// served) instead of polling SQLite's lock with its busy handler; reads
// run on the read connections, in WAL mode never blocked by the writer,
// and wait for one in turn: a long read (a backfill's snapshot, the first
// read of a large SHOW_INITIAL_ROWS stream) makes the process's other
// reads of the file wait until it ends.
// Callers that hold the write connection (Conn, a Tx) must not ask for it
// again before they release it: the second request fails after
// BusyTimeout with an error wrapping ErrWriterBusy, as a second
// connection's BEGIN IMMEDIATE failed with SQLITE_BUSY.
//
// A Handle is safe for concurrent use. Close releases the caller's
// reference; the connections close with the last one.
type Handle struct {
	path string
	key  string // registry key; "" for an in-memory database (never shared)
	w    *sql.DB
	r    *sql.DB
	refs int // guarded by shared.mu
}

// ErrWriterBusy is a write that waited BusyTimeout for the process's write
// connection to a database file (Handle.Conn): another transaction of
// the process held it all that time.
var ErrWriterBusy = errors.New("database is locked: the write connection stayed busy")

// WriterBusyError is ErrWriterBusy naming the file and the wait. It is
// transient (Transient): the holder ends its transaction in time.
type WriterBusyError struct {
	Path   string
	Waited time.Duration
}

func (e *WriterBusyError) Error() string {
	return fmt.Sprintf("%s: %v waited for by a write (%v)", e.Path, e.Waited.Round(time.Millisecond), ErrWriterBusy)
}

// Unwrap returns ErrWriterBusy.
func (e *WriterBusyError) Unwrap() error { return ErrWriterBusy }

// Transient reports true: the write can be tried again.
func (e *WriterBusyError) Transient() bool { return true }

var shared struct {
	mu sync.Mutex
	m  map[string]*Handle // by absolute path
}

// OpenShared returns the process's Handle on loc's file, opening its
// connections (as Open does) on first use; each call adds a reference
// that Close releases. An in-memory location gets a Handle of its own
// (one private database per call, as Open).
func OpenShared(ctx context.Context, loc Location) (*Handle, error) {
	if loc.Memory {
		return openHandle(ctx, loc, "")
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if h, ok := shared.m[loc.Path]; ok {
		h.refs++
		return h, nil
	}
	h, err := openHandle(ctx, loc, loc.Path)
	if err != nil {
		return nil, err
	}
	if shared.m == nil {
		shared.m = map[string]*Handle{}
	}
	shared.m[loc.Path] = h
	return h, nil
}

func openHandle(ctx context.Context, loc Location, key string) (*Handle, error) {
	w, r, err := openPair(ctx, loc)
	if err != nil {
		return nil, err
	}
	// Connections are opened on demand; at most one writes and at most
	// DefaultReaders read. Idle ones are kept (each new one parses the
	// schema again) for ConnMaxLifetime, as Open's.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	r.SetMaxOpenConns(DefaultReaders)
	r.SetMaxIdleConns(DefaultReaders)
	return &Handle{path: loc.Path, key: key, w: w, r: r, refs: 1}, nil
}

// Path is the file's absolute path (":memory:" for an in-memory database).
func (h *Handle) Path() string { return h.path }

// Close releases one reference; the last closes the connections.
func (h *Handle) Close() error {
	if h.key != "" {
		shared.mu.Lock()
		h.refs--
		last := h.refs == 0
		if last {
			delete(shared.m, h.key)
		}
		shared.mu.Unlock()
		if !last {
			return nil
		}
	}
	return errors.Join(h.r.Close(), h.w.Close())
}

// QueryContext runs a query on a read connection.
func (h *Handle) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return h.r.QueryContext(ctx, q, args...)
}

// QueryRowContext runs a query on a read connection.
func (h *Handle) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return h.r.QueryRowContext(ctx, q, args...)
}

// BeginTx begins a transaction on a read connection (it must not write:
// writes go through Conn, ExecContext or WithImmediate).
func (h *Handle) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	return h.r.BeginTx(ctx, opts)
}

// ReadConn returns a read connection for the caller's use until it
// closes it (temporary objects, several reads in order).
func (h *Handle) ReadConn(ctx context.Context) (*sql.Conn, error) {
	return h.r.Conn(ctx)
}

// Conn returns the write connection, waiting for it while another caller
// holds it: at most BusyTimeout, then an error wrapping ErrWriterBusy
// (*WriterBusyError), or until ctx ends. The caller closes the *sql.Conn
// to hand it on.
func (h *Handle) Conn(ctx context.Context) (*sql.Conn, error) {
	wctx, cancel := context.WithTimeout(ctx, BusyTimeout)
	defer cancel()
	start := time.Now()
	c, err := h.w.Conn(wctx)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, &WriterBusyError{Path: h.path, Waited: time.Since(start)}
	}
	return c, err
}

// ExecContext runs a statement on the write connection (Conn's wait).
func (h *Handle) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	c, err := h.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	res, err := c.ExecContext(ctx, q, args...)
	DiscardIfCannotWrite(c, err)
	return res, err
}

// Stats reports the write and read pools' database/sql statistics.
func (h *Handle) Stats() (write, read sql.DBStats) { return h.w.Stats(), h.r.Stats() }

// SetReaders sets how many read connections the Handle keeps at most (n
// ≥ 1; DefaultReaders when it opened), for every user of the file in the
// process.
func (h *Handle) SetReaders(n int) {
	n = max(n, 1)
	h.r.SetMaxOpenConns(n)
	h.r.SetMaxIdleConns(n)
}
