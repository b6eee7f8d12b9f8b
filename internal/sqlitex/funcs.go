package sqlitex

import (
	"database/sql/driver"
	"fmt"
	"sync"

	"modernc.org/sqlite"
)

// Function is a deterministic scalar SQL function to register on the
// driver, such as expr's sluice_dec_cmp(a, b).
type Function struct {
	Name string
	// NArgs is the number of arguments, -1 for variadic.
	NArgs int32
	// Fn computes the result from driver values (nil, int64, float64,
	// string, []byte) and returns one.
	Fn func(args []driver.Value) (driver.Value, error)
}

var (
	funcMu     sync.Mutex
	registered = map[string]bool{}
)

// RegisterFunctions registers fs on the modernc.org/sqlite driver for the
// whole process. A name already registered (by an earlier call) is skipped,
// so callers may call it on every open. Connections opened before the call
// do not see the functions: call it before Open. It returns the driver's
// error for a bad function.
func RegisterFunctions(fs []Function) error {
	funcMu.Lock()
	defer funcMu.Unlock()
	for _, f := range fs {
		if registered[f.Name] {
			continue
		}
		fn := f.Fn
		err := sqlite.RegisterDeterministicScalarFunction(f.Name, f.NArgs,
			func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) { return fn(args) })
		if err != nil {
			return fmt.Errorf("register sqlite function %s: %w", f.Name, err)
		}
		registered[f.Name] = true
	}
	return nil
}

// Registered reports whether a function of that name was registered with
// RegisterFunctions.
func Registered(name string) bool {
	funcMu.Lock()
	defer funcMu.Unlock()
	return registered[name]
}

// Aggregate is an aggregate SQL function to register on the driver, such
// as rowhash's sluice_diff_buckets.
type Aggregate struct {
	Name string
	// NArgs is the number of arguments, -1 for variadic.
	NArgs int32
	// New returns the state of one evaluation.
	New func() AggregateState
}

// AggregateState is one evaluation of an Aggregate. Step must not retain
// string or []byte arguments past its return (they are views into
// SQLite's memory).
type AggregateState interface {
	Step(args []driver.Value) error
	Final() (driver.Value, error)
}

// RegisterAggregates registers as on the driver for the whole process, as
// RegisterFunctions does scalar functions.
func RegisterAggregates(as []Aggregate) error {
	funcMu.Lock()
	defer funcMu.Unlock()
	for _, a := range as {
		if registered[a.Name] {
			continue
		}
		newState := a.New
		err := sqlite.RegisterFunction(a.Name, &sqlite.FunctionImpl{
			NArgs: a.NArgs, Deterministic: true, VolatileArgs: true,
			MakeAggregate: func(sqlite.FunctionContext) (sqlite.AggregateFunction, error) {
				return &aggregate{st: newState()}, nil
			},
		})
		if err != nil {
			return fmt.Errorf("register sqlite aggregate %s: %w", a.Name, err)
		}
		registered[a.Name] = true
	}
	return nil
}

type aggregate struct{ st AggregateState }

func (a *aggregate) Step(_ *sqlite.FunctionContext, args []driver.Value) error {
	return a.st.Step(args)
}

func (a *aggregate) WindowInverse(*sqlite.FunctionContext, []driver.Value) error {
	return fmt.Errorf("not a window function")
}

func (a *aggregate) WindowValue(*sqlite.FunctionContext) (driver.Value, error) { return a.st.Final() }

func (a *aggregate) Final(*sqlite.FunctionContext) {}
