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
package e2e
