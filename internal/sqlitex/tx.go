package sqlitex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Tx is a write transaction opened with BEGIN IMMEDIATE on a connection of
// its own: it takes SQLite's write lock at the start (waiting up to
// BusyTimeout), so that it never fails half-way with SQLITE_BUSY when a
// read turns into a write, and everything it reads is the state it writes
// on. It implements Querier. Exactly one of Commit or Rollback must be
// called; Rollback after Commit is a no-op.
type Tx struct {
	conn *sql.Conn
	done bool
	// schemaVersion is PRAGMA schema_version right after BEGIN IMMEDIATE:
	// the committed schema's, which no other connection can change while
	// the Tx holds the write lock.
	schemaVersion int64
}

// Conner hands out a connection for a write: *sql.DB (any connection of
// its pool) or *Handle (the file's one write connection).
type Conner interface {
	Conn(ctx context.Context) (*sql.Conn, error)
}

// BeginImmediate opens a Tx on a connection taken from db.
func BeginImmediate(ctx context.Context, db Conner) (*Tx, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin write transaction: %w", err)
	}
	if err := Begin(ctx, conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("begin write transaction: %w", err)
	}
	t := &Tx{conn: conn}
	if err := conn.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&t.schemaVersion); err != nil {
		_ = t.Rollback(ctx)
		return nil, fmt.Errorf("begin write transaction: read PRAGMA schema_version: %w", err)
	}
	return t, nil
}

// StartSchemaVersion is PRAGMA schema_version as the Tx began: the
// committed schema's. A Tx whose PRAGMA schema_version still reads the
// same has changed no schema, so what it reads of sqlite_schema is what
// every connection sees at that version.
func (t *Tx) StartSchemaVersion() int64 { return t.schemaVersion }

// QueryContext implements Querier.
func (t *Tx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.conn.QueryContext(ctx, q, args...)
}

// QueryRowContext implements Querier.
func (t *Tx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.conn.QueryRowContext(ctx, q, args...)
}

// ExecContext implements Querier.
func (t *Tx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.conn.ExecContext(ctx, q, args...)
}

// Commit commits and releases the connection.
func (t *Tx) Commit(ctx context.Context) error {
	if t.done {
		return errors.New("transaction already finished")
	}
	_, err := t.conn.ExecContext(ctx, "COMMIT")
	if err != nil {
		_, _ = t.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		DiscardIfCannotWrite(t.conn, err)
	}
	t.done = true
	t.conn.Close()
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Rollback rolls back and releases the connection; it is a no-op after
// Commit or Rollback. It runs even when ctx is canceled.
func (t *Tx) Rollback(ctx context.Context) error {
	if t.done {
		return nil
	}
	t.done = true
	_, err := t.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	t.conn.Close()
	if err != nil {
		return fmt.Errorf("rollback: %w", err)
	}
	return nil
}

// WithImmediate runs fn in a Tx and commits when fn returns nil; otherwise
// it rolls back and returns fn's error. A connection that failed to write
// (DiscardIfCannotWrite: the file was read-only when it was opened) is
// dropped from the pool, in fn or at COMMIT.
func WithImmediate(ctx context.Context, db Conner, fn func(tx *Tx) error) error {
	tx, err := BeginImmediate(ctx, db)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		DiscardIfCannotWrite(tx.conn, err)
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}
