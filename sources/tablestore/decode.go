package tablestore

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"

	"github.com/sluicedata/sluice/cdc"
)

// decoder turns stream records into changes aligned with a table schema.
type decoder struct {
	schema  cdc.Schema
	nkey    int
	cols    map[string]int // column name (exact, Tablestore names are case-sensitive) → index
	unknown map[string]bool
	log     *slog.Logger
	table   string
}

func newDecoder(sc cdc.Schema, table string, log *slog.Logger) *decoder {
	d := &decoder{schema: sc, nkey: len(sc.Key), cols: make(map[string]int, len(sc.Columns)), unknown: map[string]bool{}, log: log, table: table}
	for i, c := range sc.Columns {
		d.cols[c.Name] = i
	}
	return d
}

// change converts one record:
//
//   - PutRow → INSERT, a full row (Present nil): the carried declared
//     columns, NULL for the others (a PutRow replaces the whole row).
//   - UpdateRow → UPDATE_AFTER, a partial row: Present marks the key and the
//     declared columns the record carries; a column put carries its value, a
//     DeleteOneVersion / DeleteAllVersions cell carries NULL. When a column
//     has several cells in one record, the last one wins.
//   - DeleteRow → DELETE: the key, other columns absent (Present marks the
//     key only).
//
// Columns the job did not declare are ignored (logged once per column at
// debug level). CommitTime is the sequence timestamp (µs) as UTC. A value
// whose Tablestore type does not fit its column is a *cdc.ValueError naming
// the row's key and the column.
func (d *decoder) change(ctx context.Context, rec *tablestore.StreamRecord, version int64) (cdc.Change, error) {
	ch := cdc.Change{
		CommitVersion: version,
		CommitTime:    seqOf(rec.Info).Time(),
		Row:           make([]any, len(d.schema.Columns)),
	}
	if rec.PrimaryKey == nil || len(rec.PrimaryKey.PrimaryKeys) != d.nkey {
		n := 0
		if rec.PrimaryKey != nil {
			n = len(rec.PrimaryKey.PrimaryKeys)
		}
		return cdc.Change{}, fmt.Errorf("%w: stream record of table %q has %d primary-key columns, the table %d", ErrEmptyResponse, d.table, n, d.nkey)
	}
	for i, pk := range rec.PrimaryKey.PrimaryKeys {
		j := i
		if pk.ColumnName != d.schema.Columns[i].Name {
			if j = keyIndex(d.schema, pk.ColumnName); j < 0 {
				return cdc.Change{}, fmt.Errorf("%w: stream record of table %q has primary-key column %q, not in the table's key", ErrEmptyResponse, d.table, pk.ColumnName)
			}
		}
		v, why := convert(pk.Value, d.schema.Columns[j].Type)
		if why != "" {
			return cdc.Change{}, d.valueError(ch.Row, j, pk.Value, why)
		}
		ch.Row[j] = v
	}
	switch rec.Type {
	case tablestore.AT_Put:
		ch.Op = cdc.OpInsert
	case tablestore.AT_Update:
		ch.Op = cdc.OpUpdateAfter
		ch.Present = make([]bool, len(ch.Row))
	case tablestore.AT_Delete:
		ch.Op = cdc.OpDelete
		ch.Present = make([]bool, len(ch.Row))
		for i := 0; i < d.nkey; i++ {
			ch.Present[i] = true
		}
		return ch, nil
	default:
		return cdc.Change{}, fmt.Errorf("%w: stream record of table %q has unknown action %d", ErrEmptyResponse, d.table, int(rec.Type))
	}
	if ch.Present != nil {
		for i := 0; i < d.nkey; i++ {
			ch.Present[i] = true
		}
	}
	for _, c := range rec.Columns {
		if c == nil || c.Name == nil {
			continue
		}
		i, ok := d.cols[*c.Name]
		if !ok || i < d.nkey {
			if !ok && !d.unknown[*c.Name] {
				d.unknown[*c.Name] = true
				d.log.DebugContext(ctx, "tablestore: ignoring undeclared column", "table", d.table, "column", *c.Name)
			}
			continue
		}
		if ch.Present != nil {
			ch.Present[i] = true
		}
		if c.Type != tablestore.RCT_Put {
			ch.Row[i] = nil // DeleteOneVersion / DeleteAllVersions
			continue
		}
		v, why := convert(c.Value, d.schema.Columns[i].Type)
		if why != "" {
			return cdc.Change{}, d.valueError(ch.Row, i, c.Value, why)
		}
		ch.Row[i] = v
	}
	return ch, nil
}

func (d *decoder) valueError(row []any, col int, v any, why string) error {
	key := make([]any, d.nkey)
	copy(key, row[:d.nkey])
	var names []string
	if len(d.schema.Key) == d.nkey {
		names = d.schema.Key
	}
	return &cdc.ValueError{Key: key, KeyNames: names, Column: d.schema.Columns[col].Name, Type: d.schema.Columns[col].Type, Value: v, Reason: why}
}

// convert maps a cell value as the SDK decodes it (int64 for INTEGER,
// float64 for DOUBLE, string for STRING, bool for BOOLEAN, []byte for
// BINARY) to the canonical value of t. Accepted:
//
//	TINYINT … BIGINT   INTEGER (range-checked)
//	FLOAT, DOUBLE      DOUBLE
//	BOOLEAN            BOOLEAN
//	STRING, VARCHAR, CHAR  STRING
//	BINARY             BINARY
//	DECIMAL(p,s)       STRING holding a decimal number, or INTEGER; exact (never through float64)
//	DATE, TIMESTAMP    STRING in ISO 8601 form (a zone offset is kept; none means UTC)
//
// Anything else returns a non-empty reason.
func convert(v any, t cdc.Type) (any, string) {
	if v == nil {
		return nil, ""
	}
	ok := false
	switch v.(type) { // exact matches keep the SDK's boxed value (no allocation)
	case int64:
		if t.Kind == cdc.KindBigInt {
			return v, ""
		}
	case float64:
		if t.Kind == cdc.KindDouble {
			return v, ""
		}
	case string:
		if t.Kind == cdc.KindString {
			return v, ""
		}
	case bool:
		if t.Kind == cdc.KindBoolean {
			return v, ""
		}
	case []byte:
		if t.Kind == cdc.KindBinary {
			return v, ""
		}
	}
	switch v.(type) {
	case int64:
		ok = t.Kind.IsInteger() || t.Kind == cdc.KindDecimal
	case float64:
		ok = t.Kind == cdc.KindDouble || t.Kind == cdc.KindFloat
	case bool:
		ok = t.Kind == cdc.KindBoolean
	case string:
		ok = t.Kind.IsText() || t.Kind == cdc.KindDecimal || t.Kind == cdc.KindDate || t.Kind == cdc.KindTimestamp
	case []byte:
		ok = t.Kind == cdc.KindBinary
	}
	if !ok {
		return nil, "the Tablestore cell is " + otsType(v)
	}
	out, err := cdc.Coerce(v, t)
	if err != nil {
		if ve, isVE := err.(*cdc.ValueError); isVE && ve.Reason != "" {
			return nil, ve.Reason + " (Tablestore " + otsType(v) + ")"
		}
		return nil, err.Error()
	}
	return out, ""
}

// otsType names the Tablestore type of a decoded cell value.
func otsType(v any) string {
	switch v.(type) {
	case int64:
		return "INTEGER"
	case float64:
		return "DOUBLE"
	case string:
		return "STRING"
	case bool:
		return "BOOLEAN"
	case []byte:
		return "BINARY"
	}
	return fmt.Sprintf("%T", v)
}
