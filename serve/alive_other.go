//go:build !unix

package serve

// pidNamespace: no pid liveness check on this platform.
func pidNamespace() string { return "" }

// processGone: unknown on this platform, so never (a lock then waits for
// its lease).
func processGone(int) bool { return false }
