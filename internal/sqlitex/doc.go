// Package sqlitex holds the SQLite helpers shared by the sqlite source
// (sources/sqlite) and the sqlite sink (sinks/sqlite): opening a database
// from a connection URL with sluice's pragmas, the storage conventions of
// docs/architecture.md ("SQLite storage conventions") — declared types,
// value encoding and decoding — identifier quoting, and reading a table's
// schema back.
//
// Everything here is stateless except the process-wide registration of SQL
// functions on the modernc.org/sqlite driver (RegisterFunctions), which must
// happen before the first connection is opened.
package sqlitex
