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
