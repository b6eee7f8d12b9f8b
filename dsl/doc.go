// Package dsl parses sluice's job files and statements. It does no I/O:
// callers pass file names and contents, and ExpandEnv takes a lookup
// function instead of reading the environment.
//
// # Job files
//
// ParseJob turns a job file into a plan.Job. A YAML file (.yaml, .yml)
// mirrors the DataFrame flow of a Zettapark job:
//
//	name: orders_sync
//	connection: sqlite:orders.db
//	source: orders_stream
//	filter: "`__change_type` IN ('INSERT', 'UPDATE_AFTER')"
//	select: [id, name, amount, status]
//	sink:
//	  table: orders_target
//	  mode: merge
//	  keys: [id]
//
// A SQL file (.sql) is a script: an optional leading comment block of
// metadata lines (-- name: …, -- connection: …, -- sink_connection: …,
// -- schedule: …, -- timezone: …), setup statements, and exactly one
// consuming statement, INSERT INTO t SELECT … FROM stream [WHERE …] or
// MERGE INTO t USING stream_or_(subquery) ON … WHEN …. Both forms compile to
// the same stages: source → filter → project → sink.
//
// Expressions (filters, select items, MERGE conditions and values) are kept
// as text with the position of their first byte (plan.Expr); package expr
// parses and binds them.
//
// # Statements
//
// ParseStatements parses a script of statements of the ClickZetta dialect
// that `sluice sql` and SQL job setups accept: CREATE TABLE, ALTER TABLE …
// SET PROPERTIES ('change_tracking' = …), CREATE/DROP/SHOW/DESCRIBE TABLE
// STREAM, DROP TABLE, and INSERT/UPDATE/DELETE/SELECT (parsed with
// github.com/xwb1989/sqlparser).
//
// # Errors
//
// Every error that concerns a file is a pos.List of *pos.Error, each with a
// file:line:col (columns count bytes) and wrapping one of the sentinels of
// errors.go, so callers can test it with errors.Is. A file's errors are
// reported together as far as parsing can go on after the first one.
package dsl
