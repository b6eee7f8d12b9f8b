package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// notifyPrefix starts the NOTIFY channel of every tracked table.
const notifyPrefix = "sluice_changes_"

// NotifyChannel returns the channel on which the capture trigger of table
// notifies (pg_notify, empty payload) once per statement that logged
// changes: "sluice_changes_<table>", with the tail replaced by a hash of
// the table name when that is longer than PostgreSQL's 63-byte identifier
// limit. It is deterministic, so a listener (serve.PGListener) computes it
// from the stream's table without asking the database. LISTEN it as a
// quoted identifier: the name keeps the table's case.
func NotifyChannel(table string) string { return objectName(notifyPrefix, table) }

// sqlLiteral quotes s as a standard-conforming SQL string literal.
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// notifyLockClass is the first key of the advisory locks that gate
// NOTIFYs (notifyGate): "slic" in ASCII, the second key being hashtext of
// the channel.
const notifyLockClass = 0x736C6963

// notifyGate returns the capture function's SQL condition, true while
// some session listens on channel: one holds the channel's advisory lock
// in share mode (RegisterListener), so this session cannot take it
// exclusively. Taken, it is released at once. A NOTIFY serializes the
// commits of all notifying transactions of the database (a lock held from
// the queue insertion to the end of commit), which cost pgbench about 5%
// of its TPS with nobody listening. Two function calls in one expression
// cost a one-row UPDATE about 1 µs, against 5–8 µs for a query of
// sluice.listeners, the gate of the previous version; under concurrent
// writers the difference is within the runs' noise (docs/benchmarks.md).
// A writer that holds the lock for an instant makes a concurrent one
// notify needlessly; no listener is ever missed. Should the release fail
// (it cannot in practice: nothing between the two calls raises an error),
// the session would keep the lock until it ends and writers would notify
// needlessly.
func notifyGate(channel string) string {
	k := fmt.Sprintf("%d, pg_catalog.hashtext(%s)", notifyLockClass, sqlLiteral(channel))
	return fmt.Sprintf("NOT (pg_catalog.pg_try_advisory_lock(%[1]s) AND pg_catalog.pg_advisory_unlock(%[1]s))", k)
}

// listenersDDL creates sluice.listeners: one row per session LISTENing on
// a channel (RegisterListener). Capture functions written by the previous
// version of sluice notify only while their table's channel has a row;
// the current ones use notifyGate, and the table is kept (and filled) for
// the functions of tables whose tracking has not been enabled again since
// (their query of the table would fail without it).
const listenersDDL = `CREATE TABLE IF NOT EXISTS sluice.listeners (
	channel text NOT NULL,
	pid     int NOT NULL,
	PRIMARY KEY (channel, pid)
);`

// RegisterListener records conn's session as a listener on channel, so
// the capture triggers of its table notify (call it before LISTEN, and
// after every reconnect; a statement that committed in between is caught
// by waking once after). It is RegisterListeners of one channel.
func RegisterListener(ctx context.Context, conn *pgx.Conn, channel string) error {
	return RegisterListeners(ctx, conn, []string{channel})
}

// RegisterListeners records conn's session as a listener on every channel
// of channels, in five statements whatever their number (a serve of 1,000
// jobs registers 1,000 channels on each reconnect of its listener; one
// call per channel took 5,000 statements, issue #19). The session takes
// each channel's advisory lock in share mode (notifyGate) until it ends,
// waiting for at most an instant while a writer tests one; capture
// functions of the previous version look for a row in sluice.listeners,
// so one per channel is inserted too, after the rows of sessions that
// have ended are removed. Errors are the server's (the role needs to
// create, or write, sluice.listeners).
func RegisterListeners(ctx context.Context, conn *pgx.Conn, channels []string) error {
	if len(channels) == 0 {
		return nil
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(`SELECT count(pg_catalog.pg_advisory_lock_shared(%d, pg_catalog.hashtext(c))) FROM unnest($1::text[]) AS c`, notifyLockClass), channels); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS sluice`); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, listenersDDL); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `DELETE FROM sluice.listeners l WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = l.pid)`); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, `INSERT INTO sluice.listeners (channel, pid) SELECT DISTINCT c, pg_backend_pid() FROM unnest($1::text[]) AS c ON CONFLICT DO NOTHING`, channels)
	return err
}
