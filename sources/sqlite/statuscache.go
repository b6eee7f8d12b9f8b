package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/sluicedata/sluice/internal/sqlitex"
)

// schemaFacts remembers what the schema said — about tracked tables'
// captures and which of sluice's tables exist — at one schema version of
// the database, so that a run does not read the schema again while no
// DDL ran (issue #19). sqlite_schema has no index: every inspectCapture
// and definition read all of it, megabytes at 1,000 tracked tables (a
// table, its change log, two helper tables and six triggers each), and
// each run checked the capture three times, twice each; listing sluice's
// tables (pragma_table_list) for every advance walked thousands of tables.
//
// PRAGMA schema_version is the schema cookie, which SQLite bumps on every
// change to sqlite_schema and compares itself to decide whether a
// connection's parsed schema is still good
// (https://sqlite.org/fileformat2.html#schema_cookie): equal versions of
// the committed schema mean an equal sqlite_schema. Only facts read from
// the schema are kept (never sluice_tracking's rows, which are data).
//
// A fact is looked up by the version the caller's connection reads now,
// and stored only when it was read from a committed schema of that
// version: on a *sql.DB or in a read transaction (*sql.Tx, which this
// package opens for reads only) when the version read before and after is
// the same — so it was read at that version even when the statements ran
// on different connections — and in a *sqlitex.Tx that has changed no
// schema (its version is still the one it began with). A write
// transaction that changed the schema reads a version no committed schema
// had yet; what it reads is never stored, as it may roll back and the
// version be taken by another change.
type schemaFacts struct {
	mu     sync.Mutex
	ver    int64
	live   map[string]liveCapture // by WatchKey(log)
	defs   map[string]string      // by WatchKey(table)
	tables map[string]bool        // sluiceTables; nil until read
}

// schemaVersion reads PRAGMA schema_version on q.
func schemaVersion(ctx context.Context, q sqlitex.Querier) (int64, error) {
	var v int64
	if err := q.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read PRAGMA schema_version: %w", err)
	}
	return v, nil
}

// at returns the facts map for version ver under f.mu, dropping those of
// another version.
func (f *schemaFacts) at(ver int64) {
	if f.ver != ver || f.live == nil {
		f.ver, f.live, f.defs, f.tables = ver, map[string]liveCapture{}, map[string]string{}, nil
	}
}

// schemaRead is one read of schema facts on q: the version it began at
// and whether what it reads may be stored.
type schemaRead struct {
	q     sqlitex.Querier
	ver   int64
	check bool // store only if the version is still ver after the read
	store bool
}

func (b *Backend) beginSchemaRead(ctx context.Context, q sqlitex.Querier) (schemaRead, error) {
	v, err := schemaVersion(ctx, q)
	if err != nil {
		return schemaRead{}, err
	}
	r := schemaRead{q: q, ver: v}
	switch t := q.(type) {
	case *sql.DB, *sql.Tx, *sqlitex.Handle:
		r.store, r.check = true, true
	case *sqlitex.Tx:
		r.store = t.StartSchemaVersion() == v
	}
	return r, nil
}

// storable reports whether facts read since beginSchemaRead may be stored.
func (r schemaRead) storable(ctx context.Context) bool {
	if !r.store {
		return false
	}
	if !r.check {
		return true
	}
	v, err := schemaVersion(ctx, r.q)
	return err == nil && v == r.ver
}

// captureStatus is status(ctx, q, c) answered from b.facts while the
// schema version is the one the facts were read at: one PRAGMA instead of
// two scans of sqlite_schema.
func (b *Backend) captureStatus(ctx context.Context, q sqlitex.Querier, c captured) (captureState, liveCapture, error) {
	r, err := b.beginSchemaRead(ctx, q)
	if err != nil {
		return 0, liveCapture{}, err
	}
	b.facts.mu.Lock()
	b.facts.at(r.ver)
	live, hasLive := b.facts.live[WatchKey(c.log)]
	def, hasDef := b.facts.defs[WatchKey(c.table)]
	b.facts.mu.Unlock()
	if !hasLive {
		if live, err = inspectCapture(ctx, q, c); err != nil {
			return 0, live, err
		}
	}
	st, decided := liveState(live, c)
	if !decided && !hasDef {
		if def, err = definition(ctx, q, c.table); err != nil {
			return 0, live, err
		}
	}
	if (!hasLive || !decided && !hasDef) && r.storable(ctx) {
		b.facts.mu.Lock()
		b.facts.at(r.ver)
		b.facts.live[WatchKey(c.log)] = live
		if !decided {
			b.facts.defs[WatchKey(c.table)] = def
		}
		b.facts.mu.Unlock()
	}
	if decided {
		return st, live, nil
	}
	if def != c.tableSQL {
		return capStale, live, nil
	}
	return capFresh, live, nil
}

// sluiceTablesOf is sluiceTables(ctx, q) answered from b.facts while the
// schema version is the one they were read at. The map is shared: do not
// modify it.
func (b *Backend) sluiceTablesOf(ctx context.Context, q sqlitex.Querier) (map[string]bool, error) {
	r, err := b.beginSchemaRead(ctx, q)
	if err != nil {
		return nil, err
	}
	b.facts.mu.Lock()
	b.facts.at(r.ver)
	tables := b.facts.tables
	b.facts.mu.Unlock()
	if tables != nil {
		return tables, nil
	}
	if tables, err = sluiceTables(ctx, q); err != nil {
		return nil, err
	}
	if r.storable(ctx) {
		b.facts.mu.Lock()
		b.facts.at(r.ver)
		b.facts.tables = tables
		b.facts.mu.Unlock()
	}
	return tables, nil
}
