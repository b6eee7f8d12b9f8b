// Package leaktest holds the end-to-end test that no output of sluice
// shows a connection's secret: passwords made of every printable ASCII
// character and every URL-reserved character go through plan, run (its
// debug log and the error of a failing connect), serve (its log, the run
// history table's rows, /healthz, /metrics), status and history. It has no
// code of its own.
package leaktest
