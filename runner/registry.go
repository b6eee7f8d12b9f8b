package runner

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/sluicedata/sluice/internal/redact"
)

// Opener opens a backend for a connection URL of its scheme. url is the
// full URL as the user wrote it after ${ENV} expansion.
type Opener func(ctx context.Context, url string, log *slog.Logger) (Backend, error)

var (
	regMu   sync.RWMutex
	openers = map[string]Opener{}
)

// Register makes a backend available under one or more URL schemes
// ("sqlite", "postgres", "postgresql"). Backends call it from init. It
// panics when a scheme is registered twice.
func Register(open Opener, schemes ...string) {
	regMu.Lock()
	defer regMu.Unlock()
	for _, s := range schemes {
		if _, dup := openers[s]; dup {
			panic("runner: scheme registered twice: " + s)
		}
		openers[s] = open
	}
}

// Schemes lists the registered schemes, sorted.
func Schemes() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(openers))
	for s := range openers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Scheme returns the scheme of a connection URL: the text before the first
// ':' ("sqlite:orders.db" → "sqlite", "postgres://…" → "postgres"). A
// key=value DSN ("host=… dbname=…") is "postgres".
func Scheme(url string) string {
	if i := strings.IndexByte(url, ':'); i > 0 && !strings.ContainsAny(url[:i], " =") {
		return strings.ToLower(url[:i])
	}
	if strings.Contains(url, "=") {
		return "postgres"
	}
	return ""
}

// Open opens url with the backend registered for its scheme. An unknown
// scheme is an error wrapping ErrUnknownScheme that lists the known ones.
func Open(ctx context.Context, url string, log *slog.Logger) (Backend, error) {
	s := Scheme(url)
	regMu.RLock()
	open, ok := openers[s]
	regMu.RUnlock()
	if !ok {
		return nil, &ConnError{fmt.Errorf("%w %q in connection %q (known: %s)", ErrUnknownScheme, s, redact.Conn(url), strings.Join(Schemes(), ", "))}
	}
	return open(ctx, url, log)
}
