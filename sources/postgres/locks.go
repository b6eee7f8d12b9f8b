package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/internal/redact"
)

// Switching capture on and off creates, enables or drops triggers on the
// application's table: the first CREATE TABLE STREAM on a table takes
// SHARE ROW EXCLUSIVE on it (CREATE TRIGGER and ALTER TABLE … ENABLE
// TRIGGER need it: it waits for the application's writing transactions on
// the table to end and lets readers through), DROP TABLE STREAM of its
// last stream, disabling tracking and enabling it again while triggers
// are on take ACCESS EXCLUSIVE (DROP TRIGGER needs it), and enabling
// tracking on a table without triggers or streams takes ACCESS SHARE
// (it only reads the table's definition). A session waiting for such a
// lock makes every later conflicting statement on the table queue behind
// it, so the wait is bounded: each attempt runs with
// lock_timeout = lockAttempt, and the table is locked first, before
// anything else of the transaction takes a lock an application's
// statement could need (the change log, which the capture writes), so the
// application's transaction never waits for the enabling one while the
// enabling one waits for it — no deadlock. A refused attempt rolls back,
// logs who holds the table, and tries again after a backoff
// (lockBackoffMin doubling up to lockBackoffMax) until LockWait has passed.

const (
	// lockAttempt is the lock_timeout of one attempt: the longest an
	// application's statement waits behind a queued enable.
	lockAttempt = 500 * time.Millisecond
	// DefaultLockWait is Backend.LockWait's default.
	DefaultLockWait = 30 * time.Second

	lockBackoffMin = 100 * time.Millisecond
	lockBackoffMax = 2 * time.Second
)

// lockNotAvailable is SQLSTATE 55P03, lock_timeout expired.
const lockNotAvailable = "55P03"

// LockTimeoutError is enabling or disabling change tracking, or creating
// or dropping a table stream that switches capture on or off, that did
// not get its lock on the table within the backend's LockWait. It wraps
// ErrLockTimeout; its text names the sessions that held the table
// (Holders) and says that nothing was changed.
type LockTimeoutError struct {
	Action  string        // "enable change tracking", "create table stream s", …
	Table   string        // the table, quoted
	Mode    string        // the lock it waited for, e.g. "ACCESS EXCLUSIVE"
	Waited  time.Duration // how long the attempts took in all
	Holders []string      // the sessions holding a lock on the table, described (lockHolders)
}

func (e *LockTimeoutError) Error() string {
	who := "another sluice session enabling or disabling change tracking (sluice's tracking lock)"
	if len(e.Holders) > 0 {
		who = strings.Join(e.Holders, "; ")
	}
	mode := e.Mode
	if mode == "" {
		mode = accessExclusive
	}
	return fmt.Sprintf("%v: %s on %s waited %s in all (attempts of %s each, letting the application's statements through in between) for %s on the table, held by: %s. Nothing was changed. Run it again when that transaction has ended (commit or roll it back; SELECT pg_terminate_backend(pid) ends a session)",
		ErrLockTimeout, e.Action, e.Table, e.Waited.Round(time.Millisecond), lockAttempt, mode, who)
}

func (e *LockTimeoutError) Unwrap() error { return ErrLockTimeout }

func (b *Backend) lockWait() time.Duration {
	if b.LockWait > 0 {
		return b.LockWait
	}
	return DefaultLockWait
}

// Lock modes of the application's table (PostgreSQL's names).
const (
	accessExclusive = "ACCESS EXCLUSIVE"    // DROP TRIGGER
	shareRowExcl    = "SHARE ROW EXCLUSIVE" // CREATE TRIGGER, ALTER TABLE … ENABLE TRIGGER
	accessShare     = "ACCESS SHARE"        // reading the table's definition
)

// tableLock is what a lock function of withTableLock took: the table's
// oid (0: none found, nothing locked) and the mode.
type tableLock struct {
	relid uint32
	mode  string
	table string // the table's name for messages, when not the one withTableLock was given
}

// withTableLock runs fn in a transaction that first takes sluice's
// tracking lock and then the lock that lock takes on the application's
// table (table is its name as the user gave it, for messages), each
// under lock_timeout = lockAttempt, retrying the whole transaction while
// a lock is refused, until LockWait. fn runs after the locks, in the same
// transaction. action names the operation in messages.
func (b *Backend) withTableLock(ctx context.Context, action, table string, lock func(ctx context.Context, tx pgx.Tx) (tableLock, error), fn func(tx pgx.Tx) error) error {
	start := time.Now()
	delay := lockBackoffMin
	for attempt := 1; ; attempt++ {
		var got tableLock
		err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = '%dms'`, lockAttempt.Milliseconds())); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('sluice.tracking'))`); err != nil {
				return err
			}
			var err error
			if got, err = lock(ctx, tx); err != nil {
				return err
			}
			// The DDL that follows waits for nothing the table's lock
			// does not already cover; a statement that still does gets
			// the same bound.
			return fn(tx)
		})
		if pgCode(err) != lockNotAvailable {
			return err
		}
		if got.table != "" {
			table = got.table
		}
		holders := b.lockHolders(ctx, got.relid, table)
		waited := time.Since(start)
		if waited+delay >= b.lockWait() {
			return &LockTimeoutError{Action: action, Table: table, Mode: got.mode, Waited: waited, Holders: holders}
		}
		b.log.Warn("waiting for a lock on the table; the application's statements go on meanwhile", "action", action, "table", table,
			"lock", got.mode, "attempt", attempt, "waited", waited.Round(time.Millisecond), "held_by", strings.Join(holders, "; "))
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, lockBackoffMax)
	}
}

// lockByName takes ACCESS EXCLUSIVE on the table named table (resolved
// like the user's statement: search_path) and returns its oid; 0 and no
// lock when there is no such table.
func lockByName(name string) func(ctx context.Context, tx pgx.Tx) (tableLock, error) {
	return func(ctx context.Context, tx pgx.Tx) (tableLock, error) {
		var relid *uint32
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1)::oid`, name).Scan(&relid); err != nil || relid == nil {
			return tableLock{mode: accessExclusive}, err
		}
		return tableLock{*relid, accessExclusive, ""}, lockOid(ctx, tx, *relid, accessExclusive)
	}
}

// lockOid takes mode (accessExclusive, shareRowExcl, accessShare) on the
// relation with oid relid, by its qualified name now; a relation that no
// longer exists is not locked.
func lockOid(ctx context.Context, tx pgx.Tx, relid uint32, mode string) error {
	var name string
	err := tx.QueryRow(ctx, `SELECT c.oid::regclass::text FROM pg_catalog.pg_class c WHERE c.oid = $1`, relid).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `LOCK TABLE `+name+` IN `+mode+` MODE`)
	return err
}

// lockHolders describes the other sessions that hold a lock on the
// relation relid (0: none found), oldest transaction first, at most five:
// pid, role, application, state, how long its transaction has been open
// and its current or last statement with its literals masked
// (redact.SQL). Best effort: an error yields what was read.
func (b *Backend) lockHolders(ctx context.Context, relid uint32, table string) []string {
	if relid == 0 {
		return nil
	}
	rows, err := b.pool.Query(ctx, `SELECT a.pid, coalesce(a.usename::text, ''), coalesce(a.application_name, ''), coalesce(a.state, ''),
			extract(epoch FROM now() - a.xact_start)::float8, coalesce(a.query, ''), string_agg(DISTINCT l.mode, ', ')
		FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'relation' AND l.relation = $1 AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
			AND l.granted AND l.pid <> pg_backend_pid()
		GROUP BY 1, 2, 3, 4, 5, 6, a.xact_start ORDER BY a.xact_start NULLS LAST LIMIT 5`, relid)
	if err != nil {
		b.log.Debug("list the sessions holding a lock", "table", table, "err", err)
		return nil
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var pid int32
		var user, app, state, query, modes string
		var age *float64 // NULL: not visible to this role (another role's session, no pg_read_all_stats)
		if err := rows.Scan(&pid, &user, &app, &state, &age, &query, &modes); err != nil {
			return out
		}
		s := fmt.Sprintf("pid %d (role %s", pid, user)
		if app != "" {
			s += ", application " + app
		}
		if state != "" {
			s += ", " + state
		}
		if age == nil {
			s += fmt.Sprintf(", holding %s; its state, transaction age and statement are not visible to this role: a superuser or a member of pg_read_all_stats sees them)", modes)
		} else {
			s += fmt.Sprintf(", transaction open %s, holding %s; statement: %s)", (time.Duration(*age * float64(time.Second))).Round(time.Second), modes, redact.SQL(query))
		}
		out = append(out, s)
	}
	return out
}
