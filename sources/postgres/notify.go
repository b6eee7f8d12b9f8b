package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
// limit. It is deterministic, so a listener (serve.PGWaker) computes it
// from the stream's table without asking the database. LISTEN it as a
// quoted identifier: the name keeps the table's case.
func NotifyChannel(table string) string { return objectName(notifyPrefix, table) }

// sqlLiteral quotes s as a standard-conforming SQL string literal.
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// notifyLockClass is the first key of the advisory locks that gate
// NOTIFYs (notifyBlock): "slic" in ASCII, the second key being hashtext of
// the channel.
const notifyLockClass = 0x736C6963

// notifyRecheckSeconds is how long a writing session trusts what it
// last found out about the channel's listeners (notifyBlock).
const notifyRecheckSeconds = 1

// notifyBlock returns the capture function's PL/pgSQL statements that
// send a NOTIFY on channel while some session listens: one that holds
// the channel's advisory lock in share mode (RegisterListener), so this
// session cannot take it exclusively (taken, it is released at once).
// What the test found is kept in a setting of the writing session for
// notifyRecheckSeconds, as "<epoch seconds until then>|t" or "|f", so a
// session tests the lock at most once a second: under concurrent writers
// the lock manager's partition lock made testing it per statement cost
// pgbench about 8% of its TPS (docs/benchmarks.md). A listener is
// therefore noticed by a session within a second of registering, and
// writers stop notifying within a second of the last listener's end. A
// NOTIFY serializes the commits of all notifying transactions of the
// database (a lock held from the queue insertion to the end of commit),
// which cost pgbench about 5% of its TPS with nobody listening. Should
// the release fail (it cannot in practice: nothing between the two calls
// raises an error), the session would keep the lock until it ends and
// writers would notify needlessly. c is a text variable of the function.
func notifyBlock(channel string) string {
	k := fmt.Sprintf("%d, hashtext(%s)", notifyLockClass, sqlLiteral(channel))
	h := sha256.Sum256([]byte(channel))
	setting := sqlLiteral("sluice.listening_" + hex.EncodeToString(h[:8]))
	return fmt.Sprintf(`c := coalesce(current_setting(%[1]s, true), '');
		IF (CASE WHEN c ~ '^[0-9.]+[|][tf]$' THEN split_part(c, '|', 1)::numeric < extract(epoch FROM clock_timestamp()) ELSE true END) THEN
			c := (extract(epoch FROM clock_timestamp()) + %[4]d)::text || '|' || CASE WHEN pg_try_advisory_lock(%[2]s) AND pg_advisory_unlock(%[2]s) THEN 'f' ELSE 't' END;
			c := set_config(%[1]s, c, false);
		END IF;
		IF right(c, 1) = 't' THEN
			PERFORM pg_notify(%[3]s, '');
		END IF;`, setting, k, sqlLiteral(channel), notifyRecheckSeconds)
}

// listenersDDL creates sluice.listeners: one row per session LISTENing on
// a channel (RegisterListener). Capture functions written by the previous
// version of sluice notify only while their table's channel has a row;
// the current ones use notifyBlock, and the table is kept (and filled) for
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
// by waking once after). The session takes the channel's advisory lock in
// share mode (notifyBlock) until it ends, waiting for at most an instant
// while a writer tests it; capture functions of the previous version
// look for a row in sluice.listeners, so one is inserted too, after the
// rows of sessions that have ended are removed. Errors are the server's
// (the role needs to create, or write, sluice.listeners).
func RegisterListener(ctx context.Context, conn *pgx.Conn, channel string) error {
	if _, err := conn.Exec(ctx, fmt.Sprintf(`SELECT pg_advisory_lock_shared(%d, hashtext($1))`, notifyLockClass), channel); err != nil {
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
	_, err := conn.Exec(ctx, `INSERT INTO sluice.listeners (channel, pid) VALUES ($1, pg_backend_pid()) ON CONFLICT DO NOTHING`, channel)
	return err
}
