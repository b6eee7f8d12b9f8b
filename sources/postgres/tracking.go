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
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
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
	// Key is the table's name in sluice.tracking and sluice.streams: its
	// name when tracking was enabled (Table.Name is its name now; a
	// renamed table is followed by Relid). The log, function and NOTIFY
	// channel are named after it.
	Key string
	// Relid is the table's oid, 0 when tracking was enabled by a sluice
	// that did not record it (the table is then found by name).
	Relid uint32
	// HasExtra: the log has the __extra column (rows captured after a
	// change of the table's columns, capture.go); false for a log from an
	// earlier sluice whose tracking was not enabled again since.
	HasExtra bool
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

// tracked returns the tracking of table (its name in sluice.tracking),
// ok false when it has none. The table is found by the oid recorded when
// tracking was enabled, so a renamed table is still the tracked one
// (Table.Name is its name now) and a table created under the old name is
// not; a dropped one is ErrTableDropped, saying how to go on.
func (b *Backend) tracked(ctx context.Context, q sinkpg.Querier, table string) (*Tracked, bool, error) {
	t := Tracked{Key: table}
	var relid *uint32
	err := q.QueryRow(ctx, `SELECT log_table, func_name, enabled_at::text, paired_key, relid FROM sluice.tracking WHERE table_name = $1`, table).
		Scan(&t.Log, &t.Func, &t.Created, &t.PairedKey, &relid)
	if errors.Is(err, pgx.ErrNoRows) || isUndefinedTable(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, b.wrap(err, "read tracking of %s", sinkpg.Quote(table))
	}
	name := table
	if relid != nil {
		t.Relid = *relid
		var cur, schema string
		var visible bool
		find := func() error {
			return q.QueryRow(ctx, `SELECT c.relname::text, n.nspname::text, pg_catalog.pg_table_is_visible(c.oid) FROM pg_catalog.pg_class c
			JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1 AND c.relkind IN ('r', 'p')`, t.Relid).Scan(&cur, &schema, &visible)
		}
		err := find()
		if errors.Is(err, pgx.ErrNoRows) {
			// The recorded oid is gone. A database restored from a dump
			// (pg_dump / pg_restore of the whole database) gives the table
			// a new oid but keeps its capture triggers, which call this
			// tracking's function: that table is the tracked one.
			r, found, ferr := captureTable(ctx, q, t.Func)
			if ferr != nil {
				return nil, false, b.wrap(ferr, "find tracked table %s", sinkpg.Quote(table))
			}
			if !found {
				return nil, false, droppedError(ctx, q, table)
			}
			t.Relid = r
			err = find()
		}
		if err != nil {
			return nil, false, b.wrap(err, "find tracked table %s", sinkpg.Quote(table))
		}
		if !visible {
			return nil, false, fmt.Errorf("%w: tracked table %s is now %s.%s, in a schema not on this connection's search_path; its changes are still captured: add the schema to the connection's search_path (options=-csearch_path=…) to read them",
				ErrNoTable, sinkpg.Quote(table), sinkpg.Quote(schema), sinkpg.Quote(cur))
		}
		name = cur
	}
	tab, ok, err := sinkpg.DescribeTable(ctx, q, name)
	if err != nil {
		return nil, false, b.wrap(err, "describe %s", sinkpg.Quote(name))
	}
	if !ok {
		return nil, false, droppedError(ctx, q, table)
	}
	t.Table = tab
	return &t, true, nil
}

// trackedAs is tracked for a table the user names (CREATE TABLE STREAM …
// ON name): the tracking recorded under name only when name resolves to
// the tracked table (its oid); a table created under the name of a
// renamed tracked table is another table, found false.
func (b *Backend) trackedAs(ctx context.Context, q sinkpg.Querier, name string) (*Tracked, bool, error) {
	// First by oid: a tracked table that still exists, moved out of the
	// search_path (SET SCHEMA) or renamed, is not the table name resolves
	// to now (tracked would refuse with the search_path advice).
	var now, recorded *uint32
	var live bool
	err := q.QueryRow(ctx, `SELECT pg_catalog.to_regclass($1)::oid, t.relid, EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = t.relid)
		FROM sluice.tracking t WHERE t.table_name = $2`, sinkpg.Quote(name), name).Scan(&now, &recorded, &live)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) && !isUndefinedTable(err) {
		return nil, false, b.wrap(err, "read tracking of %s", sinkpg.Quote(name))
	}
	if err == nil && now != nil && recorded != nil && live && *now != *recorded {
		return nil, false, nil
	}
	t, ok, err := b.tracked(ctx, q, name)
	if err != nil || !ok || t.Relid == 0 {
		return t, ok, err
	}
	var relid *uint32
	if err := q.QueryRow(ctx, `SELECT to_regclass($1)::oid`, sinkpg.Quote(name)).Scan(&relid); err != nil {
		return nil, false, b.wrap(err, "find table %s", sinkpg.Quote(name))
	}
	if relid == nil || *relid != t.Relid {
		return nil, false, nil
	}
	return t, true, nil
}

// freeObjectNames returns the names of the change log and capture
// function of a new tracking of the table named key: "log_<key>" and
// "cap_<key>" (objectName) unless another tracking holds them (a table
// renamed since keeps the names of its tracking), then with a suffix
// "_2", "_3", … that makes them free.
func freeObjectNames(ctx context.Context, q sinkpg.Querier, key string) (logName, fn string, err error) {
	for n := 1; ; n++ {
		base := key
		if n > 1 {
			base = fmt.Sprintf("%s_%d", key, n)
		}
		logName, fn = objectName("log_", base), objectName("cap_", base)
		var taken bool
		if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sluice.tracking WHERE log_table = $1 OR func_name = $2)`, logName, fn).Scan(&taken); err != nil {
			return "", "", err
		}
		if !taken {
			return logName, fn, nil
		}
	}
}

// trackedLog is tracked for the purges, which use only the change log's
// name (Tracked.Key and Log set, Table nil): one query while the table
// recorded when tracking was enabled still exists, instead of tracked's
// half a dozen (its columns, key and constraints), which every run that
// consumed a change paid twice (issue #19). Otherwise (no oid recorded,
// the oid gone) it is tracked itself, with its errors and dump-restore
// handling, and the Table it described.
func (b *Backend) trackedLog(ctx context.Context, q sinkpg.Querier, table string) (*Tracked, bool, error) {
	t := Tracked{Key: table}
	var live bool
	err := q.QueryRow(ctx, `SELECT log_table, EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = t.relid AND c.relkind IN ('r', 'p'))
		FROM sluice.tracking t WHERE t.table_name = $1`, table).Scan(&t.Log, &live)
	if errors.Is(err, pgx.ErrNoRows) || isUndefinedTable(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, b.wrap(err, "read tracking of %s", sinkpg.Quote(table))
	}
	if !live {
		return b.tracked(ctx, q, table)
	}
	return &t, true, nil
}

// captureTable returns the oid of the table whose capture trigger
// sluice_capture_ins calls the capture function sluice.<fn>(), found false
// when none does.
func captureTable(ctx context.Context, q sinkpg.Querier, fn string) (uint32, bool, error) {
	var relid uint32
	err := q.QueryRow(ctx, `SELECT tgrelid FROM pg_catalog.pg_trigger WHERE tgname = 'sluice_capture_ins' AND tgfoid = to_regprocedure($1) LIMIT 1`,
		"sluice."+sinkpg.Quote(fn)+"()").Scan(&relid)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return relid, err == nil, err
}

// droppedError is ErrTableDropped for the tracked table table, naming its
// streams and the statements that clean up.
func droppedError(ctx context.Context, q sinkpg.Querier, table string) error {
	names, _ := streamsOn(ctx, q, table)
	how := fmt.Sprintf("ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'false') removes its change log", table)
	if len(names) > 0 {
		how = fmt.Sprintf("drop its streams (DROP TABLE STREAM %s), then %s", strings.Join(names, "; DROP TABLE STREAM "), how)
	}
	return fmt.Errorf("%w: %s was dropped after change tracking was enabled on it; its streams cannot be read any more, and a table created under its name is not tracked until tracking is enabled on it. To go on: %s; then enable tracking on the new table, create its streams and run sluice backfill on their jobs (a merge target keeps the dropped table's rows: drop it first for an exact copy)",
		ErrTableDropped, sinkpg.Quote(table), how)
}

// checkTriggers verifies the capture triggers of t: with on (a stream is
// on the table) that the four exist, call the tracking's function and
// fire always (ErrTriggersMissing otherwise: a table whose triggers were
// dropped or disabled would read as if nothing changed); without, that
// none is left (capture is off while no stream is on the table).
func checkTriggers(ctx context.Context, q sinkpg.Querier, t *Tracked, on bool) error {
	if t.Relid == 0 {
		return nil
	}
	if !on {
		have, err := presentTriggers(ctx, q, t.Relid)
		if err != nil {
			return err
		}
		if len(have) > 0 {
			return fmt.Errorf("%d capture trigger(s) of %s are left although no stream is on the table", len(have), sinkpg.Quote(t.Table.Name))
		}
		return nil
	}
	var n int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid = $1 AND tgname = ANY($2) AND tgenabled = 'A'
		AND tgfoid = $3::regprocedure`, t.Relid, triggerNames, "sluice."+sinkpg.Quote(t.Func)+"()").Scan(&n); err != nil {
		return err
	}
	if n != len(triggerNames) {
		return fmt.Errorf("%w: %d of the %d capture triggers of %s (%s) exist and are enabled; changes written since they went missing were not captured. Enable tracking again (ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'true')) and run sluice backfill on the jobs of its streams",
			ErrTriggersMissing, n, len(triggerNames), sinkpg.Quote(t.Table.Name), strings.Join(triggerNames, ", "), t.Table.Name)
	}
	return nil
}

// checkKey refuses a STANDARD stream on a table that has no primary key
// any more (net changes are per key).
func checkKey(s *runner.StreamInfo, t *Tracked) error {
	if s.Mode == dsl.ModeAppendOnly || len(t.Table.Key) > 0 {
		return nil
	}
	return fmt.Errorf("%w: %s has no primary key any more, and stream %s is STANDARD (net changes per primary key); nothing was read. Add the key back (ALTER TABLE %s ADD PRIMARY KEY (…)) and enable tracking again, or drop the stream and create an APPEND_ONLY one",
		ErrNoPrimaryKey, sinkpg.Quote(t.Table.Name), s.Name, sinkpg.Quote(t.Table.Name))
}

// checkLog verifies that every table column has a log column of its type
// (else an error wrapping ErrTableChanged and runner.ErrPlanStale: Stream
// brings the log in line, followColumnsNow) and that images are paired
// under the table's primary key.
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
	_, t.HasExtra = have["__extra"]
	for _, c := range t.Table.Columns {
		if typ, ok := have[c.Name]; !ok || typ != c.PGType {
			return fmt.Errorf("%w: column %s of %s is not in its change log as %s (%w: the next run brings the log in line, as ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'true') does)",
				ErrTableChanged, sinkpg.Quote(c.Name), sinkpg.Quote(t.Table.Name), c.PGType, runner.ErrPlanStale, t.Table.Name)
		}
	}
	// Typed rows logged before a column was added, still to be re-read
	// from the table (addcolumn.go, markReread): bringing the log in line
	// does it.
	if pending, err := pendingRereads(ctx, q, t); err != nil {
		return b.wrap(err, "describe change log")
	} else if len(pending) > 0 {
		return fmt.Errorf("%w: the changes of %s logged before a column was added are still to get its values from the table (%w: the next run does it, as ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'true') does)",
			ErrTableChanged, sinkpg.Quote(t.Table.Name), runner.ErrPlanStale, t.Table.Name)
	}
	// The capture pairs images under the primary key recorded when
	// tracking was enabled (nil: recorded by an earlier sluice, unknown).
	if len(t.PairedKey) > 0 && !slices.Equal(t.PairedKey, t.Table.Key) {
		return fmt.Errorf("%w: the primary key of %s is (%s), not (%s) as when change tracking was enabled (%w: the next run enables tracking again, as ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'true') does)",
			ErrTableChanged, sinkpg.Quote(t.Table.Name), strings.Join(t.Table.Key, ", "), strings.Join(t.PairedKey, ", "), runner.ErrPlanStale, t.Table.Name)
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
func checkPendingKeys(ctx context.Context, tx pgx.Tx, t *Tracked, oldKey []string) error {
	if len(t.Table.Key) == 0 {
		return nil
	}
	pending, known, err := unconsumedSQL(ctx, tx, t.Key)
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
		how := "drop and recreate those streams and backfill their targets"
		if len(oldKey) > 0 {
			how = fmt.Sprintf("restore the old primary key, in psql (PostgreSQL SQL, not sluice's dialect): ALTER TABLE %s DROP CONSTRAINT %s, ADD PRIMARY KEY (%s); the next runs then read them under it, and once every stream on %s has read them the key can be changed again",
				sinkpg.Quote(t.Table.Name), sinkpg.Quote(t.Table.KeyConstraint), sinkpg.QuoteList("", oldKey), t.Table.Name)
		}
		return fmt.Errorf("%w: %d change-log row(s) in sluice.%s that the streams on %s have not read have no value for the new primary key (%s) (logged before a key column existed, or with NULL in it); nothing was read or changed and no offset moved. To go on losing nothing, %s",
			ErrKeyNotLogged, n, sinkpg.Quote(t.Log), sinkpg.Quote(t.Table.Name), strings.Join(t.Table.Key, ", "), how)
	}
	return nil
}

// EnableTracking turns on change tracking for table: it creates (or,
// enabling again, brings in line with the table's columns) the change log
// sluice."log_<t>", the capture function and the row of sluice.tracking.
// The capture triggers that call the function exist only while a stream
// is on the table: CREATE TABLE STREAM switches them on (CreateStream),
// dropping the last stream switches them off (DropStream). So enabling
// tracking on a table without streams leaves it without triggers (and
// drops those an earlier sluice installed), and enabling it again on a
// table with streams re-creates them. It locks the table first, with a
// bounded wait (locks.go): ACCESS SHARE when the table has neither
// streams nor capture triggers (the application's reads and writes go on),
// else ACCESS EXCLUSIVE (DROP TRIGGER needs it); after Backend.LockWait
// it returns a LockTimeoutError naming the sessions that hold the table.
func (b *Backend) EnableTracking(ctx context.Context, table string) error {
	if err := b.ensureSchema(ctx); err != nil {
		return err
	}
	if err := b.followRenames(ctx); err != nil {
		return err
	}
	if err := b.ownerFirst(ctx, table); err != nil {
		return b.wrap(err, "enable change tracking on %s", sinkpg.Quote(table))
	}
	lock := func(ctx context.Context, tx pgx.Tx) (tableLock, error) {
		var relid *uint32
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1)::oid`, sinkpg.Quote(table)).Scan(&relid); err != nil || relid == nil {
			return tableLock{mode: accessExclusive}, err
		}
		busy, err := hasCapture(ctx, tx, *relid, table)
		if err != nil {
			return tableLock{mode: accessExclusive}, err
		}
		mode := accessShare
		if busy {
			mode = accessExclusive
		}
		return tableLock{*relid, mode, ""}, lockOid(ctx, tx, *relid, mode)
	}
	return b.wrap(b.withTableLock(ctx, "enable change tracking", sinkpg.Quote(table), lock, func(tx pgx.Tx) error {
		_, err := b.enableIn(ctx, tx, table, false)
		return err
	}), "enable change tracking on %s", sinkpg.Quote(table))
}

// hasCapture reports whether the table with oid relid (named table by
// the user) has capture triggers or streams on its tracking.
func hasCapture(ctx context.Context, q sinkpg.Querier, relid uint32, table string) (bool, error) {
	var busy bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger WHERE tgrelid = $1 AND tgname = ANY($2))
		OR EXISTS (SELECT 1 FROM sluice.streams s JOIN sluice.tracking t ON t.table_name = s.table_name WHERE t.relid = $1 OR (t.relid IS NULL AND t.table_name = $3))`,
		relid, triggerNames, table).Scan(&busy)
	return busy, err
}

// enableIn is EnableTracking inside tx, which holds sluice's tracking
// lock and a lock on the table: ACCESS SHARE is enough when capture stays
// off and no trigger is there to drop; firstStream (CreateStream of the
// table's first stream) needs SHARE ROW EXCLUSIVE, anything else ACCESS
// EXCLUSIVE. Capture is switched on when firstStream or a stream is on
// the table (re-creating the triggers unless firstStream, which only
// creates the missing ones), and off otherwise; then the triggers are
// checked (checkTriggers). It returns the tracking as it is now.
func (b *Backend) enableIn(ctx context.Context, tx pgx.Tx, table string, firstStream bool) (*Tracked, error) {
	tab, ok, err := sinkpg.DescribeTable(ctx, tx, table)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoTable, sinkpg.Quote(table))
	}
	var qualified, parent string
	if err := tx.QueryRow(ctx, `SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname),
			coalesce((SELECT i.inhparent::regclass::text FROM pg_inherits i WHERE i.inhrelid = c.oid AND c.relispartition), '')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)`, sinkpg.Quote(table)).Scan(&qualified, &parent); err != nil {
		return nil, err
	}
	if parent != "" {
		return nil, fmt.Errorf("%w: %s is a partition of %s, whose statements would not fire its capture triggers; enable change tracking on %s instead",
			ErrIsPartition, sinkpg.Quote(table), parent, parent)
	}
	var relid uint32
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1)::oid`, sinkpg.Quote(table)).Scan(&relid); err != nil {
		return nil, err
	}
	if err := checkOwner(ctx, tx, relid, table); err != nil {
		return nil, err
	}
	attrs, err := tableAttributes(ctx, tx, relid)
	if err != nil {
		return nil, err
	}
	key, err := trackingKey(ctx, tx, table, relid)
	if err != nil {
		return nil, err
	}
	t := &Tracked{Table: tab, Key: key, Relid: relid, Log: objectName("log_", key), Func: objectName("cap_", key), PairedKey: tab.Key}
	old, tracked, err := b.tracked(ctx, tx, key)
	if err != nil {
		return nil, err
	}
	var oldNames []string
	if !tracked {
		if t.Log, t.Func, err = freeObjectNames(ctx, tx, key); err != nil {
			return nil, err
		}
	}
	if tracked {
		t.Log, t.Func = old.Log, old.Func
		if err := tx.QueryRow(ctx, `SELECT coalesce(attnames, '{}') FROM sluice.tracking WHERE table_name = $1`, key).Scan(&oldNames); err != nil {
			return nil, err
		}
		if _, err := followColumns(ctx, tx, t, attrs, oldNames); err != nil {
			return nil, err
		}
	}
	for _, s := range logDDL(t) {
		if _, err := tx.Exec(ctx, s); err != nil {
			return nil, fmt.Errorf("%w (in: %s)", err, firstLine(s))
		}
	}
	logTab, ok, err := sinkpg.DescribeQualified(ctx, tx, "sluice", t.Log)
	if err != nil || !ok {
		return nil, errors.Join(err, errorIf(!ok, fmt.Errorf("%w: change log sluice.%s of %s is missing", ErrTableChanged, sinkpg.Quote(t.Log), sinkpg.Quote(t.Table.Name))))
	}
	have := map[string]bool{}
	for _, c := range logTab.Columns {
		have[c.Name] = true
	}
	if _, err := addLogColumns(ctx, tx, t, have, false); err != nil {
		return nil, err
	}
	if err := rereadPending(ctx, tx, t); err != nil {
		return nil, err
	}
	for _, s := range captureFuncDDL(t, attrs) {
		if _, err := tx.Exec(ctx, s); err != nil {
			return nil, fmt.Errorf("%w (in: %s)", err, firstLine(s))
		}
	}
	streams, err := streamsOn(ctx, tx, key)
	if err != nil {
		return nil, err
	}
	on := firstStream || len(streams) > 0
	if err := setCapture(ctx, tx, t, qualified, on, on && !firstStream); err != nil {
		return nil, err
	}
	if tracked {
		if err := migrateExtra(ctx, tx, t, attnamesOf(attrs)); err != nil {
			return nil, err
		}
		n, err := dropFutureRows(ctx, tx, t)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			b.log.Warn("deleted change-log rows of transactions this cluster has not run (a log restored from elsewhere)", "table", table, "rows", n)
		}
	}
	if tracked && !slices.Equal(old.PairedKey, t.PairedKey) {
		if err := checkPendingKeys(ctx, tx, t, old.PairedKey); err != nil {
			return nil, err
		}
		// The 'U' rows logged so far are paired under the old key (if
		// any): unmark them, so every 'U' row in the log is paired
		// under tracking.paired_key.
		if len(old.PairedKey) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE `+t.LogRef()+` SET __op = 'A' WHERE __op = 'U'`); err != nil {
				return nil, err
			}
		}
	}
	var paired []string // NULL for a table without a primary key
	if len(t.PairedKey) > 0 {
		paired = t.PairedKey
	}
	_, err = tx.Exec(ctx, `INSERT INTO sluice.tracking (table_name, log_table, func_name, paired_key, attnames, relid) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (table_name) DO UPDATE SET paired_key = EXCLUDED.paired_key, attnames = EXCLUDED.attnames, relid = EXCLUDED.relid`, key, t.Log, t.Func, paired, attnamesOf(attrs), relid)
	if err != nil {
		return nil, err
	}
	if tracked {
		// Enabling again purges what no stream can read: with no stream
		// on the table, everything logged since the last purge (by
		// capture an earlier sluice left on).
		if err := b.purge(ctx, tx, key); err != nil {
			return nil, err
		}
	}
	return t, checkTriggers(ctx, tx, t, on)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i > 0 {
		return s[:i] + " …"
	}
	return s
}

// DisableTracking removes change capture from table: triggers, function,
// log and tracking row. It refuses (ErrHasStreams) while streams exist on
// the table. Disabling a table without tracking does nothing. Its lock on
// the table is bounded as EnableTracking's.
func (b *Backend) DisableTracking(ctx context.Context, table string) error {
	if err := b.ensureSchema(ctx); err != nil {
		return err
	}
	if err := b.followRenames(ctx); err != nil {
		return err
	}
	lock := func(ctx context.Context, tx pgx.Tx) (tableLock, error) {
		if l, err := lockByName(sinkpg.Quote(table))(ctx, tx); err != nil || l.relid != 0 {
			return l, err
		}
		// A renamed table disabled by its tracked name: its triggers are
		// on the table with the recorded oid.
		var relid *uint32
		err := tx.QueryRow(ctx, `SELECT relid FROM sluice.tracking WHERE table_name = $1`, table).Scan(&relid)
		if errors.Is(err, pgx.ErrNoRows) || relid == nil {
			return tableLock{mode: accessExclusive}, nil
		}
		if err != nil {
			return tableLock{mode: accessExclusive}, err
		}
		return tableLock{*relid, accessExclusive, ""}, lockOid(ctx, tx, *relid, accessExclusive)
	}
	return b.wrap(b.withTableLock(ctx, "disable change tracking", sinkpg.Quote(table), lock, func(tx pgx.Tx) error {
		key := table
		var relid *uint32
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1)::oid`, sinkpg.Quote(table)).Scan(&relid); err != nil {
			return err
		}
		if relid != nil {
			if err := tx.QueryRow(ctx, `SELECT table_name FROM sluice.tracking WHERE relid = $1`, *relid).Scan(&key); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		names, err := streamsOn(ctx, tx, key)
		if err != nil {
			return err
		}
		if len(names) > 0 {
			return fmt.Errorf("%w: %s (drop them first: DROP TABLE STREAM %s)", ErrHasStreams, strings.Join(names, ", "), names[0])
		}
		return dropTracking(ctx, tx, key)
	}), "disable change tracking on %s", sinkpg.Quote(table))
}

// trackingKey returns the name under which table (whose oid is relid) is
// tracked: the name it had when tracking was enabled, which a rename
// does not change, or table itself when it is not tracked. A tracking
// recorded under table's name for another table is resolved here: one of
// a dropped table without streams is removed (its streams, if any, make
// it ErrTableDropped); one of a table renamed since is ErrNameInUse.
func trackingKey(ctx context.Context, tx pgx.Tx, table string, relid uint32) (string, error) {
	var key string
	err := tx.QueryRow(ctx, `SELECT table_name FROM sluice.tracking WHERE relid = $1`, relid).Scan(&key)
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", err
	}
	var other *uint32
	var now *string
	err = tx.QueryRow(ctx, `SELECT relid, (SELECT c.oid::regclass::text FROM pg_catalog.pg_class c WHERE c.oid = t.relid) FROM sluice.tracking t WHERE table_name = $1`, table).Scan(&other, &now)
	switch {
	case errors.Is(err, pgx.ErrNoRows), err == nil && other == nil:
		return table, nil // not tracked, or tracked by a sluice that kept no oid
	case err != nil:
		return "", err
	case now != nil:
		return "", fmt.Errorf("%w: the change tracking recorded as %s follows that table, renamed since to %s; %s is another table. Disable tracking on %s first (ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'false'), after dropping its streams) to track a table under this name",
			ErrNameInUse, sinkpg.Quote(table), *now, sinkpg.Quote(table), *now, *now)
	}
	// The recorded table is gone; a table that carries this tracking's
	// capture triggers is the tracked one under a new oid (a restored
	// dump): record the oid.
	var fn string
	if err := tx.QueryRow(ctx, `SELECT func_name FROM sluice.tracking WHERE table_name = $1`, table).Scan(&fn); err != nil {
		return "", err
	}
	if r, found, err := captureTable(ctx, tx, fn); err != nil {
		return "", err
	} else if found && r == relid {
		_, err := tx.Exec(ctx, `UPDATE sluice.tracking SET relid = $1 WHERE table_name = $2`, relid, table)
		return table, err
	}
	names, err := streamsOn(ctx, tx, table)
	if err != nil {
		return "", err
	}
	if len(names) > 0 {
		return "", droppedError(ctx, tx, table)
	}
	return table, dropTracking(ctx, tx, table)
}

// dropTracking removes triggers, function, log and tracking row of table
// (its tracking key). The triggers are dropped from the tracked table
// found by its oid (by name for a tracking without one), never from
// another table that took the name; a dropped table took its triggers
// with it.
func dropTracking(ctx context.Context, tx pgx.Tx, table string) error {
	var logName, fn string
	var relid *uint32
	err := tx.QueryRow(ctx, `DELETE FROM sluice.tracking WHERE table_name = $1 RETURNING log_table, func_name, relid`, table).Scan(&logName, &fn, &relid)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	var target *string
	if relid != nil {
		err = tx.QueryRow(ctx, `SELECT c.oid::regclass::text FROM pg_catalog.pg_class c WHERE c.oid = $1`, *relid).Scan(&target)
		if errors.Is(err, pgx.ErrNoRows) {
			// A restored copy: the table carrying the capture triggers.
			if r, found, ferr := captureTable(ctx, tx, fn); ferr != nil {
				return ferr
			} else if found {
				err = tx.QueryRow(ctx, `SELECT c.oid::regclass::text FROM pg_catalog.pg_class c WHERE c.oid = $1`, r).Scan(&target)
			}
		}
	} else {
		err = tx.QueryRow(ctx, `SELECT to_regclass($1)::text`, sinkpg.Quote(table)).Scan(&target)
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if target != nil {
		for _, name := range triggerNames {
			if _, err := tx.Exec(ctx, fmt.Sprintf(`DROP TRIGGER IF EXISTS %s ON %s`, name, *target)); err != nil {
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

// checkOwner returns an error wrapping ErrNotOwner, naming the owner,
// when the session's role is neither the owner of the table with oid
// relid (named table by the user) nor a member of the owning role (nor a
// superuser): installing or dropping its capture triggers needs that
// (PostgreSQL manual, CREATE TRIGGER), and the capture function runs with
// the rights of the role that enabled tracking.
func checkOwner(ctx context.Context, q sinkpg.Querier, relid uint32, table string) error {
	var owns bool
	var owner, role string
	if err := q.QueryRow(ctx, `SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE'), c.relowner::pg_catalog.regrole::text, current_user::text FROM pg_catalog.pg_class c WHERE c.oid = $1`, relid).Scan(&owns, &owner, &role); err != nil {
		return err
	}
	if !owns {
		return fmt.Errorf("%w: %s is owned by %s and this session runs as %s; enable change tracking (and create or drop the table's first and last stream) as %s or a member of it — the application's roles need no grant on sluice's objects to write the table afterwards",
			ErrNotOwner, sinkpg.Quote(table), owner, role, owner)
	}
	return nil
}

// ownerFirst is checkOwner on a session of the pool, before any statement
// on sluice's tables (which a role that does not own the table may not
// read either); a table that does not exist passes (the statement says
// so).
func (b *Backend) ownerFirst(ctx context.Context, table string) error {
	var relid *uint32
	if err := b.pool.QueryRow(ctx, `SELECT to_regclass($1)::oid`, sinkpg.Quote(table)).Scan(&relid); err != nil || relid == nil {
		return err
	}
	return checkOwner(ctx, b.pool, *relid, table)
}

// notOwnerHint returns err, or when err is a permission error (SQLSTATE
// 42501) and the session's role does not own table, the ErrNotOwner error
// that says who does, with the database's message.
func (b *Backend) notOwnerHint(ctx context.Context, table string, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		return err
	}
	if oerr := b.ownerFirst(ctx, table); errors.Is(oerr, ErrNotOwner) {
		return fmt.Errorf("%w (the database said: %s)", oerr, pe.Message)
	}
	return err
}
