package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// Tracked is a table with change tracking: the table and its change log.
type Tracked struct {
	Table   *sinkpg.Table // the table's columns and primary key
	Log     string        // log table name in schema sluice, e.g. "log_orders"
	Func    string        // capture function name in schema sluice
	Created string        // when tracking was enabled (text)
	// PairedKey is the primary key under which the capture function
	// marks an UPDATE's new images as paired ('U', see the package doc),
	// as of the last time tracking was enabled; nil when it marks none (a
	// table without a primary key, or a function written before pairs
	// were marked).
	PairedKey []string
}

// pairsKnown reports whether the log's 'U' rows are paired under the
// table's current primary key, so a read may take every key's first log
// row from the rows other than 'U' (tableImagesQuery). A primary key
// redefined since tracking was enabled does not qualify until tracking is
// enabled again.
func (t *Tracked) pairsKnown() bool {
	return len(t.PairedKey) > 0 && slices.Equal(t.PairedKey, t.Table.Key)
}

// LogRef returns the schema-qualified, quoted log table.
func (t *Tracked) LogRef() string { return "sluice." + sinkpg.Quote(t.Log) }

// Trigger names on a tracked table.
var triggerNames = []string{"sluice_capture_ins", "sluice_capture_upd", "sluice_capture_del", "sluice_capture_trunc"}

// objectName builds prefix+table within PostgreSQL's 63-byte identifier
// limit, replacing the tail by a hash when it is too long.
func objectName(prefix, table string) string {
	n := prefix + table
	if len(n) <= 63 {
		return n
	}
	h := sha256.Sum256([]byte(table))
	tail := "_" + hex.EncodeToString(h[:6])
	cut := 63 - len(tail)
	for cut > 0 && !utf8Start(n[cut]) {
		cut--
	}
	return n[:cut] + tail
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// tracked returns the tracking of table, ok false when it has none.
func (b *Backend) tracked(ctx context.Context, q sinkpg.Querier, table string) (*Tracked, bool, error) {
	var t Tracked
	err := q.QueryRow(ctx, `SELECT log_table, func_name, enabled_at::text, paired_key FROM sluice.tracking WHERE table_name = $1`, table).
		Scan(&t.Log, &t.Func, &t.Created, &t.PairedKey)
	if errors.Is(err, pgx.ErrNoRows) || isUndefinedTable(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, b.wrap(err, "read tracking of %s", sinkpg.Quote(table))
	}
	tab, ok, err := sinkpg.DescribeTable(ctx, q, table)
	if err != nil {
		return nil, false, b.wrap(err, "describe %s", sinkpg.Quote(table))
	}
	if !ok {
		return nil, false, fmt.Errorf("%w: %s (it has change tracking; DROP TABLE through sluice removes the log)", ErrNoTable, sinkpg.Quote(table))
	}
	t.Table = tab
	return &t, true, nil
}

// checkLog verifies that every table column has a log column.
func (b *Backend) checkLog(ctx context.Context, q sinkpg.Querier, t *Tracked) error {
	logTab, ok, err := sinkpg.DescribeQualified(ctx, q, "sluice", t.Log)
	if err != nil {
		return b.wrap(err, "describe change log")
	}
	if !ok {
		return fmt.Errorf("%w: change log sluice.%s of %s is missing; enable change tracking again", ErrTableChanged, sinkpg.Quote(t.Log), sinkpg.Quote(t.Table.Name))
	}
	have := map[string]string{}
	for _, c := range logTab.Columns {
		have[c.Name] = c.PGType
	}
	for _, c := range t.Table.Columns {
		if typ, ok := have[c.Name]; !ok || typ != c.PGType {
			return fmt.Errorf("%w: column %s of %s is not in its change log as %s; run ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'true') again",
				ErrTableChanged, sinkpg.Quote(c.Name), sinkpg.Quote(t.Table.Name), c.PGType, t.Table.Name)
		}
	}
	// The capture pairs images under the primary key recorded when
	// tracking was enabled (nil: recorded by an earlier sluice, unknown).
	if len(t.PairedKey) > 0 && !slices.Equal(t.PairedKey, t.Table.Key) {
		return fmt.Errorf("%w: the primary key of %s is (%s), not (%s) as when change tracking was enabled; run ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'true') again",
			ErrTableChanged, sinkpg.Quote(t.Table.Name), strings.Join(t.Table.Key, ", "), strings.Join(t.PairedKey, ", "), t.Table.Name)
	}
	return nil
}

// deferredKeyError is ErrDeferredKey for a STANDARD stream on tab,
// saying how to make its primary key immediate. PostgreSQL's ALTER
// CONSTRAINT changes only foreign keys (PostgreSQL 13–17 documentation of
// ALTER TABLE), so the key is dropped and added again.
func deferredKeyError(tab *sinkpg.Table) error {
	return fmt.Errorf("%w: the primary key %s (%s) of %s is DEFERRABLE INITIALLY DEFERRED, so a transaction can hold two rows of one key between statements and a STANDARD stream's net changes per key would be wrong; nothing was read or changed. Make it immediate, in psql (this is PostgreSQL SQL, not sluice's dialect): ALTER TABLE %s DROP CONSTRAINT %s, ADD PRIMARY KEY (%s) (add DEFERRABLE INITIALLY IMMEDIATE if statements move keys past each other)",
		ErrDeferredKey, sinkpg.Quote(tab.KeyConstraint), strings.Join(tab.Key, ", "), sinkpg.Quote(tab.Name), sinkpg.Quote(tab.Name), sinkpg.Quote(tab.KeyConstraint), sinkpg.QuoteList("", tab.Key))
}

// checkPendingKeys refuses a primary key that some change in the log,
// not yet read by every stream on the table, has no value for: a key
// column added to the table (and to the log) after those changes were
// logged, or a column that was NULL in their images. Read under the new
// key, they would all fall on one NULL key. tx holds the tracking lock;
// the log has the table's columns.
func checkPendingKeys(ctx context.Context, tx pgx.Tx, t *Tracked) error {
	if len(t.Table.Key) == 0 {
		return nil
	}
	pending, known, err := unconsumedSQL(ctx, tx, t.Table.Name)
	if err != nil {
		return err
	}
	if known && pending == "" {
		return nil // no stream: no change is needed
	}
	var nulls []string
	for _, k := range t.Table.Key {
		nulls = append(nulls, sinkpg.Quote(k)+" IS NULL")
	}
	cond := "(" + strings.Join(nulls, " OR ") + ")"
	if pending != "" {
		cond = "(" + pending + ") AND " + cond
	}
	var n int64
	if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s`, t.LogRef(), cond)).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%w: %d change-log row(s) in sluice.%s that the streams on %s have not read have no value for the primary key (%s); nothing was changed. Read them under the old primary key first (restore it, enable tracking again, run the jobs of every stream on %s), then change the key; or drop and recreate those streams and backfill their targets",
			ErrKeyNotLogged, n, sinkpg.Quote(t.Log), sinkpg.Quote(t.Table.Name), strings.Join(t.Table.Key, ", "), t.Table.Name)
	}
	return nil
}

// EnableTracking turns on change capture for table (idempotent: enabling
// again adds columns added to the table since and rewrites the capture
// function and triggers).
func (b *Backend) EnableTracking(ctx context.Context, table string) error {
	if err := b.ensureSchema(ctx); err != nil {
		return err
	}
	return b.wrap(pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('sluice.tracking'))`); err != nil {
			return err
		}
		tab, ok, err := sinkpg.DescribeTable(ctx, tx, table)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s", ErrNoTable, sinkpg.Quote(table))
		}
		var qualified, parent string
		if err := tx.QueryRow(ctx, `SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname),
				coalesce((SELECT i.inhparent::regclass::text FROM pg_inherits i WHERE i.inhrelid = c.oid AND c.relispartition), '')
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)`, sinkpg.Quote(table)).Scan(&qualified, &parent); err != nil {
			return err
		}
		if parent != "" {
			return fmt.Errorf("%w: %s is a partition of %s, whose statements would not fire its capture triggers; enable change tracking on %s instead",
				ErrIsPartition, sinkpg.Quote(table), parent, parent)
		}
		t := &Tracked{Table: tab, Log: objectName("log_", table), Func: objectName("cap_", table), PairedKey: tab.Key}
		old, tracked, err := b.tracked(ctx, tx, table)
		if err != nil {
			return err
		}
		if tracked {
			t.Log, t.Func = old.Log, old.Func
		}
		for _, s := range trackingDDL(t, qualified) {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("%w (in: %s)", err, firstLine(s))
			}
		}
		if tracked && !slices.Equal(old.PairedKey, t.PairedKey) {
			if err := checkPendingKeys(ctx, tx, t); err != nil {
				return err
			}
			// The 'U' rows logged so far are paired under the old key (if
			// any): unmark them, so every 'U' row in the log is paired
			// under tracking.paired_key.
			if len(old.PairedKey) > 0 {
				if _, err := tx.Exec(ctx, `UPDATE `+t.LogRef()+` SET __op = 'A' WHERE __op = 'U'`); err != nil {
					return err
				}
			}
		}
		var paired []string // NULL for a table without a primary key
		if len(t.PairedKey) > 0 {
			paired = t.PairedKey
		}
		_, err = tx.Exec(ctx, `INSERT INTO sluice.tracking (table_name, log_table, func_name, paired_key) VALUES ($1, $2, $3, $4)
			ON CONFLICT (table_name) DO UPDATE SET paired_key = EXCLUDED.paired_key`, table, t.Log, t.Func, paired)
		return err
	}), "enable change tracking on %s", sinkpg.Quote(table))
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i > 0 {
		return s[:i] + " …"
	}
	return s
}

// trackingDDL returns the statements that create (or update) the log
// table, capture function and triggers of t. qualified is the table's
// schema-qualified quoted name.
func trackingDDL(t *Tracked, qualified string) []string {
	log := t.LogRef()
	fn := "sluice." + sinkpg.Quote(t.Func)
	var defs, cols []string
	for _, c := range t.Table.Columns {
		defs = append(defs, sinkpg.Quote(c.Name)+" "+c.PGType)
		cols = append(cols, sinkpg.Quote(c.Name))
	}
	cl := strings.Join(cols, ", ")
	// An UPDATE's new images are 'U' (paired: each has an old image of
	// the same key earlier in the statement) when no new key is missing
	// from the old keys, else 'A', decided once per statement by an
	// InitPlan inside the one INSERT. EXCEPT hashes or sorts whatever plan
	// PL/pgSQL caches for the transition tables' sizes; a join could be
	// cached as a nested loop from one-row statements and turn a bulk
	// UPDATE quadratic. Measured against the function without the check
	// (PostgreSQL 15, pgbench scale 10, alternating): pgbench tpcb-like TPS
	// the same within the runs' noise, a 100,000-row UPDATE 0.80 s
	// against 0.72 s. Two alternatives were measured and dropped
	// (docs/benchmarks.md): pairing told by the key columns a statement
	// sets (a statement-level AFTER UPDATE OF trigger) measured faster
	// under concurrent writers but misses keys changed by BEFORE triggers;
	// a row-level AFTER UPDATE trigger WHEN the key changed, which does
	// not, measured no faster than this.
	newOp := `'A'`
	if keys := t.PairedKey; len(keys) > 0 {
		kl := sinkpg.QuoteList("", keys)
		newOp = fmt.Sprintf(`(SELECT CASE WHEN EXISTS (SELECT %[1]s FROM sluice_new EXCEPT SELECT %[1]s FROM sluice_old) THEN 'A' ELSE 'U' END)`, kl)
	}
	update := fmt.Sprintf(`INSERT INTO %[1]s (__op, %[2]s) SELECT 'B'::pg_catalog."char", %[2]s FROM sluice_old UNION ALL SELECT %[3]s::pg_catalog."char", %[2]s FROM sluice_new;`, log, cl, newOp)
	out := []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	__seq  bigserial NOT NULL,
	__txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
	__op   "char" NOT NULL,
	__ts   timestamptz NOT NULL DEFAULT now()
)`, log),
		fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s (__txid)`, sinkpg.Quote(objectName("", t.Log+"_txid")), log),
	}
	for _, d := range defs {
		out = append(out, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s`, log, d))
	}
	// GET DIAGNOSTICS after the one INSERT that ran: a statement that
	// touched no row does not notify, nor does one while no session
	// listens on the channel (notifyGate, RegisterListener). NOTIFYs are
	// delivered at commit, once per channel and transaction however many
	// statements sent them. use_column: a table column named like the
	// variable stays a column.
	//
	// The function has no SET search_path: a function with SET clauses
	// saves and restores the settings on every call, which cost a one-row
	// UPDATE 3–7 µs of the capture's 16–23 µs (server time of a DO loop
	// of one-row UPDATEs, bench/pgcapture/variants.sh loop, two runs). So
	// that a schema ahead of pg_catalog in a writer's path cannot shadow
	// anything it uses (and run code as the writer), it names nothing
	// through that path: tables, functions, operators and the "char" type
	// are qualified, transition tables take precedence over relations of
	// the same name, and EXCEPT compares keys with their types' default
	// operator classes (TestCaptureIgnoresSearchPath).
	out = append(out, fmt.Sprintf(`CREATE OR REPLACE FUNCTION %[1]s() RETURNS trigger LANGUAGE plpgsql AS $sluice$
#variable_conflict use_column
DECLARE
	n bigint;
BEGIN
	IF TG_OP OPERATOR(pg_catalog.=) 'INSERT' THEN
		INSERT INTO %[2]s (__op, %[3]s) SELECT 'I', %[3]s FROM sluice_new;
	ELSIF TG_OP OPERATOR(pg_catalog.=) 'UPDATE' THEN
		%[6]s
	ELSIF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
		INSERT INTO %[2]s (__op, %[3]s) SELECT 'D', %[3]s FROM sluice_old;
	ELSIF TG_OP OPERATOR(pg_catalog.=) 'TRUNCATE' THEN
		INSERT INTO %[2]s (__op, %[3]s) SELECT 'D', %[3]s FROM %[4]s;
	END IF;
	GET DIAGNOSTICS n = ROW_COUNT;
	IF n OPERATOR(pg_catalog.>) 0 AND %[7]s THEN
		PERFORM pg_catalog.pg_notify(%[5]s, '');
	END IF;
	RETURN NULL;
END
$sluice$`, fn, log, cl, qualified, sqlLiteral(NotifyChannel(t.Table.Name)), update, notifyGate(NotifyChannel(t.Table.Name))))
	for _, name := range triggerNames {
		out = append(out, fmt.Sprintf(`DROP TRIGGER IF EXISTS %s ON %s`, name, qualified))
	}
	out = append(out,
		fmt.Sprintf(`CREATE TRIGGER sluice_capture_ins AFTER INSERT ON %s REFERENCING NEW TABLE AS sluice_new FOR EACH STATEMENT EXECUTE FUNCTION %s()`, qualified, fn),
		fmt.Sprintf(`CREATE TRIGGER sluice_capture_upd AFTER UPDATE ON %s REFERENCING OLD TABLE AS sluice_old NEW TABLE AS sluice_new FOR EACH STATEMENT EXECUTE FUNCTION %s()`, qualified, fn),
		fmt.Sprintf(`CREATE TRIGGER sluice_capture_del AFTER DELETE ON %s REFERENCING OLD TABLE AS sluice_old FOR EACH STATEMENT EXECUTE FUNCTION %s()`, qualified, fn),
		fmt.Sprintf(`CREATE TRIGGER sluice_capture_trunc BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION %s()`, qualified, fn),
	)
	for _, name := range triggerNames {
		out = append(out, fmt.Sprintf(`ALTER TABLE %s ENABLE ALWAYS TRIGGER %s`, qualified, name))
	}
	return out
}

// DisableTracking removes change capture from table: triggers, function,
// log and tracking row. It refuses (ErrHasStreams) while streams exist on
// the table. Disabling a table without tracking does nothing.
func (b *Backend) DisableTracking(ctx context.Context, table string) error {
	if err := b.ensureSchema(ctx); err != nil {
		return err
	}
	return b.wrap(pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('sluice.tracking'))`); err != nil {
			return err
		}
		names, err := streamsOn(ctx, tx, table)
		if err != nil {
			return err
		}
		if len(names) > 0 {
			return fmt.Errorf("%w: %s (drop them first: DROP TABLE STREAM %s)", ErrHasStreams, strings.Join(names, ", "), names[0])
		}
		return dropTracking(ctx, tx, table)
	}), "disable change tracking on %s", sinkpg.Quote(table))
}

// dropTracking removes triggers, function, log and tracking row of table.
func dropTracking(ctx context.Context, tx pgx.Tx, table string) error {
	var logName, fn string
	err := tx.QueryRow(ctx, `DELETE FROM sluice.tracking WHERE table_name = $1 RETURNING log_table, func_name`, table).Scan(&logName, &fn)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, sinkpg.Quote(table)).Scan(&exists); err != nil {
		return err
	}
	if exists {
		for _, name := range triggerNames {
			if _, err := tx.Exec(ctx, fmt.Sprintf(`DROP TRIGGER IF EXISTS %s ON %s`, name, sinkpg.Quote(table))); err != nil {
				return err
			}
		}
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(`DROP TABLE IF EXISTS sluice.%s`, sinkpg.Quote(logName))); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, fmt.Sprintf(`DROP FUNCTION IF EXISTS sluice.%s()`, sinkpg.Quote(fn)))
	return err
}

// streamsOn lists the streams on table.
func streamsOn(ctx context.Context, q sinkpg.Querier, table string) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT name FROM sluice.streams WHERE table_name = $1 ORDER BY name`, table)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
