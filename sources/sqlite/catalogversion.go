package sqlite

import (
	"context"
	"fmt"

	"github.com/sluicedata/sluice/runner"
)

var _ runner.CatalogVersioner = (*Backend)(nil)

// catalogVersionSQL fingerprints, in one statement, everything planning a
// job reads from this file (runner.CatalogVersioner):
//
//   - PRAGMA schema_version, which SQLite increments on every change of
//     the file's schema by any connection: CREATE, DROP, ALTER of any
//     table (the stream's table, its change log, the target, a
//     dead-letter table) and of the capture triggers; TEMP objects (the
//     sink's staging tables) do not count;
//   - the stream's row of sluice_streams except its offset, which every
//     run moves: dropped and created again, its id changes;
//   - the tracking row of its table (enabled again, the log brought in
//     line with the table's columns).
//
// Writes of rows leave it unchanged, so a run of an unchanged job reuses
// its plan (runner.PlanCache).
const catalogVersionSQL = `SELECT (SELECT schema_version FROM pragma_schema_version) || '|' ||
	coalesce((SELECT id || ',' || tbl || ',' || mode || ',' || show_initial_rows || ',' || stale_after || ',' || coalesce(stale_since, '') FROM sluice_streams WHERE name = ?1), '-') || '|' ||
	coalesce((SELECT log || ',' || columns || ',' || enabled || ',' || coalesce(table_sql, '') FROM sluice_tracking WHERE tbl = (SELECT tbl FROM sluice_streams WHERE name = ?1)), '-')`

// CatalogVersion implements runner.CatalogVersioner: one read of the
// file's schema version and of sluice's rows for stream ("" for none; the
// named tables are covered by the schema version). It returns the
// database's error, wrapped.
func (b *Backend) CatalogVersion(ctx context.Context, stream string, tables []string) (string, error) {
	var v string
	if err := b.db.QueryRowContext(ctx, catalogVersionSQL, stream).Scan(&v); err != nil {
		return "", fmt.Errorf("sqlite %s: catalog version: %w", b.loc.Path, err)
	}
	return v, nil
}
