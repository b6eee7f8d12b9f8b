package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sluicedata/sluice/internal/redact"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

func init() {
	runner.Register(open, "postgres", "postgresql")
}

func open(ctx context.Context, url string, log *slog.Logger) (runner.Backend, error) {
	return Open(ctx, url, log)
}

// Backend is an open connection (a pgxpool) to one PostgreSQL database. It
// implements runner.Backend, Executor, Source, Pushdowner and Sink.
type Backend struct {
	// LockWait bounds how long enabling or disabling change tracking
	// waits in all for its lock on the table (locks.go); 0 means
	// DefaultLockWait. Set it before use.
	LockWait time.Duration

	pool     *pgxpool.Pool
	log      *slog.Logger
	identity string
	redacted string
	secret   string // the password, scrubbed from every error
	version  int    // server_version_num, e.g. 150020
	sink     *sinkpg.Sink

	mu      sync.Mutex
	ensured bool   // the sluice schema exists
	system  string // system_identifier, once read

	streamlessAt time.Time // the last purgeStreamless after a run (throttled, under mu)
}

// tempBuffers is the temp_buffers of sluice's sessions: the most memory a
// session may use for the pages of its TEMP tables (pushdown's read, the
// sink's staging and net-change tables) before writing them to files. At
// PostgreSQL's default of 8MB a run of 632k net changes (about 100MB of
// TEMP pages) wrote and re-read most of them, and its read and MERGE took
// 8.9 s instead of 8.0 s (bench/pgapply's workload). PostgreSQL allocates
// local buffers as they are first used, so a session with small TEMP
// tables uses little of it.
const tempBuffers = "256MB"

// transportSettings are the settings every sluice session runs with, so
// that the text form of a value reads back as the same value in any
// other sluice session: ISO dates with the year first whatever the
// database's DateStyle, PostgreSQL-style intervals, floats that read back
// exactly (shortest-precise output, PostgreSQL 12+), bytea in hex.
var transportSettings = map[string]string{
	"datestyle":          "ISO, YMD",
	"intervalstyle":      "postgres",
	"extra_float_digits": "3",
	"bytea_output":       "hex",
}

// Open connects to the database of url (postgres://…, postgresql://… or a
// key=value DSN) and checks that the server answers. Errors never contain
// the password.
func Open(ctx context.Context, url string, log *slog.Logger) (*Backend, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	redacted := redact.Conn(url)
	if hint := redact.Ambiguous(url); hint != "" {
		return nil, &runner.ConnError{Err: fmt.Errorf("postgres: connection %s: %w: %s", redacted, ErrBadConn, hint)}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &runner.ConnError{Err: fmt.Errorf("postgres: parse connection %s: %w", redacted, redact.Error(err, url))}
	}
	secret := cfg.ConnConfig.Password
	// A bounded pool per database whatever the machine (pgxpool's default
	// is max(4, CPUs)); a URL's own pool_max_conns wins.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = int32(runner.MaxConns(ctx))
	}
	// expr's PostgreSQL dialect assumes UTC for zone-less text.
	if _, set := cfg.ConnConfig.RuntimeParams["timezone"]; !set {
		cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	}
	// The text form of values must not depend on the settings a database
	// or role gives its sessions (ALTER DATABASE … SET DateStyle = 'SQL,
	// DMY', extra_float_digits = 0, IntervalStyle = 'sql_standard',
	// bytea_output = 'escape'): values that travel as text (arrays,
	// ranges, json, intervals, …) are written by one session and parsed
	// by another, in another database, whose settings may differ. Every
	// session sluice opens fixes them, as pg_dump does for its own output
	// (a startup parameter wins over a database's or role's setting, and
	// over the URL's: these are how sluice moves values, not a choice of
	// the user).
	for k, v := range transportSettings {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	// Runs materialize their reads and stage their rows in TEMP tables;
	// temp_buffers can only be set before a session's first use of one, so
	// it is set at connection (a URL's own setting wins).
	if _, set := cfg.ConnConfig.RuntimeParams["temp_buffers"]; !set {
		cfg.ConnConfig.RuntimeParams["temp_buffers"] = tempBuffers
	}
	b := &Backend{
		log:      log,
		identity: fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database),
		redacted: redacted,
		secret:   secret,
	}
	b.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect %s: %w", redacted, hide(redact.Error(err, url), secret))
	}
	if err := b.pool.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&b.version); err != nil {
		b.pool.Close()
		return nil, fmt.Errorf("postgres: connect %s: %w", redacted, hide(redact.Error(err, url), secret))
	}
	if b.version < 130000 {
		b.pool.Close()
		return nil, fmt.Errorf("postgres: %s: server version %d is older than 13 (pg_current_xact_id and xid8 are needed)", redacted, b.version)
	}
	b.sink = sinkpg.New(b.pool, b.version, log)
	log.Debug("postgres backend open", "conn", redacted, "server_version_num", b.version)
	return b, nil
}

// Scheme returns "postgres".
func (b *Backend) Scheme() string { return "postgres" }

// Identity returns host:port/dbname.
func (b *Backend) Identity() string { return b.identity }

// Redacted returns the connection string with the password masked.
func (b *Backend) Redacted() string { return b.redacted }

// ServerVersion returns server_version_num (150020 for 15.20).
func (b *Backend) ServerVersion() int { return b.version }

// Pool returns the connection pool (tests and tools).
func (b *Backend) Pool() *pgxpool.Pool { return b.pool }

// Close closes the pool.
func (b *Backend) Close() error {
	b.pool.Close()
	return nil
}

// wrap adds context to err and scrubs the password.
func (b *Backend) wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return hide(fmt.Errorf("postgres %s: %s: %w", b.identity, fmt.Sprintf(format, args...), err), b.secret)
}

// schemaDDL creates sluice's own tables. sluice.checkpoints is created by
// package sinks/postgres (EnsureCheckpoints).
const schemaDDL = `
CREATE SCHEMA IF NOT EXISTS sluice;
CREATE TABLE IF NOT EXISTS sluice.tracking (
	table_name  text PRIMARY KEY,
	log_table   text NOT NULL,
	func_name   text NOT NULL,
	enabled_at  timestamptz NOT NULL DEFAULT now(),
	paired_key  text[],
	attnames    text[],
	relid       oid
);
DO $$ BEGIN
	-- a schema from before paired_key; checked first, so the ALTER's lock is
	-- taken only when it is missing
	IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'sluice.tracking'::regclass AND attname = 'paired_key' AND NOT attisdropped) THEN
		ALTER TABLE sluice.tracking ADD COLUMN paired_key text[];
	END IF;
	-- attnames (the table's column names by attnum when tracking was last
	-- enabled, '' for a dropped one): a schema from before it
	IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'sluice.tracking'::regclass AND attname = 'attnames' AND NOT attisdropped) THEN
		ALTER TABLE sluice.tracking ADD COLUMN attnames text[];
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'sluice.tracking'::regclass AND attname = 'relid' AND NOT attisdropped) THEN
		ALTER TABLE sluice.tracking ADD COLUMN relid oid;
	END IF;
END $$;
-- columns_are: true while the table rel has exactly the live columns
-- names/types/mods (indexed by attnum, n of them); the capture functions'
-- shape check (shapeCheck), declared IMMUTABLE so that PostgreSQL folds
-- it into their cached plans. Created once, never replaced: the capture
-- functions of every tracked table call it.
DO $$ BEGIN
	IF pg_catalog.to_regprocedure('sluice.columns_are(pg_catalog.oid, pg_catalog.name[], pg_catalog.oid[], pg_catalog.int4[], pg_catalog.int4)') IS NULL THEN
		CREATE FUNCTION sluice.columns_are(pg_catalog.oid, pg_catalog.name[], pg_catalog.oid[], pg_catalog.int4[], pg_catalog.int4)
			RETURNS pg_catalog.bool LANGUAGE sql IMMUTABLE AS $f$
		SELECT (pg_catalog.count(*) FILTER (WHERE a.attname OPERATOR(pg_catalog.=) $2[a.attnum]
				AND a.atttypid OPERATOR(pg_catalog.=) $3[a.attnum] AND a.atttypmod OPERATOR(pg_catalog.=) $4[a.attnum]) OPERATOR(pg_catalog.=) $5
			AND pg_catalog.count(*) OPERATOR(pg_catalog.=) $5) IS TRUE
		FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) $1 AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
		$f$;
	END IF;
END $$;
` + listenersDDL + `
CREATE TABLE IF NOT EXISTS sluice.streams (
	name              text PRIMARY KEY,
	table_name        text NOT NULL,
	mode              text NOT NULL,
	show_initial_rows boolean NOT NULL,
	comment           text NOT NULL DEFAULT '',
	created_at        timestamptz NOT NULL DEFAULT now(),
	id                text NOT NULL,
	position          text NOT NULL,
	stale_after       bigint NOT NULL DEFAULT 1209600,
	stale_since       timestamptz
);
DO $$ BEGIN
	-- streams from before retention (stale_after in seconds, 14 days)
	IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'sluice.streams'::regclass AND attname = 'stale_after' AND NOT attisdropped) THEN
		ALTER TABLE sluice.streams ADD COLUMN stale_after bigint NOT NULL DEFAULT 1209600, ADD COLUMN stale_since timestamptz;
	END IF;
END $$;`

// schemaComplete is true when schema sluice holds every table, column and
// function schemaDDL and sinks/postgres.EnsureCheckpoints create (a schema
// of an earlier sluice lacks sluice.columns_are, which every capture
// function written now calls): then no DDL is
// run at all, so a role without CREATE on the database (an application
// role reading or writing streams that an owner set up) can use it.
// It reads the catalogs by name, which every role may.
const schemaComplete = `SELECT count(*) = 6 FROM pg_catalog.pg_attribute a
	JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = 'sluice' AND NOT a.attisdropped AND (c.relname, a.attname) IN
		(('tracking', 'relid'), ('tracking', 'attnames'), ('tracking', 'paired_key'), ('streams', 'stale_since'), ('listeners', 'pid'), ('checkpoints', 'updated_at'))
	AND EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'sluice' AND p.proname = 'columns_are')`

// ensureSchema creates the sluice schema and tables once per backend,
// unless they are all there (schemaComplete). Concurrent sluice processes
// serialize on an advisory lock. A role that may not create them gets an
// error saying who can.
func (b *Backend) ensureSchema(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ensured {
		return nil
	}
	var complete bool
	if err := b.pool.QueryRow(ctx, schemaComplete).Scan(&complete); err != nil {
		return b.wrap(err, "read schema sluice")
	}
	if complete {
		b.ensured = true
		return nil
	}
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('sluice.schema'))`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, schemaDDL); err != nil {
			return err
		}
		return sinkpg.EnsureCheckpoints(ctx, tx)
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42501" {
		return b.wrap(err, "create schema sluice (sluice's own tables are created on first use by a role with CREATE on the database, e.g. the owner of the tables to track: run any sluice command as that role once, or GRANT CREATE ON DATABASE to this one)")
	}
	if err != nil {
		return b.wrap(err, "create schema sluice")
	}
	b.ensured = true
	return nil
}

// systemID returns the cluster's system_identifier.
func (b *Backend) systemID(ctx context.Context, q sinkpg.Querier) (string, error) {
	b.mu.Lock()
	s := b.system
	b.mu.Unlock()
	if s != "" {
		return s, nil
	}
	if err := q.QueryRow(ctx, `SELECT system_identifier::text FROM pg_control_system()`).Scan(&s); err != nil {
		return "", b.wrap(err, "read system_identifier (pg_control_system())")
	}
	b.mu.Lock()
	b.system = s
	b.mu.Unlock()
	return s, nil
}

var _ interface {
	runner.Executor
	runner.Source
	runner.Sink
	runner.Pushdowner
	runner.LogKeeper
} = (*Backend)(nil)
