// Package conformance is the backend-neutral test suite of table-stream
// semantics (DESIGN.md "Table streams") that every source passes: the
// same table of cases, each with its expected change rows computed by hand,
// runs against SQLite, PostgreSQL and any later backend.
//
// A backend's tests call RunStreamSuite with a Harness that opens a fresh
// database and applies row changes in that database's own way (so the
// suite depends only on runner.Executor and runner.Source, not on the SQL
// translation of DML).
package conformance
