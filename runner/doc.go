// Package runner binds parsed jobs to their databases (Runner.Plan) and
// executes the resulting plans (Runner.Run) with sluice's delivery
// guarantee: the sink rows and the job's checkpoint commit in one
// transaction in the sink database, and the source stream's offset moves
// only after that commit (docs/architecture.md, "Exactly-once protocol").
//
// Backends register themselves by URL scheme (Register) and implement the
// small interfaces in backend.go as they can.
package runner
