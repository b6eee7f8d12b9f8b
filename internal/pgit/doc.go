// Package pgit holds integration tests of the postgres backend that drive
// sluice from the outside against a real PostgreSQL server: a crash test
// that SIGKILLs `sluice run` processes at random points of cross-database
// jobs, and a concurrency test that consumes a table pgbench is writing.
// The server comes from internal/pgtest; without one the tests skip and
// say why.
package pgit
