package runner

import "context"

// createKey is the context key of the database-creation policy.
type createKey struct{}

// Creation policies (WithCreate).
const (
	// CreateNone: opening a database that does not exist is an error
	// (plan: it writes nothing, so it creates nothing).
	CreateNone = iota
	// CreateSinks: a job's sink database is created if missing (run,
	// serve, backfill write to it); its source database must exist. The
	// policy of a ctx without WithCreate.
	CreateSinks
	// CreateAll: every database is created if missing (sluice sql).
	CreateAll
)

// WithCreate returns ctx carrying a creation policy (CreateNone,
// CreateSinks or CreateAll) for the databases a Runner opens under it.
func WithCreate(ctx context.Context, policy int) context.Context {
	return context.WithValue(ctx, createKey{}, policy)
}

// createPolicy is the policy of ctx (CreateSinks when unset).
func createPolicy(ctx context.Context) int {
	if p, ok := ctx.Value(createKey{}).(int); ok {
		return p
	}
	return CreateSinks
}

// mustExistKey tells a backend's Open not to create a missing database
// (MustExist).
type mustExistKey struct{}

// MustExist reports whether a backend's Open called under ctx must refuse
// a database that does not exist (an embedded SQLite file) with an error
// naming it, rather than create it. Runner sets it from the policy of
// WithCreate and whether it opens a source or a sink; a ctx without it
// (a direct call of a backend's Open) may create.
func MustExist(ctx context.Context) bool {
	ok, _ := ctx.Value(mustExistKey{}).(bool)
	return ok
}

// standInKey tells a backend's Open that a missing database may be stood
// in for by an empty one that is never written to disk (StandIn).
type standInKey struct{}

// StandIn reports whether a backend's Open called under ctx may, for a
// database that does not exist, return an empty stand-in that writes
// nothing to disk (an in-memory SQLite database): a plan's sink that the
// run would create. It implies MustExist for anything else.
func StandIn(ctx context.Context) bool {
	ok, _ := ctx.Value(standInKey{}).(bool)
	return ok
}

// openMode is how Runner.open treats a database that does not exist.
type openMode int

const (
	openCreate    openMode = iota // create it
	openMustExist                 // an error naming it
	openStandIn                   // an empty stand-in, nothing on disk
)

// withOpenMode returns ctx telling the backend's Open the mode.
func withOpenMode(ctx context.Context, m openMode) context.Context {
	switch m {
	case openMustExist:
		return context.WithValue(ctx, mustExistKey{}, true)
	case openStandIn:
		return context.WithValue(context.WithValue(ctx, mustExistKey{}, true), standInKey{}, true)
	}
	return ctx
}
