// Package e2e holds end-to-end tests of the sluice command line that cross
// verbs and processes' outputs; it has no code of its own.
//
//   - leak_test.go: no output of sluice shows a connection's secret —
//     passwords of every printable ASCII and URL-reserved character go
//     through plan, run (its debug log and the error of a failing connect),
//     serve (its log, the run history table's rows, /healthz, /metrics),
//     status and history.
//   - hostile_test.go: serve and serve --watch keep running their jobs
//     when a job file is hostile (huge, deeply nested, invalid UTF-8).
//   - onerun_test.go: a second `sluice run` or `backfill` of a running job,
//     in processes of their own (exec_test.go), fails at once naming the
//     holder, or waits with --wait; a SIGKILLed holder blocks nothing.
//   - statewait_test.go: serve whose --state PostgreSQL refuses connections
//     at start keeps running, says so in /healthz and recovers when a
//     proxy to the server opens on that port.
//   - faults_test.go: a running serve's job recovers by itself from a full
//     disk, SQLITE_BUSY, refused and reset connections, terminated
//     sessions and an authentication failure at start; -v logs the
//     recovery times.
package e2e
