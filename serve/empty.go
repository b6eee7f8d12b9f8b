package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Empty checks: a scheduled or continuous run that finds nothing pending
// (nothing read, the offset unchanged) is not history — a continuous job
// would add a row per poll — so it writes no run-history row, logs at
// debug and counts in sluice_runs_total{result="empty"}. The store keeps
// only the time of each job's last empty check, for `sluice history`.

// ChecksTable holds the time of each job's last empty check: sluice_checks
// in SQLite, sluice.sluice_checks in PostgreSQL.
const ChecksTable = "sluice_checks"

// EmptyNoteInterval is how often at most a server stores a job's last
// empty check (a continuous job polls far more often).
const EmptyNoteInterval = 10 * time.Second

// EmptyChecks stores each job's last empty check. The stores of OpenStore
// implement it; a History that does not is told nothing.
type EmptyChecks interface {
	// NoteEmpty stores at (UTC) as job's last empty check.
	NoteEmpty(ctx context.Context, job string, at time.Time) error
	// LastEmpty returns the last empty check of every job that had one.
	LastEmpty(ctx context.Context) (map[string]time.Time, error)
}

// isEmpty reports whether a committed run found nothing pending.
func isEmpty(r *Run) bool {
	return r.Status == StatusCommitted && Rows(r.Read) == 0 && r.From.Equal(r.To)
}

// noteEmpty stores r's end as its job's last empty check, at most once
// per EmptyNoteInterval per job; a failure is logged, not returned.
func (s *Server) noteEmpty(r *Run) {
	ec, ok := s.cfg.History.(EmptyChecks)
	if !ok {
		return
	}
	s.mu.Lock()
	if s.emptyNoted == nil {
		s.emptyNoted = map[string]time.Time{}
	}
	last := s.emptyNoted[r.Job]
	due := last.IsZero() || r.End.Sub(last) >= EmptyNoteInterval
	if due {
		s.emptyNoted[r.Job] = r.End
	}
	s.mu.Unlock()
	if !due {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.runCtx), 5*time.Second)
	defer cancel()
	if err := ec.NoteEmpty(ctx, r.Job, r.End); err != nil {
		s.log.Warn("storing the job's last empty check failed", "job", r.Job, "err", err)
	}
}

const sqliteChecksDDL = `CREATE TABLE IF NOT EXISTS ` + ChecksTable + ` (job TEXT PRIMARY KEY, last_empty_at TEXT NOT NULL)`

// NoteEmpty stores at as job's last empty check (EmptyChecks).
func (s *SQLiteStore) NoteEmpty(ctx context.Context, job string, at time.Time) error {
	if _, err := s.db.ExecContext(ctx, sqliteChecksDDL); err != nil {
		return fmt.Errorf("create %s: %w", ChecksTable, err)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO `+ChecksTable+` (job, last_empty_at) VALUES (?, ?)
ON CONFLICT (job) DO UPDATE SET last_empty_at = excluded.last_empty_at`, job, at.UTC().Format(timeLayout))
	if err != nil {
		return fmt.Errorf("note the empty check of %s: %w", job, err)
	}
	return nil
}

// LastEmpty returns every job's last empty check (EmptyChecks).
func (s *SQLiteStore) LastEmpty(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	rows, err := s.db.QueryContext(ctx, `SELECT job, last_empty_at FROM `+ChecksTable)
	if err != nil {
		var exists bool
		if qerr := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?)`, ChecksTable).Scan(&exists); qerr == nil && !exists {
			return out, nil // no empty check yet
		}
		return nil, fmt.Errorf("read %s: %w", ChecksTable, err)
	}
	defer rows.Close()
	for rows.Next() {
		var job, at string
		if err := rows.Scan(&job, &at); err != nil {
			return nil, err
		}
		t, err := time.Parse(timeLayout, at)
		if err != nil {
			return nil, fmt.Errorf("%s of %s: %w", ChecksTable, job, err)
		}
		out[job] = t
	}
	return out, rows.Err()
}

const pgChecks = PGSchema + "." + ChecksTable

// NoteEmpty stores at as job's last empty check (EmptyChecks).
func (s *PGStore) NoteEmpty(ctx context.Context, job string, at time.Time) error {
	const upsert = `INSERT INTO ` + pgChecks + ` (job, last_empty_at) VALUES ($1, $2)
ON CONFLICT (job) DO UPDATE SET last_empty_at = EXCLUDED.last_empty_at`
	_, err := s.pool.Exec(ctx, upsert, job, at.UTC())
	if pgErrCode(err) == "42P01" { // undefined_table: the first note creates it
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, fmt.Sprintf("SELECT pg_advisory_xact_lock(%d, 0)", pgLockClass)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+pgChecks+` (job text PRIMARY KEY, last_empty_at timestamptz NOT NULL)`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, upsert, job, at.UTC())
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("note the empty check of %s: %w", job, err)
	}
	return nil
}

// LastEmpty returns every job's last empty check (EmptyChecks).
func (s *PGStore) LastEmpty(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	rows, err := s.pool.Query(ctx, `SELECT job, last_empty_at FROM `+pgChecks)
	if pgErrCode(err) == "42P01" {
		return out, nil // no empty check yet (the error comes at Query when the statement is prepared)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", pgChecks, err)
	}
	defer rows.Close()
	for rows.Next() {
		var job string
		var at time.Time
		if err := rows.Scan(&job, &at); err != nil {
			return nil, err
		}
		out[job] = at.UTC()
	}
	err = rows.Err()
	if pgErrCode(err) == "42P01" {
		return out, nil // no empty check yet
	}
	return out, err
}

func pgErrCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// WriteEmptyChecks writes the header of `sluice history`: one line per job
// (only job, when not "") with its last empty check, "last empty check:
// JOB at TIME (UTC)", sorted by job; nothing when h keeps none.
func WriteEmptyChecks(ctx context.Context, w io.Writer, h History, job string) error {
	ec, ok := h.(EmptyChecks)
	if !ok {
		return nil
	}
	last, err := ec.LastEmpty(ctx)
	if err != nil {
		return err
	}
	var jobs []string
	for j := range last {
		if job == "" || j == job {
			jobs = append(jobs, j)
		}
	}
	slices.Sort(jobs)
	for _, j := range jobs {
		if _, err := fmt.Fprintf(w, "last empty check: %s at %s (nothing pending; not in the history)\n", j, last[j].UTC().Format("2006-01-02 15:04:05Z")); err != nil {
			return err
		}
	}
	return nil
}
