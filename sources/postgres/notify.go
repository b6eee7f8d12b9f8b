package postgres

import "strings"

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
