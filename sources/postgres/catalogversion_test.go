package postgres

import (
	"context"
	"testing"
)

// TestCatalogVersion: every DDL a job's plan depends on changes the
// catalog version of its stream and sink tables — on the stream's table
// (ADD, RENAME, ALTER TYPE, DROP COLUMN, NOT NULL, CHECK, RENAME TO), on
// the target (columns, defaults, comments, keys, dropped and created
// again, domain-typed columns), a dead-letter table created under its
// name, the stream dropped and created again — while writes, runs that
// consume and purge the log (TRUNCATE), VACUUM ANALYZE, and DDL on other
// tables leave it as it was (a plan made again needlessly is harmless, a
// stale one is not; the second list only keeps the cache useful).
func TestCatalogVersion(t *testing.T) {
	b, _ := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE t (id int PRIMARY KEY, v text)`, `CREATE TABLE r (id int PRIMARY KEY, v text)`)
	track(t, b, "t")
	mkStream(t, b, "s", "t", "APPEND_ONLY", false)
	tables := []string{"r", "dl"}
	prev, err := b.CatalogVersion(ctx, "s", tables)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		sql     []string
		consume bool // read the stream and advance its offset (the log is purged)
		changed bool
	}{
		{name: "a write", sql: []string{`INSERT INTO t VALUES (1, 'a')`}},
		{name: "a run consuming it (offset moved, log purged)", consume: true},
		{name: "VACUUM ANALYZE", sql: []string{`VACUUM ANALYZE t`, `VACUUM ANALYZE r`}},
		{name: "DDL on another table", sql: []string{`CREATE TABLE other (id int)`, `ALTER TABLE other ADD COLUMN c int`}},
		{name: "TRUNCATE of the target", sql: []string{`TRUNCATE r`}},
		{name: "source ADD COLUMN", sql: []string{`ALTER TABLE t ADD COLUMN c int`}, changed: true},
		{name: "source RENAME COLUMN", sql: []string{`ALTER TABLE t RENAME COLUMN c TO c2`}, changed: true},
		{name: "source ALTER COLUMN TYPE", sql: []string{`ALTER TABLE t ALTER COLUMN c2 TYPE bigint`}, changed: true},
		{name: "source DROP COLUMN", sql: []string{`ALTER TABLE t DROP COLUMN c2`}, changed: true},
		{name: "source SET NOT NULL", sql: []string{`ALTER TABLE t ALTER COLUMN v SET NOT NULL`}, changed: true},
		{name: "source CHECK", sql: []string{`ALTER TABLE t ADD CONSTRAINT t_v CHECK (v <> '')`}, changed: true},
		{name: "source RENAME TO", sql: []string{`ALTER TABLE t RENAME TO t2`}, changed: true},
		{name: "source renamed back", sql: []string{`ALTER TABLE t2 RENAME TO t`}, changed: true},
		{name: "target ADD COLUMN with a default", sql: []string{`ALTER TABLE r ADD COLUMN x int DEFAULT 1`}, changed: true},
		{name: "target SET DEFAULT", sql: []string{`ALTER TABLE r ALTER COLUMN x SET DEFAULT 2`}, changed: true},
		{name: "target column comment", sql: []string{`COMMENT ON COLUMN r.x IS 'n'`}, changed: true},
		{name: "target key dropped", sql: []string{`ALTER TABLE r DROP CONSTRAINT r_pkey`}, changed: true},
		{name: "target key added", sql: []string{`ALTER TABLE r ADD PRIMARY KEY (id)`}, changed: true},
		{name: "target domain column", sql: []string{`CREATE DOMAIN dom AS text`, `ALTER TABLE r ADD COLUMN d dom`}, changed: true},
		{name: "its domain altered", sql: []string{`ALTER DOMAIN dom SET NOT NULL`}, changed: true},
		{name: "target dropped", sql: []string{`DROP TABLE r`}, changed: true},
		{name: "target created again", sql: []string{`CREATE TABLE r (id int PRIMARY KEY, v text)`}, changed: true},
		{name: "dead-letter table created", sql: []string{`CREATE TABLE dl (id bigserial)`}, changed: true},
		{name: "change log column altered by hand", sql: []string{`ALTER TABLE sluice.log_t ADD COLUMN junk int`}, changed: true},
	}
	for _, st := range steps {
		sqlExec(t, b, st.sql...)
		if st.consume {
			read(t, b, "s", true)
		}
		v, err := b.CatalogVersion(ctx, "s", tables)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if changed := v != prev; changed != st.changed {
			t.Errorf("%s: version changed %v, want %v (%s -> %s)", st.name, changed, st.changed, prev, v)
		}
		prev = v
	}
	// The stream dropped, then created again (a new ID).
	if err := b.DropStream(ctx, "s", false); err != nil {
		t.Fatal(err)
	}
	dropped, err := b.CatalogVersion(ctx, "s", tables)
	if err != nil {
		t.Fatal(err)
	}
	if dropped == prev {
		t.Errorf("DROP TABLE STREAM: version unchanged (%s)", prev)
	}
	mkStream(t, b, "s", "t", "APPEND_ONLY", false)
	again, err := b.CatalogVersion(ctx, "s", tables)
	if err != nil {
		t.Fatal(err)
	}
	if again == prev || again == dropped {
		t.Errorf("CREATE TABLE STREAM again: version %s, before the drop %s, dropped %s", again, prev, dropped)
	}
}
