package serve

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/sluicedata/sluice/runner"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
)

// LocksTable is the SQLite table of job locks (one row per claimed job).
const LocksTable = "sluice_locks"

// DefaultLease is how long a SQLite job lock survives without a heartbeat.
const DefaultLease = 30 * time.Second

// timeLayout stores times as fixed-width UTC text, so they sort as text.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// SQLiteStore is the run history and job locks in a SQLite database.
//
// A lock is a row of sluice_locks claimed inside BEGIN IMMEDIATE (SQLite's
// write lock serializes the claim across processes) with a lease: the
// holder renews it every Lease/3 while the run lasts and deletes it when the
// run ends. A row whose lease expired (its server crashed) may be claimed
// again. Locks are not held as open transactions, so the job's own writes
// to the same database are not blocked.
type SQLiteStore struct {
	db    sqlitex.Pool
	own   bool // close db on Close (a *sqlitex.Handle: release it)
	node  string
	lease time.Duration
	clock Clock
	log   *slog.Logger
}

// OpenSQLiteStore opens the SQLite database of url ("sqlite:PATH") with
// sluice's pragmas (internal/sqlitex) and returns a store owning it. It
// uses the process's shared connections to the file (sqlitex.OpenShared:
// its one writer for the locks and run rows), so a --state that is also a
// job's source or sink adds no connection.
func OpenSQLiteStore(ctx context.Context, url string, opt StoreOptions) (*SQLiteStore, error) {
	loc, err := sqlitex.ParseURL(url)
	if err != nil {
		return nil, &runner.ConnError{Err: err}
	}
	if opt.MustExist {
		if err := loc.MustExist(); err != nil {
			return nil, err
		}
	}
	db, err := sqlitex.OpenShared(ctx, loc)
	if err != nil {
		return nil, err
	}
	s, err := NewSQLiteStore(ctx, db, opt)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.own = true
	return s, nil
}

// NewSQLiteStore returns a store on an open database (which it does not
// close), creating sluice_runs and sluice_locks if needed. db (a *sql.DB
// or *sqlitex.Handle) should have a busy timeout set, as sqlitex.Open does.
func NewSQLiteStore(ctx context.Context, db sqlitex.Pool, opt StoreOptions) (*SQLiteStore, error) {
	s := &SQLiteStore{db: db, node: nodeName(opt.Node), lease: opt.Lease, clock: opt.Clock, log: opt.Log}
	if s.lease <= 0 {
		s.lease = DefaultLease
	}
	if s.clock == nil {
		s.clock = SystemClock()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var cols strings.Builder
	for _, p := range []string{"read", "written"} {
		for _, op := range opColumns {
			fmt.Fprintf(&cols, "\t%s INTEGER NOT NULL DEFAULT 0,\n", opColumn(p, op))
		}
	}
	ddl := []string{
		`CREATE TABLE IF NOT EXISTS ` + RunsTable + ` (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	job TEXT NOT NULL,
	node TEXT NOT NULL DEFAULT '',
	started_at TEXT NOT NULL,
	ended_at TEXT NOT NULL,
	status TEXT NOT NULL,
` + cols.String() + `	from_offset TEXT NOT NULL DEFAULT '',
	to_offset TEXT NOT NULL DEFAULT '',
	error TEXT NOT NULL DEFAULT '',
	skipped TEXT NOT NULL DEFAULT '',
	note TEXT NOT NULL DEFAULT '',
	retry_at TEXT NOT NULL DEFAULT '',
	dead_lettered INTEGER NOT NULL DEFAULT 0
)`,
		`CREATE INDEX IF NOT EXISTS ` + RunsTable + `_job ON ` + RunsTable + ` (job, id)`,
		`CREATE TABLE IF NOT EXISTS ` + LocksTable + ` (
	job TEXT PRIMARY KEY,
	owner TEXT NOT NULL,
	acquired_at TEXT NOT NULL,
	expires_ms INTEGER NOT NULL,
	pid INTEGER NOT NULL DEFAULT 0,
	host TEXT NOT NULL DEFAULT '',
	pid_ns TEXT NOT NULL DEFAULT ''
)`,
	}
	for _, q := range ddl {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("create sluice history tables: %w", err)
		}
	}
	// Tables created before a column existed gain it.
	for _, c := range []struct{ table, col, def string }{
		{RunsTable, "retry_at", "TEXT NOT NULL DEFAULT ''"},
		{RunsTable, "note", "TEXT NOT NULL DEFAULT ''"},
		{RunsTable, "dead_lettered", "INTEGER NOT NULL DEFAULT 0"},
		{LocksTable, "pid", "INTEGER NOT NULL DEFAULT 0"},
		{LocksTable, "host", "TEXT NOT NULL DEFAULT ''"},
		{LocksTable, "pid_ns", "TEXT NOT NULL DEFAULT ''"},
	} {
		var has bool
		if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pragma_table_info('`+c.table+`') WHERE name = ?)`, c.col).Scan(&has); err != nil {
			return nil, fmt.Errorf("create sluice history tables: %w", err)
		}
		if !has {
			if _, err := db.ExecContext(ctx, `ALTER TABLE `+c.table+` ADD COLUMN `+c.col+` `+c.def); err != nil {
				return nil, fmt.Errorf("add %s to %s: %w", c.col, c.table, err)
			}
		}
	}
	return s, nil
}

// Close closes the database if the store opened it.
func (s *SQLiteStore) Close() error {
	if c, ok := s.db.(interface{ Close() error }); ok && s.own {
		return c.Close()
	}
	return nil
}

// Record appends r to sluice_runs.
func (s *SQLiteStore) Record(ctx context.Context, r *Run) (int64, error) {
	cols := []string{"job", "node", "started_at", "ended_at", "status"}
	args := []any{r.Job, r.Node, r.Start.UTC().Format(timeLayout), r.End.UTC().Format(timeLayout), string(r.Status)}
	for _, p := range []struct {
		name string
		m    map[cdc.Op]int64
	}{{"read", r.Read}, {"written", r.Written}} {
		for _, op := range opColumns {
			cols = append(cols, opColumn(p.name, op))
		}
		args = append(args, countArgs(p.m)...)
	}
	cols = append(cols, "from_offset", "to_offset", "error", "skipped", "note", "retry_at", "dead_lettered")
	retryAt := ""
	if !r.RetryAt.IsZero() {
		retryAt = r.RetryAt.UTC().Format(timeLayout)
	}
	args = append(args, encodeOffset(r.From), encodeOffset(r.To), r.Error, r.Skipped, r.Note, retryAt, r.DeadLettered)
	q := "INSERT INTO " + RunsTable + " (" + strings.Join(cols, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(cols)-1) + ")"
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("record run of %s: %w", r.Job, err)
	}
	return res.LastInsertId()
}

// List returns recorded runs, newest first.
func (s *SQLiteStore) List(ctx context.Context, job string, limit int) ([]Run, error) {
	q := "SELECT id, job, node, started_at, ended_at, status, " + countColumns() + ", from_offset, to_offset, error, skipped, note, retry_at, dead_lettered FROM " + RunsTable
	var args []any
	if job != "" {
		q += " WHERE job = ?"
		args = append(args, job)
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, defaultLimit(limit))
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var start, end, status, from, to, retryAt string
		counts := make([]int64, 2*len(opColumns))
		dest := []any{&r.ID, &r.Job, &r.Node, &start, &end, &status}
		for i := range counts {
			dest = append(dest, &counts[i])
		}
		dest = append(dest, &from, &to, &r.Error, &r.Skipped, &r.Note, &retryAt, &r.DeadLettered)
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		r.Status = Status(status)
		if retryAt != "" {
			r.RetryAt, _ = time.Parse(timeLayout, retryAt)
		}
		r.Start, _ = time.Parse(timeLayout, start)
		r.End, _ = time.Parse(timeLayout, end)
		r.Read, r.Written = countMap(counts[:len(opColumns)]), countMap(counts[len(opColumns):])
		if err := decodeOffsets(&r, from, to); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func countColumns() string {
	var cols []string
	for _, p := range []string{"read", "written"} {
		for _, op := range opColumns {
			cols = append(cols, opColumn(p, op))
		}
	}
	return strings.Join(cols, ", ")
}

// TryLock claims job's lock row for this process, storing this process's
// pid, host name and pid namespace and the time with it. ok is false, with
// no error, when another live holder has it. A holder is live while its
// lease lasts, except that a holder on this host (same host name and pid
// namespace) whose process is gone (killed) is not: its row is taken over
// at once. The returned unlock releases it (idempotent). While held, a
// heartbeat renews the lease every Lease/3; a renewal that finds the row
// taken over (the lease expired, e.g. the process was suspended for longer
// than Lease) is logged as an error.
func (s *SQLiteStore) TryLock(ctx context.Context, job string) (unlock func(), ok bool, err error) {
	owner := s.node + "/" + randomToken()
	me := thisProcess()
	now := s.clock.Now()
	ok, err = s.withImmediate(ctx, func(conn *sql.Conn) (bool, error) {
		var holder, host, pidNS string
		var expires int64
		var pid int
		err := conn.QueryRowContext(ctx, "SELECT owner, expires_ms, pid, host, pid_ns FROM "+LocksTable+" WHERE job = ?", job).Scan(&holder, &expires, &pid, &host, &pidNS)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return false, err
		case expires > now.UnixMilli() && host == me.host && pidNS == me.pidNS && processGone(pid):
			s.log.Warn("taking over the job lock of a process that is gone", "job", job, "previous_owner", holder, "pid", pid)
		case expires > now.UnixMilli():
			return false, nil
		default:
			s.log.Warn("taking over an expired job lock", "job", job, "previous_owner", holder)
		}
		_, err = conn.ExecContext(ctx, "INSERT INTO "+LocksTable+" (job, owner, acquired_at, expires_ms, pid, host, pid_ns) VALUES (?, ?, ?, ?, ?, ?, ?) "+
			"ON CONFLICT (job) DO UPDATE SET owner = excluded.owner, acquired_at = excluded.acquired_at, expires_ms = excluded.expires_ms, "+
			"pid = excluded.pid, host = excluded.host, pid_ns = excluded.pid_ns",
			job, owner, now.UTC().Format(timeLayout), now.Add(s.lease).UnixMilli(), me.pid, me.host, me.pidNS)
		return err == nil, err
	})
	if err != nil || !ok {
		return nil, false, err
	}
	hbCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go s.heartbeat(hbCtx, job, owner, done)
	var once sync.Once
	return func() {
		once.Do(func() {
			stop()
			<-done
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if _, err := s.db.ExecContext(dctx, "DELETE FROM "+LocksTable+" WHERE job = ? AND owner = ?", job, owner); err != nil {
				s.log.Warn("releasing job lock failed; it expires with its lease", "job", job, "err", err)
			}
		})
	}, true, nil
}

// Holder returns the holder of job's lock as its row records it; ok is
// false when there is no row or its lease has expired.
func (s *SQLiteStore) Holder(ctx context.Context, job string) (h Holder, ok bool, err error) {
	var since string
	err = s.db.QueryRowContext(ctx, "SELECT pid, host, acquired_at FROM "+LocksTable+" WHERE job = ? AND expires_ms > ?",
		job, s.clock.Now().UnixMilli()).Scan(&h.PID, &h.Host, &since)
	if errors.Is(err, sql.ErrNoRows) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, fmt.Errorf("job lock: %w", err)
	}
	h.Since, _ = time.Parse(timeLayout, since)
	return h, true, nil
}

// heartbeat renews a held lease until ctx is cancelled.
func (s *SQLiteStore) heartbeat(ctx context.Context, job, owner string, done chan<- struct{}) {
	defer close(done)
	for {
		t := s.clock.NewTimer(s.lease / 3)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		res, err := s.db.ExecContext(ctx, "UPDATE "+LocksTable+" SET expires_ms = ? WHERE job = ? AND owner = ?",
			s.clock.Now().Add(s.lease).UnixMilli(), job, owner)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("renewing job lock failed", "job", job, "err", err)
			}
			continue
		}
		if n, _ := res.RowsAffected(); n == 0 {
			s.log.Error("job lock lost: its lease expired and another server took it; the job may run twice", "job", job)
			return
		}
	}
}

// withImmediate runs fn inside BEGIN IMMEDIATE on one connection and
// commits when fn returns true, else rolls back.
func (s *SQLiteStore) withImmediate(ctx context.Context, fn func(*sql.Conn) (bool, error)) (ok bool, err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("job lock: %w", err)
	}
	defer conn.Close()
	if err := sqlitex.Begin(ctx, conn); err != nil {
		if sqlitex.IsBusy(err) {
			return false, fmt.Errorf("job lock: the database's write lock is held by another connection (an open write transaction of an application?) for longer than %s; nothing was changed: %w", sqlitex.BusyTimeout, err)
		}
		return false, fmt.Errorf("job lock: %w", err)
	}
	finish := func(stmt string) error {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, err := conn.ExecContext(fctx, stmt)
		if err != nil {
			// Never hand a connection inside a transaction back to the pool.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		return err
	}
	ok, err = fn(conn)
	if err != nil || !ok {
		_ = finish("ROLLBACK")
		if err != nil {
			return false, fmt.Errorf("job lock: %w", err)
		}
		return false, nil
	}
	if err := finish("COMMIT"); err != nil {
		return false, fmt.Errorf("job lock: %w", err)
	}
	return true, nil
}

// nodeName returns name or host:pid.
func nodeName(name string) string {
	if name != "" {
		return name
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

func randomToken() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
