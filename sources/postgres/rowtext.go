package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// A row the capture function logs while the table's columns differ from
// the log's (the JSON path, capture.go) is its record text: (r.*)::text,
// every live column's value written by its type's output function in
// attnum order, an SQL NULL as an empty unquoted field — what the typed
// path's values are made of, so reading each field with its type's input
// function gives back the value exactly: a json value's text byte for
// byte, a jsonb or json null distinct from SQL NULL, an array's bounds, a
// composite's fields. The capture writes dates, floats and intervals
// with DateStyle ISO, extra_float_digits 3, IntervalStyle postgres and
// lc_monetary C whatever the writer's session says, and moveRowText reads
// it under those settings (readSettings), whatever sluice's session says. The text goes into __extra as a JSON string
// (to_json(text), which a read turns back into the text with #>> '{}'),
// so that every row of the JSON path keeps __extra non-NULL (the log's
// partial index, the reads' refusal) and rows an earlier sluice logged as
// a to_json object, json_typeof 'object', stay apart and are read as
// before (migrateExtra).
//
// Record input needs a composite type of the row's fields: moveRowText
// makes one per shape (the values' attnums) in schema sluice, under
// sluice's tracking lock, and drops it in the same transaction.

// rowTextMark is in the source of every capture function that logs the
// JSON path's rows as record text, and in none of an earlier sluice's.
const rowTextMark = `pg_catalog.to_json((r.*)::pg_catalog.text)`

// funcCurrentSQL is a SQL condition on a row of sluice.tracking, with
// rowTextMark as $2: false when its capture function exists and was
// written by a sluice that logged the JSON path's rows as to_json
// objects (logBehind, alignLog: bringing the log in line rewrites it).
const funcCurrentSQL = `coalesce((SELECT pg_catalog.strpos(p.prosrc, $2) > 0 FROM pg_catalog.pg_proc p
	WHERE p.oid = pg_catalog.to_regprocedure('sluice.' || pg_catalog.quote_ident(func_name) || '()')), true)`

// rowTextType is the composite type moveRowText makes and drops.
const rowTextType = `sluice."__sluice_row_text"`

// moveRowText moves the rows logged as record text under one shape into
// the typed columns of t's change log, in tx (which holds sluice's
// tracking lock): to names, for each of the shape's values in order, the
// log column it goes to ("" for a column dropped since). It creates
// rowTextType with those columns and types (text for a dropped one),
// calls set with the FROM item r it parses the row into — every log
// column under its name, NULL where the row has no value of it (a
// column added since, which set's values fill) — and drops the type.
func moveRowText(ctx context.Context, tx pgx.Tx, t *Tracked, to []string, set func(from string) error) error {
	types := map[string]string{}
	for _, c := range t.Table.Columns {
		types[c.Name] = c.PGType
	}
	fields := make([]string, len(to))
	logged := map[string]bool{}
	for i, name := range to {
		if typ, ok := types[name]; ok {
			fields[i] = sinkpg.Quote(name) + " " + typ
			logged[name] = true
		} else {
			fields[i] = sinkpg.Quote(fmt.Sprintf("__sluice_gone_%d", i+1)) + " pg_catalog.text"
		}
	}
	cols := make([]string, len(t.Table.Columns))
	for i, c := range t.Table.Columns {
		if logged[c.Name] {
			cols[i] = "p." + sinkpg.Quote(c.Name)
		} else {
			cols[i] = "NULL::" + c.PGType + " AS " + sinkpg.Quote(c.Name)
		}
	}
	restore, err := pinSettings(ctx, tx, readSettings)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TYPE %s AS (%s)`, rowTextType, strings.Join(fields, ", ")), pgx.QueryExecModeExec); err != nil {
		return err
	}
	// unnest of a one-element array: the record text is parsed once, not
	// once per column ((x::type).* would expand into one call per field).
	from := fmt.Sprintf(`(SELECT %s FROM pg_catalog.unnest(ARRAY[(l.__extra OPERATOR(pg_catalog.#>>) '{}'::pg_catalog.text[])::%s]) p) r`,
		strings.Join(cols, ", "), rowTextType)
	if err := set(from); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DROP TYPE `+rowTextType, pgx.QueryExecModeExec); err != nil {
		return err
	}
	return restore(ctx)
}

// readSettings are the settings record text is written under by the
// capture function and read under by moveRowText: the input functions of
// dates, intervals, money and xml depend on them.
var readSettings = [][2]string{{"DateStyle", "ISO"}, {"IntervalStyle", "postgres"}, {"lc_monetary", "C"}, {"xmloption", "content"}}

// pinSettings sets each of settings (name, value) for the rest of tx and
// returns the function that sets them back to their values before.
func pinSettings(ctx context.Context, tx pgx.Tx, settings [][2]string) (func(context.Context) error, error) {
	names := make([]string, len(settings))
	vals := make([]string, len(settings))
	for i, s := range settings {
		names[i], vals[i] = s[0], s[1]
	}
	set := func(ctx context.Context, vals []string) error {
		_, err := tx.Exec(ctx, `SELECT pg_catalog.set_config(n, v, true) FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.text[])) s(n, v)`, names, vals)
		return err
	}
	var prev []string
	if err := tx.QueryRow(ctx, `SELECT pg_catalog.array_agg(pg_catalog.current_setting(n) ORDER BY i) FROM pg_catalog.unnest($1::pg_catalog.text[]) WITH ORDINALITY s(n, i)`, names).Scan(&prev); err != nil {
		return nil, err
	}
	if err := set(ctx, vals); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return set(ctx, prev) }, nil
}
