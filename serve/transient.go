package serve

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"math"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

	"github.com/sluicedata/sluice/runner"
)

// SQLite primary result codes that mean "try again" (extended codes carry
// them in their low byte): the database file or its file system is busy,
// read-only, full or failing, which an operator fixes without touching the
// job (https://sqlite.org/rescode.html).
const (
	sqliteBusy     = 5  // SQLITE_BUSY
	sqliteLocked   = 6  // SQLITE_LOCKED
	sqliteReadOnly = 8  // SQLITE_READONLY (file, directory or file system not writable)
	sqliteIOErr    = 10 // SQLITE_IOERR
	sqliteFull     = 13 // SQLITE_FULL (disk full)
	sqliteCantOpen = 14 // SQLITE_CANTOPEN
	sqliteProtocol = 15 // SQLITE_PROTOCOL (WAL lock race)
)

// transientSQLite reports whether a SQLite result code is worth retrying.
func transientSQLite(code int) bool {
	switch code & 0xff {
	case sqliteBusy, sqliteLocked, sqliteReadOnly, sqliteIOErr, sqliteFull, sqliteCantOpen, sqliteProtocol:
		return true
	}
	return false
}

// IsTransient reports whether err is worth retrying unchanged: the
// database went away or was busy, not the job being wrong. It is true for
//
//   - PostgreSQL SQLSTATEs 40001 (serialization failure), 40P01
//     (deadlock), class 08 (connection exception), class 28 (invalid
//     authorization: a wrong password or a role without LOGIN, fixed by an
//     operator), 53000/53100/53200/53300 (insufficient resources, disk
//     full, too many connections), 55P03 (lock not available), 57P01–57P03
//     (admin/crash shutdown, cannot connect now), 57014 (statement
//     timeout/cancel by the server) and 58000/58030 (system and I/O
//     errors);
//   - every failed connect (*pgconn.ConnectError, whatever the server
//     answered: a server that is restarting, a password not yet granted);
//   - pgconn errors that are SafeToRetry or timeouts;
//   - SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_IOERR,
//     SQLITE_FULL, SQLITE_CANTOPEN and SQLITE_PROTOCOL (including extended
//     codes): the file is busy, read-only, on a full disk or failing;
//   - network errors (net.Error, connection refused/reset, broken pipe,
//     unexpected EOF), driver.ErrBadConn and sql.ErrConnDone;
//   - context.DeadlineExceeded (an I/O timeout, not a shutdown);
//   - runner.ErrOffsetMoved (another run moved the stream concurrently);
//   - a refusal because of a schema change (runner.ErrSourceSchema, a
//     backend's: capture to re-install, tracking to enable again;
//     runner.ErrSchemaChanged, on_schema_change: fail until the target is
//     altered; runner.ErrPlanStale, DDL racing the run): nothing was
//     written, and the job goes on by itself once its user has acted;
//   - any error in the chain with a method Transient() bool returning true
//     (backends can classify their own errors).
//
// It is false for nil, context.Canceled (shutdown: not retried) and
// everything else — type mismatches, missing tables or columns, bad
// expressions — which stop the job as permanent failures.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var tr interface{ Transient() bool }
	if errors.As(err, &tr) {
		return tr.Transient()
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	// A refusal because of a schema change is retried whatever database
	// error it wraps (a DDL racing with a run can fail it with any
	// SQLSTATE): the next attempt plans again, or goes on once the user
	// has acted.
	if errors.Is(err, runner.ErrSourceSchema) || errors.Is(err, runner.ErrSchemaChanged) || errors.Is(err, runner.ErrPlanStale) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return transientSQLState(pgErr.Code)
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		return transientSQLite(sqErr.Code())
	}
	switch {
	case pgconn.SafeToRetry(err), pgconn.Timeout(err),
		errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, runner.ErrOffsetMoved),
		errors.Is(err, runner.ErrSourceSchema), errors.Is(err, runner.ErrSchemaChanged), errors.Is(err, runner.ErrPlanStale),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH):
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	// Drivers that flatten errors into text (modernc wraps some in
	// fmt.Errorf with %v).
	msg := err.Error()
	for _, text := range []string{"SQLITE_BUSY", "database is locked", "database table is locked",
		"SQLITE_FULL", "database or disk is full", "SQLITE_READONLY", "attempt to write a readonly database",
		"SQLITE_IOERR", "disk I/O error", "SQLITE_CANTOPEN", "unable to open database file"} {
		if strings.Contains(msg, text) {
			return true
		}
	}
	return false
}

// transientSQLState classifies a PostgreSQL SQLSTATE.
func transientSQLState(code string) bool {
	switch code {
	case "40001", "40P01", "53000", "53100", "53200", "53300", "55P03",
		"57P01", "57P02", "57P03", "57014", "58000", "58030":
		return true
	}
	return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "28")
}

// Backoff is an exponential backoff: attempt n (from 0) waits
// Min·Factor^n, capped at Max, with a random Jitter fraction taken off:
// the wait is uniformly distributed in [d·(1−Jitter), d]. The zero values
// of Factor and Jitter mean 2 and none.
type Backoff struct {
	Min, Max time.Duration
	Factor   float64
	Jitter   float64 // 0 ≤ Jitter ≤ 1
}

// DefaultRetryBackoff is the wait between retries of transient failures:
// 1s, 2s, 4s … capped at 1m, with up to half of it randomly taken off so
// that servers that failed together do not retry together.
func DefaultRetryBackoff() Backoff {
	return Backoff{Min: time.Second, Max: time.Minute, Factor: 2, Jitter: 0.5}
}

// WakerIdlePoll is the longest wait between polls of an idle continuous job
// that has a Waker (PostgreSQL LISTEN/NOTIFY): changes wake it, and the
// poll only guards against a lost connection.
const WakerIdlePoll = time.Minute

// DefaultIdleBackoff is how long an idle continuous job waits before it
// polls again: 100ms doubling to 5s (to WakerIdlePoll with a Waker), reset
// by a run that moved rows.
func DefaultIdleBackoff() Backoff {
	return Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second, Factor: 2}
}

// Delay returns the wait before attempt n (0-based). rnd returns a uniform
// number in [0, 1) and is used only when Jitter > 0; nil means no jitter.
func (b Backoff) Delay(n int, rnd func() float64) time.Duration {
	f := b.Factor
	if f <= 1 {
		f = 2
	}
	d := float64(b.Min) * math.Pow(f, float64(max(n, 0)))
	if b.Max > 0 && (d > float64(b.Max) || math.IsInf(d, 0) || math.IsNaN(d)) {
		d = float64(b.Max)
	}
	if b.Jitter > 0 && rnd != nil {
		d -= d * min(b.Jitter, 1) * rnd()
	}
	return time.Duration(d)
}

// orDefault returns b, or def when b is zero.
func (b Backoff) orDefault(def Backoff) Backoff {
	if b.Min <= 0 {
		return def
	}
	return b
}
