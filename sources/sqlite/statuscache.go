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
	snap   *schemaSnapshot // nil until read at ver
	tables map[string]bool // sluiceTables; nil until read
}

// schemaSnapshot is what one scan of sqlite_schema says about every
// table's capture: the capture triggers (by name) and every table's
// definition (by WatchKey of its name). The first check of a capture at
// a schema version reads it for all tracked tables at once: a read per
// table scanned all of sqlite_schema (it has no index) for each, so
// describing N streams after a start or a DDL cost N scans of a schema
// that grows with N (issue #19: the first runs of 1,000 jobs took 30 s).
type schemaSnapshot struct {
	triggers map[string]snapTrigger // by exact name, as inspectCapture's IN compares
	defs     map[string]string      // by WatchKey(tbl_name): definition's text
}

// snapTrigger is one capture trigger in a schemaSnapshot: the table it is
// on and, for an AFTER INSERT trigger (sluice_capture_ins_…), its text.
type snapTrigger struct{ on, sql string }

// readSnapshot reads a schemaSnapshot on q in one scan of sqlite_schema.
func readSnapshot(ctx context.Context, q sqlitex.Querier) (*schemaSnapshot, error) {
	rows, err := q.QueryContext(ctx, `SELECT type, name, tbl_name, CASE WHEN type <> 'trigger' OR name LIKE 'sluice\_capture\_ins\_%' ESCAPE '\' THEN sql END
FROM sqlite_schema
WHERE type = 'trigger' AND name LIKE 'sluice\_capture\_%' ESCAPE '\' OR type IN ('table', 'index') AND sql IS NOT NULL
ORDER BY type DESC, name`)
	if err != nil {
		return nil, fmt.Errorf("read the capture triggers and table definitions: %w", err)
	}
	defer rows.Close()
	snap := &schemaSnapshot{triggers: map[string]snapTrigger{}, defs: map[string]string{}}
	for rows.Next() {
		var typ, name, tbl string
		var text sql.NullString
		if err := rows.Scan(&typ, &name, &tbl, &text); err != nil {
			return nil, fmt.Errorf("read the capture triggers and table definitions: %w", err)
		}
		if typ == "trigger" {
			snap.triggers[name] = snapTrigger{on: tbl, sql: text.String}
			continue
		}
		// definition's group_concat, in its order (type DESC, name).
		k := WatchKey(tbl)
		if d, ok := snap.defs[k]; ok {
			snap.defs[k] = d + "\n" + text.String
		} else {
			snap.defs[k] = text.String
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the capture triggers and table definitions: %w", err)
	}
	return snap, nil
}

// live is inspectCapture(c) as the snapshot says.
func (s *schemaSnapshot) live(c captured) liveCapture {
	sfx := suffix(c.log)
	var l liveCapture
	for _, k := range triggerKinds {
		t, ok := s.triggers[triggerName(k, sfx)]
		if !ok {
			continue
		}
		l.triggers++
		l.on = t.on
		if k == "ins" {
			l.insSQL = t.sql
		}
	}
	return l
}

// schemaVersion reads PRAGMA schema_version on q.
func schemaVersion(ctx context.Context, q sqlitex.Querier) (int64, error) {
	var v int64
	if err := q.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read PRAGMA schema_version: %w", err)
	}
	return v, nil
}

// at drops the facts of another version than ver; f.mu is held.
func (f *schemaFacts) at(ver int64) {
	if f.ver != ver {
		f.ver, f.snap, f.tables = ver, nil, nil
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
// two scans of sqlite_schema. Without them, a read whose facts may be
// stored (schemaRead.store) reads every table's at once (readSnapshot);
// one that may not (a write transaction that changed the schema, a
// *sql.Conn) reads c's alone, as status does.
func (b *Backend) captureStatus(ctx context.Context, q sqlitex.Querier, c captured) (captureState, liveCapture, error) {
	r, err := b.beginSchemaRead(ctx, q)
	if err != nil {
		return 0, liveCapture{}, err
	}
	var snap *schemaSnapshot
	b.facts.mu.Lock()
	if b.facts.ver == r.ver {
		snap = b.facts.snap
	}
	b.facts.mu.Unlock()
	if snap == nil {
		if !r.store {
			return status(ctx, q, c)
		}
		if snap, err = readSnapshot(ctx, q); err != nil {
			return 0, liveCapture{}, err
		}
		if r.storable(ctx) {
			b.facts.mu.Lock()
			b.facts.at(r.ver)
			b.facts.snap = snap
			b.facts.mu.Unlock()
		}
	}
	live := snap.live(c)
	if st, decided := liveState(live, c); decided {
		return st, live, nil
	}
	if snap.defs[WatchKey(c.table)] != c.tableSQL {
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
