package postgres

import (
	"context"

	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// catalogVersionSQL fingerprints, in one statement, everything planning a
// job reads from this database's catalogs (runner.CatalogVersioner):
//
//   - the stream's record except its position (which every run moves):
//     dropped and created again, its ID changes;
//   - the xmin of the table's sluice.tracking row (tracking enabled
//     again, the log brought in line: attnames, paired key, oid);
//   - the oid each named table ($2: the target, a dead-letter table,
//     quoted as the sink quotes them) resolves to now, '-' when none:
//     a table created or dropped under the name;
//   - for the stream's table (by the oid tracking recorded), its change
//     log and the named tables: the name, schema and kind in their
//     pg_class rows (RENAME, SET SCHEMA) and whether each is visible on
//     the search_path — not the rows' xmin: TRUNCATE, which every purge
//     of a change log runs, writes a new pg_class row — and the xmin of every
//     row of pg_attribute (ADD/DROP/RENAME/ALTER COLUMN, NOT NULL), pg_index
//     and pg_constraint (keys, UNIQUE, CHECK, DEFERRABLE), pg_attrdef
//     (defaults), pg_description (comments: the marks of rows still to be
//     re-read from the table, addcolumn.go) and pg_type of domain-typed
//     columns (ALTER DOMAIN).
//
// Any committed DDL on those objects writes one of those rows with a new
// xmin, or deletes one, so the text changes. In-place catalog updates
// (VACUUM and ANALYZE setting relpages, reltuples) keep the xmin: they do
// not make plans again.
const catalogVersionSQL = `WITH s AS (
	SELECT s.id, s.table_name, s.mode, s.show_initial_rows, s.stale_after, s.stale_since FROM sluice.streams s WHERE s.name = $1
), tr AS (
	SELECT t.xmin::text AS x, t.relid, t.log_table FROM sluice.tracking t WHERE t.table_name = (SELECT s.table_name FROM s)
), named AS (
	SELECT u.ord, pg_catalog.to_regclass(u.n)::oid AS oid FROM pg_catalog.unnest($2::text[]) WITH ORDINALITY AS u(n, ord)
), rels AS (
	SELECT tr.relid AS oid FROM tr WHERE tr.relid IS NOT NULL
	UNION SELECT pg_catalog.to_regclass('sluice.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(tr.log_table))::oid FROM tr
	UNION SELECT named.oid FROM named WHERE named.oid IS NOT NULL
)
SELECT pg_catalog.concat_ws('|',
	coalesce((SELECT pg_catalog.concat_ws(',', s.id, s.table_name, s.mode, s.show_initial_rows, s.stale_after, s.stale_since) FROM s), '-'),
	coalesce((SELECT tr.x FROM tr), '-'),
	coalesce((SELECT pg_catalog.string_agg(coalesce(named.oid::text, '-'), ',' ORDER BY named.ord) FROM named), '-'),
	coalesce((SELECT pg_catalog.md5(pg_catalog.string_agg(pg_catalog.concat_ws(':', c.oid, c.relname, c.relnamespace, c.relkind, pg_catalog.pg_table_is_visible(c.oid)), ',' ORDER BY c.oid))
		FROM pg_catalog.pg_class c WHERE c.oid IN (SELECT rels.oid FROM rels)), '-'),
	coalesce((SELECT pg_catalog.md5(pg_catalog.string_agg(a.attrelid::text || ':' || a.attnum::text || ':' || a.xmin::text, ',' ORDER BY a.attrelid, a.attnum))
		FROM pg_catalog.pg_attribute a WHERE a.attrelid IN (SELECT rels.oid FROM rels)), '-'),
	coalesce((SELECT pg_catalog.md5(pg_catalog.string_agg(i.indexrelid::text || ':' || i.xmin::text, ',' ORDER BY i.indexrelid))
		FROM pg_catalog.pg_index i WHERE i.indrelid IN (SELECT rels.oid FROM rels)), '-'),
	coalesce((SELECT pg_catalog.md5(pg_catalog.string_agg(k.oid::text || ':' || k.xmin::text, ',' ORDER BY k.oid))
		FROM pg_catalog.pg_constraint k WHERE k.conrelid IN (SELECT rels.oid FROM rels)), '-'),
	coalesce((SELECT pg_catalog.md5(pg_catalog.string_agg(d.oid::text || ':' || d.xmin::text, ',' ORDER BY d.oid))
		FROM pg_catalog.pg_attrdef d WHERE d.adrelid IN (SELECT rels.oid FROM rels)), '-'),
	coalesce((SELECT pg_catalog.md5(pg_catalog.string_agg(d.objoid::text || ':' || d.objsubid::text || ':' || d.xmin::text, ',' ORDER BY d.objoid, d.objsubid))
		FROM pg_catalog.pg_description d WHERE d.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objoid IN (SELECT rels.oid FROM rels)), '-'),
	coalesce((SELECT pg_catalog.md5(pg_catalog.string_agg(DISTINCT t.oid::text || ':' || t.xmin::text, ','))
		FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid IN (SELECT rels.oid FROM rels) AND t.typtype = 'd'), '-'))`

// CatalogVersion implements runner.CatalogVersioner: catalogVersionSQL for
// stream ("" for none) and tables (as the sink names them, quoted as
// sinks/postgres quotes them), in one statement on the pool. A database
// without sluice's schema has a version of its own ("no sluice schema"):
// planning then reports what is missing. Other errors are the
// database's, wrapped, with the password scrubbed.
func (b *Backend) CatalogVersion(ctx context.Context, stream string, tables []string) (string, error) {
	refs := make([]string, len(tables))
	for i, t := range tables {
		refs[i] = sinkpg.Quote(t)
	}
	var v string
	err := b.pool.QueryRow(ctx, catalogVersionSQL, stream, refs).Scan(&v)
	if isUndefinedTable(err) {
		return "no sluice schema", nil
	}
	if err != nil {
		return "", b.wrap(err, "read the catalog version of table stream %s", stream)
	}
	return v, nil
}
