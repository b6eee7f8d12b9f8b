// Package serve is `sluice serve`: it runs a set of jobs on their
// schedules (package schedule) in one long-lived process, and gives
// operators the run history, /healthz, Prometheus /metrics and the data of
// `sluice status`.
//
// # Running jobs
//
// A Server is built with New(Config) around a RunFunc — in production
// runner.Runner.RunJob, in tests any function — and fed job definitions
// with Reload. Start starts one goroutine per scheduled job:
//
//   - cron and @every jobs fire on their schedule's grid, measured with the
//     injected Clock; each fire starts the run in the background. A fire
//     that finds the previous run still going is skipped and logged
//     (reason "running"); so is one that finds the job running in another
//     process (reason "locked": Config.Locker, a database lock).
//   - continuous jobs run again as soon as a run that moved rows ends;
//     when a run finds nothing, they wait Config.IdleBackoff (100ms
//     doubling to 5s) or until their Waker (PGWaker: LISTEN/NOTIFY) fires.
//   - manual jobs (no schedule) are listed but never fired.
//
// A failed run is classified by IsTransient. Transient failures (lost
// connection, serialization failure, deadlock, SQLITE_BUSY…) are retried
// with Config.RetryBackoff (exponential, with jitter) while the job is
// marked running, so the schedule does not stack more attempts. Any other
// failure is permanent: the job stops (other jobs go on), /healthz turns
// 503 and sluice_job_stopped is 1, until a Reload restarts it.
//
// # Across processes
//
// Several servers may share jobs through one database that holds their
// Locker and History (OpenStore): PostgreSQL session advisory locks on a
// dedicated connection held for the run (PGStore), or a SQLite lock row
// with a lease and heartbeat claimed inside BEGIN IMMEDIATE (SQLiteStore).
// A job then runs on one process at a time and every run is a row of
// sluice_runs, wherever it ran.
//
// # Stopping and reloading
//
// Shutdown(ctx) stops new runs, lets running ones finish until ctx is done
// (the grace period), then cancels them; a cancelled run commits nothing
// (the runner commits rows and offset in one transaction only if its
// context is live). Reload swaps the job set; a file that fails to load
// keeps its previous jobs. Watch polls job files for --watch.
//
// Signals, flags and output formats belong to the CLI (cmd/sluice/internal/cli).
package serve
