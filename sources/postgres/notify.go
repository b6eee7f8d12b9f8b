package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
)

// notifyPrefix starts the NOTIFY channel of every tracked table.
const notifyPrefix = "sluice_changes_"

// NotifyChannel returns the channel on which the capture trigger of table
// notifies (pg_notify, empty payload) once per statement that logged
// changes: "sluice_changes_<table>", with the tail replaced by a hash of
// the table name when that is longer than PostgreSQL's 63-byte identifier
// limit. It is deterministic, so a listener (serve.PGWaker) computes it
// from the stream's table without asking the database. LISTEN it as a
// quoted identifier: the name keeps the table's case.
func NotifyChannel(table string) string { return objectName(notifyPrefix, table) }

// sqlLiteral quotes s as a standard-conforming SQL string literal.
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// listenersDDL creates sluice.listeners: one row per session LISTENing on
// a channel (RegisterListener). The capture function notifies only while
// its table's channel has a row: a NOTIFY serializes the commits of all
// notifying transactions of the database (a lock held from the queue
// insertion to the end of commit), which cost pgbench about 5% of its TPS
// with nobody listening.
const listenersDDL = `CREATE TABLE IF NOT EXISTS sluice.listeners (
	channel text NOT NULL,
	pid     int NOT NULL,
	PRIMARY KEY (channel, pid)
);`

// RegisterListener records conn's session as a listener on channel, so
// the capture triggers of its table notify (call it before LISTEN, and
// after every reconnect; a statement that committed in between is caught
// by waking once after). Rows of sessions that have ended are removed
// first; a session's row goes with the next registration after it ends,
// and until then writers only notify needlessly. Errors are the server's
// (the role needs to create, or write, sluice.listeners).
func RegisterListener(ctx context.Context, conn *pgx.Conn, channel string) error {
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS sluice`); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, listenersDDL); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `DELETE FROM sluice.listeners l WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = l.pid)`); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, `INSERT INTO sluice.listeners (channel, pid) VALUES ($1, pg_backend_pid()) ON CONFLICT DO NOTHING`, channel)
	return err
}
