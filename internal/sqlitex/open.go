package sqlitex

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicedata/sluice/internal/redact"

	_ "modernc.org/sqlite" // registers driver "sqlite"
)

// ErrBadURL is returned for a connection URL that is not sqlite:PATH.
var ErrBadURL = errors.New("bad sqlite connection URL")

// ErrNoDatabase is a database file that does not exist where the caller
// may not create one (Location.MustExist).
var ErrNoDatabase = errors.New("sqlite database file does not exist")

// BusyTimeout is how long a connection waits for another writer's lock
// before failing with SQLITE_BUSY.
const BusyTimeout = 10 * time.Second

// ConnMaxLifetime is how long a connection to a database file is reused
// before it is closed and opened again. A connection keeps the access it
// was opened with: one opened while the file was read-only stays read-only
// after the file is writable again. Write paths drop such a connection when
// a write fails (DiscardIfCannotWrite), so a long-running process (sluice
// serve) recovers at its next try; this lifetime is the bound for
// anything else. It is long because every new connection parses the whole
// schema (a table, its change log, two helper tables and six triggers per
// tracked table: seconds and tens of MB at 1,000 tracked tables), and a
// one-minute lifetime kept serve re-parsing all the time (issue #19).
const ConnMaxLifetime = time.Hour

// MaxIdleConns is how many idle connections to a database file are kept
// for reuse: two per run of serve's default --max-runs.
const MaxIdleConns = 16

// Location is where a sqlite: URL points.
type Location struct {
	// Path is the absolute file path, or ":memory:" for a private in-memory
	// database.
	Path string
	// Memory is true for sqlite::memory:.
	Memory bool
}

// ParseURL parses "sqlite:PATH", "sqlite://PATH" (PATH absolute as in
// sqlite:///abs/file.db, or relative as in sqlite://rel.db) and
// "sqlite::memory:". A relative PATH is resolved against the working
// directory. A query string ("?…") is not accepted: sluice sets the pragmas.
func ParseURL(u string) (Location, error) {
	rest, ok := cutScheme(u)
	if !ok {
		return Location{}, fmt.Errorf("%w %q: want sqlite:PATH", ErrBadURL, redact.Conn(u))
	}
	rest = strings.TrimPrefix(rest, "//")
	if rest == ":memory:" {
		return Location{Path: ":memory:", Memory: true}, nil
	}
	if rest == "" {
		return Location{}, fmt.Errorf("%w %q: missing file path", ErrBadURL, redact.Conn(u))
	}
	if strings.ContainsAny(rest, "?#") {
		return Location{}, fmt.Errorf("%w %q: query parameters are not supported", ErrBadURL, redact.Conn(u))
	}
	if p, err := url.PathUnescape(rest); err == nil {
		rest = p
	}
	abs, err := filepath.Abs(rest)
	if err != nil {
		return Location{}, fmt.Errorf("%w %q: %w", ErrBadURL, redact.Conn(u), err)
	}
	return Location{Path: abs}, nil
}

func cutScheme(u string) (string, bool) {
	i := strings.IndexByte(u, ':')
	if i < 0 || !strings.EqualFold(u[:i], "sqlite") {
		return "", false
	}
	return u[i+1:], true
}

// Open opens (creating the file if needed) the database at loc with
// database/sql and the modernc driver. Every connection runs with
// journal_mode=WAL (file databases), busy_timeout=BusyTimeout,
// foreign_keys=ON, recursive_triggers=ON (so that REPLACE conflict
// resolution fires delete triggers, which change capture relies on), and
// double-quoted string literals off (a "name" is always an identifier).
// Registered SQL functions (RegisterFunctions) are available on every
// connection. A :memory: database is one shared in-memory database per Open
// (all pool connections see it), gone when the *sql.DB is closed.
func Open(ctx context.Context, loc Location) (*sql.DB, error) {
	dsn, err := dsnOf(loc)
	if err != nil {
		return nil, err
	}
	return openDSN(ctx, loc, dsn)
}

// openPair opens two *sql.DB on loc's database (the same private database
// for :memory:), as Open does: a Handle's write and read pools.
func openPair(ctx context.Context, loc Location) (w, r *sql.DB, err error) {
	dsn, err := dsnOf(loc)
	if err != nil {
		return nil, nil, err
	}
	if w, err = openDSN(ctx, loc, dsn); err != nil {
		return nil, nil, err
	}
	if r, err = openDSN(ctx, loc, dsn); err != nil {
		w.Close()
		return nil, nil, err
	}
	return w, r, nil
}

func dsnOf(loc Location) (string, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "recursive_triggers(1)")
	// A double-quoted name that matches no column is an error, not a
	// string literal (SQLite's legacy fallback would make a misspelled
	// column in WHERE silently compare a constant).
	q.Add("_dqs", "0")
	if loc.Memory {
		var b [8]byte
		_, _ = rand.Read(b[:])
		q.Set("vfs", "memdb")
		return "file:/sluice-mem-" + hex.EncodeToString(b[:]) + "?" + q.Encode(), nil
	}
	if dir := filepath.Dir(loc.Path); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			return "", fmt.Errorf("open sqlite database %s: %w", loc.Path, err)
		}
	}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	return "file:" + (&url.URL{Path: loc.Path}).EscapedPath() + "?" + q.Encode(), nil
}

func openDSN(ctx context.Context, loc Location, dsn string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite database %s: %w", loc.Path, err)
	}
	if loc.Memory {
		// memdb is freed with its last connection: keep one open.
		db.SetConnMaxIdleTime(0)
		db.SetConnMaxLifetime(0)
		db.SetMaxIdleConns(4)
	} else {
		db.SetConnMaxLifetime(ConnMaxLifetime)
		// Keep connections for reuse: database/sql keeps 2 idle by default,
		// so a process with many jobs on one file (sluice serve) closed and
		// opened connections all the time, and each new connection parses
		// the whole schema again (issue #19). The number open is not
		// capped here (a run may hold one connection while it needs
		// another); a Handle (OpenShared) caps it.
		db.SetMaxIdleConns(MaxIdleConns)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite database %s: %w", loc.Path, err)
	}
	return db, nil
}

// MustExist returns an error wrapping ErrNoDatabase, naming the path, when
// loc is a file that does not exist; nil for an existing file or an
// in-memory database. Callers that only read check it before Open, which
// would create the file.
func (loc Location) MustExist() error {
	if loc.Memory {
		return nil
	}
	if _, err := os.Stat(loc.Path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s (check the path; sluice sql creates a database)", ErrNoDatabase, loc.Path)
	}
	return nil
}
