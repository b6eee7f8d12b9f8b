package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// attribute is one column of a tracked table as pg_attribute has it.
type attribute struct {
	Num     int16  // attnum, from 1
	Name    string // attname
	TypeOID uint32 // atttypid
	TypeMod int32  // atttypmod
}

// tableAttributes reads the live columns of the table with oid relid,
// in attnum order.
func tableAttributes(ctx context.Context, q sinkpg.Querier, relid uint32) ([]attribute, error) {
	rows, err := q.Query(ctx, `SELECT attnum, attname::text, atttypid, atttypmod FROM pg_catalog.pg_attribute
		WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, relid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []attribute
	for rows.Next() {
		var a attribute
		if err := rows.Scan(&a.Num, &a.Name, &a.TypeOID, &a.TypeMod); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// shapeCheck returns the capture function's SQL condition, true while
// the table (TG_RELID) has exactly the live columns attrs — same attnum,
// name, type and type modifier, none added — so the typed INSERTs, which
// name those columns, work and miss nothing.
//
// With the table's oid relid it is a call of sluice.columns_are
// (schemaDDL) on constants, which PostgreSQL evaluates when it plans the
// condition (the function is declared IMMUTABLE) and keeps as a constant
// in the plan PL/pgSQL caches for the session. The oid is written as a
// literal of type oid, which PostgreSQL records as a relation the plan
// depends on (as it does for nextval('seq')), so every change of the
// table's pg_attribute rows — a column added, dropped, renamed or
// retyped, committed by another session or made earlier in the writer's
// own transaction, or rolled back — invalidates the plan, and the next
// statement plans it again and checks the catalog again
// (TestCaptureShapeFollowsDDLInSession). A statement thus pays a
// comparison of TG_RELID instead of a catalog query: a one-row UPDATE's
// capture cost 47 instead of 73 µs of CPU (DO loop of committed
// one-row UPDATEs on a loaded machine, docs/benchmarks.md).
//
// Without relid (tracking enabled by a sluice that did not record it)
// it is the catalog query itself, run on every statement: one index scan
// of pg_attribute, each row compared with arrays indexed by attnum (a
// column beyond them compares NULL, which fails).
func shapeCheck(attrs []attribute, relid uint32) string {
	maxNum := 0
	for _, a := range attrs {
		maxNum = max(maxNum, int(a.Num))
	}
	names := make([]string, maxNum)
	oids := make([]string, maxNum)
	mods := make([]string, maxNum)
	for i := range maxNum {
		names[i], oids[i], mods[i] = `""`, "0", "0"
	}
	for _, a := range attrs {
		names[a.Num-1] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(a.Name) + `"`
		oids[a.Num-1] = strconv.FormatUint(uint64(a.TypeOID), 10)
		mods[a.Num-1] = strconv.FormatInt(int64(a.TypeMod), 10)
	}
	arr := func(elems []string, typ string) string {
		return sqlLiteral("{"+strings.Join(elems, ",")+"}") + "::pg_catalog." + typ + "[]"
	}
	if relid != 0 {
		rel := sqlLiteral(strconv.FormatUint(uint64(relid), 10)) + "::pg_catalog.oid"
		return fmt.Sprintf(`sluice.columns_are(%[1]s, %[2]s, %[3]s, %[4]s, %[5]d) AND TG_RELID OPERATOR(pg_catalog.=) %[1]s`,
			rel, arr(names, "name"), arr(oids, "oid"), arr(mods, "int4"), len(attrs))
	}
	return fmt.Sprintf(`(SELECT pg_catalog.count(*) FILTER (WHERE a.attname OPERATOR(pg_catalog.=) (%[1]s)[a.attnum]
		AND a.atttypid OPERATOR(pg_catalog.=) (%[2]s)[a.attnum] AND a.atttypmod OPERATOR(pg_catalog.=) (%[3]s)[a.attnum]) OPERATOR(pg_catalog.=) %[4]d
		AND pg_catalog.count(*) OPERATOR(pg_catalog.=) %[4]d
	FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) TG_RELID AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped) IS TRUE`,
		arr(names, "name"), arr(oids, "oid"), arr(mods, "int4"), len(attrs))
}

// logDDL returns the statements that create the change log of t with its
// own columns, or add to it those it lacks (IF NOT EXISTS: each still
// locks the log); the table's columns are addLogColumns'.
func logDDL(t *Tracked) []string {
	log := t.LogRef()
	out := []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	__seq  bigserial NOT NULL,
	__txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
	__op   "char" NOT NULL,
	__ts   timestamptz NOT NULL DEFAULT now()
)`, log),
		fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s (__txid)`, sinkpg.Quote(objectName("", t.Log+"_txid")), log),
		// __extra: the whole row, for the rows logged while the table's
		// columns differ from the log's (shapeCheck): its record text as
		// a JSON string (rowtext.go; an earlier sluice logged a to_json
		// object); the partial index lets a read find them in its window
		// at once. __attnums, __attnames: the attnum and name of each of
		// the row's values, in order (the live columns in attnum order),
		// which tell a column renamed since from one dropped and one
		// added (migrateExtra); NULL in rows of an earlier sluice.
		fmt.Sprintf(`ALTER TABLE %s ADD COLUMN IF NOT EXISTS __extra json, ADD COLUMN IF NOT EXISTS __attnums pg_catalog.int2[], ADD COLUMN IF NOT EXISTS __attnames pg_catalog.text[]`, log),
		fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s (__txid) WHERE __extra IS NOT NULL`, sinkpg.Quote(objectName("", t.Log+"_extra")), log),
	}
	return out
}

// captureFuncDDL returns the statements that create or replace the
// capture function of t for the table's live columns attrs (which must
// be t.Table.Columns, each with a log column of its name and type).
// Replacing it keeps its oid, so the triggers go on calling it; it takes
// no lock on the table or the log.
func captureFuncDDL(t *Tracked, attrs []attribute) []string {
	log := t.LogRef()
	fn := "sluice." + sinkpg.Quote(t.Func)
	var cols []string
	for _, c := range t.Table.Columns {
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
	// The function runs as the role that enabled tracking (SECURITY
	// DEFINER; it owns the log), so any role that may write the table
	// has its changes logged without a grant on schema sluice; EXECUTE is
	// revoked from PUBLIC (a trigger function cannot be called directly
	// anyway).
	//
	// Typed path: while the table has exactly the columns it had when
	// tracking was enabled (shapeCheck: a constant in the session's
	// cached plan, checked again in the catalog after every change of the
	// table's columns), one INSERT … SELECT per statement names them. After any
	// DDL that adds, drops, renames or retypes a column, that INSERT
	// would fail (and fail the application's statement), so the function
	// logs the whole row's record text, (r.*)::text, as a JSON string in
	// __extra instead, naming no column (the "JSON path"; rowtext.go); the
	// next run (Stream) or enabling tracking again moves them into typed
	// columns (migrateExtra), each value read by its type's input function
	// as the typed path's are. The record text holds each value as its
	// type's output function writes it, which depends on the writer's
	// session: floats follow extra_float_digits (below 1 they round), so
	// the JSON path raises it to 3 for its INSERT and restores it;
	// likewise it writes intervals with IntervalStyle postgres, dates
	// and times with DateStyle ISO and money with lc_monetary C, the
	// settings migrateExtra reads them under (sql_standard intervals,
	// German or SQL dates with their day/month order, and money in
	// another locale's format or scale are read differently under other
	// settings). Each JSON row
	// also gets the attnums and names of its values (__attnums,
	// __attnames: one catalog lookup per statement, on this path only),
	// so that a read maps every value to the column it belongs to now
	// (migrateExtra). TRUNCATE reads the table through TG_RELID (EXECUTE),
	// never through the name it had when tracking was enabled.
	//
	// GET DIAGNOSTICS after the one INSERT that ran: a statement that
	// touched no row does not notify, nor does one while no session
	// listens on the channel (notifyGate, RegisterListener). NOTIFYs are
	// delivered at commit, once per channel and transaction however many
	// statements sent them. use_column: a table column named like the
	// variable stays a column (so a variable next to the table's columns
	// is qualified by the block's label: sluice_capture.an, .ak). The JSON path
	// writes (r.*)::text, not r::text: a table column named r would be
	// taken for the row (a column name wins over a table alias) and
	// logged alone.
	//
	// The function has no SET search_path: a function with SET clauses
	// saves and restores the settings on every call, which cost a one-row
	// UPDATE 3–7 µs of the capture's 16–23 µs (server time of a DO loop
	// of one-row UPDATEs, bench/pgcapture/variants.sh loop, two runs). So
	// that a schema ahead of pg_catalog in a writer's path cannot shadow
	// anything it uses (and run code as the tracking role), it names
	// nothing through that path: tables, types, functions and operators
	// are qualified, transition tables take precedence over relations of
	// the same name, and EXCEPT compares keys with their types' default
	// operator classes (TestCaptureIgnoresSearchPath).
	out := []string{fmt.Sprintf(`CREATE OR REPLACE FUNCTION %[1]s() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $sluice$
#variable_conflict use_column
<<sluice_capture>>
DECLARE
	n bigint;
	fd pg_catalog.text;
	st pg_catalog.text;
	ds pg_catalog.text;
	lm pg_catalog.text;
	an pg_catalog.int2[];
	ak pg_catalog.text[];
BEGIN
	IF %[8]s THEN
		IF TG_OP OPERATOR(pg_catalog.=) 'INSERT' THEN
			INSERT INTO %[2]s (__op, %[3]s) SELECT 'I', %[3]s FROM sluice_new;
		ELSIF TG_OP OPERATOR(pg_catalog.=) 'UPDATE' THEN
			%[6]s
		ELSIF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
			INSERT INTO %[2]s (__op, %[3]s) SELECT 'D', %[3]s FROM sluice_old;
		ELSIF TG_OP OPERATOR(pg_catalog.=) 'TRUNCATE' THEN
			EXECUTE %[4]s OPERATOR(pg_catalog.||) TG_RELID::pg_catalog.regclass::pg_catalog.text;
		END IF;
		GET DIAGNOSTICS n = ROW_COUNT;
	ELSE
		fd := pg_catalog.current_setting('extra_float_digits');
		st := pg_catalog.current_setting('IntervalStyle');
		ds := pg_catalog.current_setting('DateStyle');
		lm := pg_catalog.current_setting('lc_monetary');
		IF fd::pg_catalog.int4 OPERATOR(pg_catalog.<) 1 THEN
			PERFORM pg_catalog.set_config('extra_float_digits', '3', true);
		END IF;
		IF st OPERATOR(pg_catalog.<>) 'postgres' THEN
			PERFORM pg_catalog.set_config('IntervalStyle', 'postgres', true);
		END IF;
		IF NOT pg_catalog.starts_with(ds, 'ISO') THEN
			PERFORM pg_catalog.set_config('DateStyle', 'ISO', true);
		END IF;
		IF lm OPERATOR(pg_catalog.<>) 'C' THEN
			PERFORM pg_catalog.set_config('lc_monetary', 'C', true);
		END IF;
		SELECT pg_catalog.array_agg(a.attnum ORDER BY a.attnum), pg_catalog.array_agg(a.attname::pg_catalog.text ORDER BY a.attnum) INTO an, ak
			FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) TG_RELID AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped;
		IF TG_OP OPERATOR(pg_catalog.=) 'INSERT' THEN
			INSERT INTO %[2]s (__op, __extra, __attnums, __attnames) SELECT 'I', %[10]s, sluice_capture.an, sluice_capture.ak FROM sluice_new r;
		ELSIF TG_OP OPERATOR(pg_catalog.=) 'UPDATE' THEN
			INSERT INTO %[2]s (__op, __extra, __attnums, __attnames) SELECT 'B'::pg_catalog."char", %[10]s, sluice_capture.an, sluice_capture.ak FROM sluice_old r UNION ALL SELECT 'A'::pg_catalog."char", %[10]s, sluice_capture.an, sluice_capture.ak FROM sluice_new r;
		ELSIF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
			INSERT INTO %[2]s (__op, __extra, __attnums, __attnames) SELECT 'D', %[10]s, sluice_capture.an, sluice_capture.ak FROM sluice_old r;
		ELSIF TG_OP OPERATOR(pg_catalog.=) 'TRUNCATE' THEN
			EXECUTE %[9]s OPERATOR(pg_catalog.||) TG_RELID::pg_catalog.regclass::pg_catalog.text OPERATOR(pg_catalog.||) ' r' USING an, ak;
		END IF;
		GET DIAGNOSTICS n = ROW_COUNT;
		IF fd::pg_catalog.int4 OPERATOR(pg_catalog.<) 1 THEN
			PERFORM pg_catalog.set_config('extra_float_digits', fd, true);
		END IF;
		IF st OPERATOR(pg_catalog.<>) 'postgres' THEN
			PERFORM pg_catalog.set_config('IntervalStyle', st, true);
		END IF;
		IF NOT pg_catalog.starts_with(ds, 'ISO') THEN
			PERFORM pg_catalog.set_config('DateStyle', ds, true);
		END IF;
		IF lm OPERATOR(pg_catalog.<>) 'C' THEN
			PERFORM pg_catalog.set_config('lc_monetary', lm, true);
		END IF;
	END IF;
	IF n OPERATOR(pg_catalog.>) 0 AND %[7]s THEN
		PERFORM pg_catalog.pg_notify(%[5]s, '');
	END IF;
	RETURN NULL;
END
$sluice$`, fn, log, cl, sqlLiteral(fmt.Sprintf(`INSERT INTO %s (__op, %s) SELECT 'D', %s FROM `, log, cl, cl)), sqlLiteral(NotifyChannel(t.Key)), update, notifyGate(NotifyChannel(t.Key)), shapeCheck(attrs, t.Relid), sqlLiteral(fmt.Sprintf(`INSERT INTO %s (__op, __extra, __attnums, __attnames) SELECT 'D', %s, $1, $2 FROM `, log, rowTextMark)), rowTextMark),
		fmt.Sprintf(`REVOKE ALL ON FUNCTION %s() FROM PUBLIC`, fn)}
	return out
}

// triggerDDL returns the statement that creates the capture trigger
// name (one of triggerNames) of t on the table qualified (its
// schema-qualified quoted name). CREATE TRIGGER takes SHARE ROW EXCLUSIVE
// on the table.
func triggerDDL(t *Tracked, qualified, name string) string {
	fn := "sluice." + sinkpg.Quote(t.Func)
	switch name {
	case "sluice_capture_ins":
		return fmt.Sprintf(`CREATE TRIGGER sluice_capture_ins AFTER INSERT ON %s REFERENCING NEW TABLE AS sluice_new FOR EACH STATEMENT EXECUTE FUNCTION %s()`, qualified, fn)
	case "sluice_capture_upd":
		return fmt.Sprintf(`CREATE TRIGGER sluice_capture_upd AFTER UPDATE ON %s REFERENCING OLD TABLE AS sluice_old NEW TABLE AS sluice_new FOR EACH STATEMENT EXECUTE FUNCTION %s()`, qualified, fn)
	case "sluice_capture_del":
		return fmt.Sprintf(`CREATE TRIGGER sluice_capture_del AFTER DELETE ON %s REFERENCING OLD TABLE AS sluice_old FOR EACH STATEMENT EXECUTE FUNCTION %s()`, qualified, fn)
	}
	return fmt.Sprintf(`CREATE TRIGGER sluice_capture_trunc BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION %s()`, qualified, fn)
}

// presentTriggers returns which of triggerNames exist on the table with
// oid relid.
func presentTriggers(ctx context.Context, q sinkpg.Querier, relid uint32) (map[string]bool, error) {
	rows, err := q.Query(ctx, `SELECT tgname::text FROM pg_catalog.pg_trigger WHERE tgrelid = $1 AND tgname = ANY($2)`, relid, triggerNames)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// setCapture switches the capture of t (on the table qualified, oid
// t.Relid) on or off in tx, which holds the lock it needs: on creates
// the missing triggers and makes all four ENABLE ALWAYS (SHARE ROW
// EXCLUSIVE; with replace it first drops the existing ones, which needs
// ACCESS EXCLUSIVE); off drops the triggers that exist (ACCESS EXCLUSIVE;
// none: no statement, no lock).
func setCapture(ctx context.Context, tx pgx.Tx, t *Tracked, qualified string, on, replace bool) error {
	have, err := presentTriggers(ctx, tx, t.Relid)
	if err != nil {
		return err
	}
	var stmts []string
	if !on || replace {
		for _, name := range triggerNames {
			if have[name] {
				stmts = append(stmts, fmt.Sprintf(`DROP TRIGGER %s ON %s`, name, qualified))
				delete(have, name)
			}
		}
	}
	if on {
		for _, name := range triggerNames {
			if !have[name] {
				stmts = append(stmts, triggerDDL(t, qualified, name))
			}
		}
		for _, name := range triggerNames {
			stmts = append(stmts, fmt.Sprintf(`ALTER TABLE %s ENABLE ALWAYS TRIGGER %s`, qualified, name))
		}
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("%w (in: %s)", err, firstLine(s))
		}
	}
	return nil
}
