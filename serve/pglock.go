package serve

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgLockSession is the one PostgreSQL session on which a PGStore holds the
// advisory locks of all its jobs (issue #19: one session per job made a
// serve of 60 jobs fill a server's default 100 connections). Calls on the
// session are serialized by mu; each is one short non-blocking statement.
//
// Advisory locks are re-entrant within a session, so held also keeps the
// set of jobs locked here: a second TryLock of a held job answers "held
// elsewhere" instead of taking it twice. When the session is lost (the
// server restarted, the backend was terminated) the server has released
// all its locks; the ping that finds out logs an error naming the jobs
// still running, which may now run elsewhere too, as when a single job's
// session was lost before, and the next TryLock opens a new session.
type pgLockSession struct {
	mu     sync.Mutex
	conn   *pgx.Conn
	held   map[string]bool
	closed bool
	pinger context.CancelFunc // stops the ping loop; nil while none runs
	done   chan struct{}
}

// TryLock takes job's advisory lock on the store's lock session and
// records this process's pid and host name and the time in
// sluice.sluice_locks (Holder reads them). ok is false, with no error,
// when another session holds it or this process already does. unlock
// releases it (idempotent). While any lock is held the session is pinged
// every pgLockPing. Errors (connecting, the statement) begin "job lock: ".
func (s *PGStore) TryLock(ctx context.Context, job string) (unlock func(), ok bool, err error) {
	l := &s.locks
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, false, fmt.Errorf("job lock: %w", ErrClosed)
	}
	if l.held[job] {
		return nil, false, nil
	}
	me := thisProcess()
	try := func() error {
		if l.conn == nil || l.conn.IsClosed() {
			c, err := pgx.ConnectConfig(ctx, s.cfg.Copy())
			if err != nil {
				return err
			}
			l.conn = c
			l.held = map[string]bool{} // a new session holds nothing
		}
		return l.conn.QueryRow(ctx, pgTryLock, pgLockClass, job, me.pid, me.host).Scan(&ok)
	}
	err = try()
	if err != nil && ctx.Err() == nil && len(l.held) == 0 && l.conn != nil {
		// The session died while it held nothing (a terminated backend, a
		// restarted server): ask again on a new one.
		closeConn(ctx, l.conn)
		l.conn = nil
		err = try()
	}
	if err != nil {
		return nil, false, fmt.Errorf("job lock: %w", err)
	}
	if !ok {
		return nil, false, nil
	}
	l.held[job] = true
	if l.pinger == nil {
		pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		l.pinger, l.done = stop, make(chan struct{})
		go s.pingLocks(pctx, l.done)
	}
	conn := l.conn
	var once sync.Once
	return func() { once.Do(func() { s.unlock(ctx, conn, job) }) }, true, nil
}

// unlock releases job's lock if conn is still the lock session (a lost
// session released it already) and stops the ping loop when nothing is
// held any more.
func (s *PGStore) unlock(ctx context.Context, conn *pgx.Conn, job string) {
	l := &s.locks
	l.mu.Lock()
	if l.conn != conn || !l.held[job] {
		l.mu.Unlock()
		return
	}
	delete(l.held, job)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var released bool
	if err := conn.QueryRow(cctx, "SELECT pg_advisory_unlock($1::int4, hashtext($2))", pgLockClass, job).Scan(&released); err != nil || !released {
		// The session is in an unknown state: ending it releases this
		// lock for sure, and the others with it (their jobs are told by
		// the log below and lose nothing: a run's offset moves only when
		// its sink commits).
		s.log.Warn("job lock release failed; ending the lock session", "job", job, "released", released, "err", err, "other_jobs_running", slices.Sorted(maps.Keys(l.held)))
		closeConn(cctx, conn)
		l.conn, l.held = nil, map[string]bool{}
	}
	var stop context.CancelFunc
	var done chan struct{}
	if len(l.held) == 0 && l.pinger != nil {
		stop, done = l.pinger, l.done
		l.pinger, l.done = nil, nil
	}
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// pingLocks pings the lock session every pgLockPing until ctx ends; a
// failed ping is logged as an error naming the jobs whose locks the
// server dropped with the session.
func (s *PGStore) pingLocks(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(pgLockPing)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l := &s.locks
		l.mu.Lock()
		if l.conn == nil {
			l.pinger, l.done = nil, nil
			l.mu.Unlock()
			return
		}
		pctx, cancel := context.WithTimeout(ctx, pgLockPing)
		err := l.conn.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			s.log.Error("job lock session lost; these jobs may run elsewhere too", "jobs", slices.Sorted(maps.Keys(l.held)), "err", err)
			closeConn(ctx, l.conn)
			// Nothing is held any more: this loop ends, and the next
			// TryLock opens a new session and starts another.
			l.conn, l.held, l.pinger, l.done = nil, map[string]bool{}, nil, nil
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
	}
}

// close ends the lock session (releasing its locks) and refuses further
// TryLocks.
func (l *pgLockSession) close(ctx context.Context) {
	l.mu.Lock()
	l.closed = true
	conn := l.conn
	l.conn, l.held = nil, nil
	stop, done := l.pinger, l.done
	l.pinger, l.done = nil, nil
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	if conn != nil {
		closeConn(ctx, conn)
	}
}
