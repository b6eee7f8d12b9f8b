package serve

import (
	"context"
	"errors"
	"fmt"
	"github.com/sluicedata/sluice/runner"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicedata/sluice/internal/redact"
)

// PGSchema is the PostgreSQL schema of sluice's own tables.
const PGSchema = "sluice"

// pgLockClass is the first key of sluice's two-key advisory locks
// ('sluc'), so that they do not collide with other applications' locks.
// The second key is hashtext(job name); two job names with the same hash
// merely never run at the same time.
const pgLockClass = 0x736c7563

// pgLockPing is how often a held advisory lock's session is checked.
const pgLockPing = 10 * time.Second

// PGStore is the run history (sluice.sluice_runs) and job locks of a
// PostgreSQL database. A lock is a session advisory lock,
// pg_try_advisory_lock('sluc', hashtext(job)), held for the whole run on
// the store's one lock session (pglock.go), shared by every job of the
// process; if the process dies the session ends and the server releases
// its locks.
type PGStore struct {
	pool *pgxpool.Pool
	own  bool
	cfg  *pgx.ConnConfig
	node string
	log  *slog.Logger

	base  context.Context // for cleanup in Close: values of the opening ctx, never cancelled
	locks pgLockSession
}

// OpenPGStore connects to url (a postgres:// URL or key=value DSN) and
// returns a store owning the pool.
//
// A URL whose password a URL parser would read differently from the text
// up to the last '@' (redact.Ambiguous: a raw '@', '/', '#', … in it) is
// refused with a hint before any connection, as the sources refuse it:
// pgx would otherwise resolve part of the password as a host name and
// quote it in its error. Errors hold neither url nor its secrets.
func OpenPGStore(ctx context.Context, url string, opt StoreOptions) (*PGStore, error) {
	if hint := redact.Ambiguous(url); hint != "" {
		return nil, &runner.ConnError{Err: fmt.Errorf("open run history %s: %s", redact.Conn(url), hint)}
	}
	// pgxpool.New parses the URL and connects lazily: an error here is the
	// URL's, a usage error (runner.ConnError, exit 2), as for a source's
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, &runner.ConnError{Err: fmt.Errorf("open run history %s: %w", redact.Conn(url), redact.Error(err, url))}
	}
	s, err := NewPGStore(ctx, pool, opt)
	if err != nil {
		pool.Close()
		return nil, redact.Error(err, url)
	}
	s.own = true
	return s, nil
}

// NewPGStore returns a store on pool (which it does not close), creating
// schema sluice and its table sluice_runs if needed. Locks use dedicated
// connections with the pool's connection settings.
func NewPGStore(ctx context.Context, pool *pgxpool.Pool, opt StoreOptions) (*PGStore, error) {
	s := &PGStore{pool: pool, cfg: pool.Config().ConnConfig, node: nodeName(opt.Node), log: opt.Log, base: context.WithoutCancel(ctx)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var cols strings.Builder
	for _, p := range []string{"read", "written"} {
		for _, op := range opColumns {
			fmt.Fprintf(&cols, "\t%s bigint NOT NULL DEFAULT 0,\n", opColumn(p, op))
		}
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, err // a failed connect says what it tried
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// Serialize concurrent first starts: CREATE … IF NOT EXISTS races.
	ddl := []string{
		fmt.Sprintf("SELECT pg_advisory_xact_lock(%d, 0)", pgLockClass),
		"CREATE SCHEMA IF NOT EXISTS " + PGSchema,
		`CREATE TABLE IF NOT EXISTS ` + pgRuns + ` (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	job text NOT NULL,
	node text NOT NULL DEFAULT '',
	started_at timestamptz NOT NULL,
	ended_at timestamptz NOT NULL,
	status text NOT NULL,
` + cols.String() + `	from_offset text NOT NULL DEFAULT '',
	to_offset text NOT NULL DEFAULT '',
	error text NOT NULL DEFAULT '',
	skipped text NOT NULL DEFAULT '',
	note text NOT NULL DEFAULT '',
	retry_at timestamptz
)`,
		"ALTER TABLE " + pgRuns + " ADD COLUMN IF NOT EXISTS retry_at timestamptz",
		"ALTER TABLE " + pgRuns + " ADD COLUMN IF NOT EXISTS note text NOT NULL DEFAULT ''",
		"ALTER TABLE " + pgRuns + " ADD COLUMN IF NOT EXISTS dead_lettered bigint NOT NULL DEFAULT 0",
		"CREATE INDEX IF NOT EXISTS " + RunsTable + "_job ON " + pgRuns + " (job, id)",
		`CREATE TABLE IF NOT EXISTS ` + pgLocks + ` (
	job text PRIMARY KEY,
	backend_pid integer NOT NULL,
	pid integer NOT NULL,
	host text NOT NULL,
	since timestamptz NOT NULL
)`,
	}
	for _, q := range ddl {
		if _, err := tx.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("create sluice history table: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("create sluice history table: %w", err)
	}
	return s, nil
}

const pgRuns = PGSchema + "." + RunsTable

// pgLocks records who holds each job's advisory lock: the holder's session
// (backend_pid) and its process (pid, host) and since when. A row is
// current only while pg_locks shows its session holding the lock; a
// session that died left a row that no longer counts.
const pgLocks = PGSchema + "." + LocksTable

// pgTryLock takes the advisory lock and, in the same statement, records the
// holder ($3 pid, $4 host) when it got it. (Session advisory locks outlive
// their transaction, so this statement's rollback would not release it:
// on an error the connection is closed.)
const pgTryLock = `WITH l AS MATERIALIZED (SELECT pg_try_advisory_lock($1::int4, hashtext($2)) AS ok),
w AS (INSERT INTO ` + pgLocks + ` (job, backend_pid, pid, host, since)
	SELECT $2, pg_backend_pid(), $3, $4, now() FROM l WHERE ok
	ON CONFLICT (job) DO UPDATE SET backend_pid = excluded.backend_pid, pid = excluded.pid, host = excluded.host, since = excluded.since)
SELECT ok FROM l`

// Close ends the lock session, which releases every lock still held, and
// closes the pool if the store opened it.
func (s *PGStore) Close() error {
	s.locks.close(s.base)
	if s.own {
		s.pool.Close()
	}
	return nil
}

// Record appends r to sluice.sluice_runs.
func (s *PGStore) Record(ctx context.Context, r *Run) (int64, error) {
	cols := []string{"job", "node", "started_at", "ended_at", "status"}
	args := []any{r.Job, r.Node, r.Start.UTC(), r.End.UTC(), string(r.Status)}
	cols = append(cols, strings.Split(countColumns(), ", ")...)
	args = append(args, countArgs(r.Read)...)
	args = append(args, countArgs(r.Written)...)
	cols = append(cols, "from_offset", "to_offset", "error", "skipped", "note", "retry_at", "dead_lettered")
	var retryAt *time.Time
	if !r.RetryAt.IsZero() {
		t := r.RetryAt.UTC()
		retryAt = &t
	}
	args = append(args, encodeOffset(r.From), encodeOffset(r.To), r.Error, r.Skipped, r.Note, retryAt, r.DeadLettered)
	ph := make([]string, len(args))
	for i := range ph {
		ph[i] = fmt.Sprintf("$%d", i+1)
	}
	var id int64
	err := s.pool.QueryRow(ctx, "INSERT INTO "+pgRuns+" ("+strings.Join(cols, ", ")+") VALUES ("+strings.Join(ph, ", ")+") RETURNING id", args...).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("record run of %s: %w", r.Job, err)
	}
	return id, nil
}

// List returns recorded runs, newest first.
func (s *PGStore) List(ctx context.Context, job string, limit int) ([]Run, error) {
	q := "SELECT id, job, node, started_at, ended_at, status, " + countColumns() + ", from_offset, to_offset, error, skipped, note, retry_at, dead_lettered FROM " + pgRuns
	args := []any{defaultLimit(limit)}
	if job != "" {
		q += " WHERE job = $2"
		args = append(args, job)
	}
	q += " ORDER BY id DESC LIMIT $1"
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var status, from, to string
		var retryAt *time.Time
		counts := make([]int64, 2*len(opColumns))
		dest := []any{&r.ID, &r.Job, &r.Node, &r.Start, &r.End, &status}
		for i := range counts {
			dest = append(dest, &counts[i])
		}
		dest = append(dest, &from, &to, &r.Error, &r.Skipped, &r.Note, &retryAt, &r.DeadLettered)
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		if retryAt != nil {
			r.RetryAt = retryAt.UTC()
		}
		r.Start, r.End = r.Start.UTC(), r.End.UTC()
		r.Status = Status(status)
		r.Read, r.Written = countMap(counts[:len(opColumns)]), countMap(counts[len(opColumns):])
		if err := decodeOffsets(&r, from, to); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Holder returns the holder of job's advisory lock as it recorded itself
// in sluice.sluice_locks; ok is false when no session holds the lock or
// the holding session's record is not there (yet).
func (s *PGStore) Holder(ctx context.Context, job string) (h Holder, ok bool, err error) {
	err = s.pool.QueryRow(ctx, `SELECT h.pid, h.host, h.since FROM `+pgLocks+` h
WHERE h.job = $2 AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = h.backend_pid AND l.locktype = 'advisory' AND l.granted
	AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND l.classid = $1::int8::oid AND l.objid = (hashtext($2)::int8 & 4294967295)::oid AND l.objsubid = 2)`,
		pgLockClass, job).Scan(&h.PID, &h.Host, &h.Since)
	if errors.Is(err, pgx.ErrNoRows) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, fmt.Errorf("job lock: %w", err)
	}
	h.Since = h.Since.UTC()
	return h, true, nil
}

func closeConn(ctx context.Context, c *pgx.Conn) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = c.Close(cctx)
}

// decodeOffsets parses the stored offsets of a history row.
func decodeOffsets(r *Run, from, to string) error {
	var errs []error
	var err error
	if r.From, err = decodeOffset(from); err != nil {
		errs = append(errs, err)
	}
	if r.To, err = decodeOffset(to); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
