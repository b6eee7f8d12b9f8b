// Package serve is `sluice serve`: it runs a set of jobs on their
// schedules (package schedule) in one long-lived process, and gives
// operators the run history, a status page at /, /healthz, Prometheus
// /metrics and the data of `sluice status`.
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
//     doubling to 5s) or until their Waker (PGListener: LISTEN/NOTIFY;
//     PollWatcher: one watcher per SQLite file) fires.
//   - a job whose Waker is a Positioner (PollWatcher, PGListener) is not run while its
//     change log's position is the one it had before the job's last
//     committed run (reason "unchanged"), for at most Config.QuietMax
//     since its last run: idle jobs cost nothing per fire.
//   - manual jobs (no schedule) are listed but never fired.
//
// A failed run is classified by IsTransient. Transient failures — faults
// of the environment that an operator fixes without touching the job: a
// lost or refused connection, a restarting server, a failed login (wrong
// password, no LOGIN yet), a serialization failure or deadlock, a full
// disk, a read-only or busy SQLite file — are retried with
// Config.RetryBackoff (1s doubling to 1m, with jitter) while the job is
// marked running, so the schedule does not stack more attempts; /healthz
// and Status say "retrying" with the last error and the time of the next
// try (JobStatus.NextTry, recorded in the history as Run.RetryAt), and the
// job goes on by itself once the cause is gone. Any other failure — a
// fault of the job itself, such as a missing table or a value that does
// not convert — is permanent: the job stops (other jobs go on), /healthz
// turns 503, sluice_job_stopped is 1 and no next fire is shown, until a
// Reload restarts it.
//
// Every run is recorded in the History, except a run that found nothing
// pending (nothing read, the offset unchanged): it logs at debug, counts in
// sluice_runs_total{result="empty"}, and only its time is kept, as the
// job's last empty check (EmptyChecks, at most every EmptyNoteInterval).
// A run the history database
// refuses (it is down, or its connection was lost) is kept in memory and
// retried, in order, until it is stored (sluice_history_unrecorded_runs
// counts them); runs still unrecorded when the server stops are logged at
// error level, one line each.
//
// # Across processes
//
// Several servers may share jobs through one database that holds their
// Locker and History (OpenStore): PostgreSQL session advisory locks on a
// dedicated connection held for the run (PGStore), or a SQLite lock row
// with a lease and heartbeat claimed inside BEGIN IMMEDIATE (SQLiteStore).
// A job then runs on one process at a time and every run is a row of
// sluice_runs, wherever it ran. Lock (joblock.go) takes the same lock for
// a one-off run (`sluice run`, `sluice backfill`) and, when it is held,
// names the holder (pid, host, since: stored with the lock, Holder).
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
