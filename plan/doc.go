// Package plan holds the two forms of a sluice job: Job, what a job file
// says (parsed by package dsl, positions kept, nothing resolved), and Plan,
// the job bound to its source and sink — the stages source → filter →
// project → sink with types, the SQL each backend will execute, and the
// warnings `sluice plan` prints. `sluice plan` prints a Plan; `sluice run`
// executes the same Plan.
package plan
