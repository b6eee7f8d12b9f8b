package runner

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// Dead letters: a job with `sink: {dead_letter: TABLE}` sends each row the
// sink rejects for its value to TABLE in the sink database, in the same
// transaction as the rows and the checkpoint, instead of failing the run
// (docs/sinks.md, "Dead letters"). The run itself is unchanged while no
// row is rejected; on a rejection the window is read and applied again,
// batch by batch under a savepoint, and a batch that fails is bisected
// down to the rows that fail alone (deadletter_run.go).

// DeadLetter is one row the sink rejected, as the dead-letter table
// stores it.
type DeadLetter struct {
	ID            int64     // the table's row id (0 before it is stored)
	Job           string    // the job's name
	Key           string    // JSON object of the row's key columns ("null" when the row has none)
	Op            cdc.Op    // the change type
	CommitVersion int64     // the change's __commit_version
	Row           string    // JSON object of the projected row (RowJSON)
	Error         string    // why the sink rejected it, in words, without secrets
	At            time.Time // when it was dead-lettered (UTC)
}

// Rejection classifies a sink error.
type Rejection int

// The rejections a DeadLetterTx tells apart.
const (
	// NotRejected: the error is not about one row's value (a lost
	// connection, a missing table, a refused permission, a foreign key):
	// it fails the run.
	NotRejected Rejection = iota
	// RejectedValue: the row's own value does not fit (conversion, NOT
	// NULL, CHECK, length); no order of the apply changes that.
	RejectedValue
	// RejectedUnique: a unique violation, which another row of the window
	// applied first may cause or cure (deadletter_run.go tries again).
	RejectedUnique
)

// DeadLetterTx is a SinkTx that can apply part of a window on its own,
// undo it, and store dead letters: what a run with a dead-letter table
// needs. Savepoints do not nest: each Savepoint is followed by exactly one
// Release or RollbackTo.
type DeadLetterTx interface {
	SinkTx
	// Savepoint marks the transaction's current state (rows, staged rows,
	// counts).
	Savepoint(ctx context.Context) error
	// RollbackTo returns to the state of the last Savepoint and forgets
	// it, clearing a failed Write's poison.
	RollbackTo(ctx context.Context) error
	// Release forgets the last Savepoint, keeping what was done since.
	Release(ctx context.Context) error
	// Flush applies the rows staged so far to the target (a merge's
	// staged rows; nothing for direct inserts) and keeps the transaction
	// open for more Writes.
	Flush(ctx context.Context) error
	// StoreDeadLetters creates table in the sink database when it is
	// missing (DeadLetterColumns) and inserts rows into it, in the
	// transaction.
	StoreDeadLetters(ctx context.Context, table string, rows []DeadLetter) error
	// LoadDeadLetters returns job's rows of table in id order, read in the
	// transaction; none when table does not exist.
	LoadDeadLetters(ctx context.Context, table, job string) ([]DeadLetter, error)
	// DeleteDeadLetters deletes the rows ids of table in the transaction.
	DeleteDeadLetters(ctx context.Context, table string, ids []int64) error
}

// DeadLetterSink is a Sink that can store dead letters: it classifies its
// errors (RowRejecter), its transactions are DeadLetterTx, and it lists
// and purges a dead-letter table outside a run.
type DeadLetterSink interface {
	RowRejecter
	// DeadLetters returns job's rows of table in id order; none when
	// table does not exist.
	DeadLetters(ctx context.Context, table, job string) ([]DeadLetter, error)
	// PurgeDeadLetters deletes job's rows of table and returns how many.
	PurgeDeadLetters(ctx context.Context, table, job string) (int64, error)
}

// DeadLetterColumns are the columns of a dead-letter table, in order, with
// what each holds; sinks create the table with them (and an id column
// that orders the rows).
var DeadLetterColumns = []struct{ Name, What string }{
	{"job", "the job's name"},
	{"key", "the row's key columns as a JSON object (null when the row has none)"},
	{"change_type", "INSERT, UPDATE_BEFORE, UPDATE_AFTER or DELETE"},
	{"commit_version", "the change's __commit_version"},
	{"row", "the projected row as a JSON object: DECIMAL and NaN/±Infinity as strings with every digit, TIMESTAMP as RFC 3339 with its zone, DATE as YYYY-MM-DD, BINARY as base64"},
	{"error", "why the sink rejected the row, in words"},
	{"dead_lettered_at", "when (UTC)"},
}

// DeadLetterStep is the plan step of a run with a dead-letter table: what
// happens when the sink rejects a row.
func DeadLetterStep(st *plan.SinkStage) plan.Step {
	return plan.Step{Where: "sink", What: fmt.Sprintf("on a row the sink rejects for its value: roll back, read the window again and apply it batch by batch, each under a SAVEPOINT; a batch that fails is bisected to the rows that fail alone (a unique violation is retried after the others), which are inserted into the dead-letter table %s (created when missing) in the same transaction as the rows and the checkpoint", st.DeadLetter)}
}

// RowJSON renders row (canonical values, aligned with s) as a JSON object
// keyed by column name, exactly: integers and finite floats as numbers
// (shortest round-trip form), NaN and ±Infinity and DECIMAL as strings
// with every digit, text, JSON, UUID and NATIVE values as strings,
// BINARY as base64, DATE as "2006-01-02", TIMESTAMP as RFC 3339 with its
// zone offset. ParseRowJSON reads it back.
func RowJSON(s cdc.Schema, row []any, present []bool) string {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for i, c := range s.Columns {
		if present != nil && (i >= len(present) || !present[i]) {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		writeJSONString(&b, c.Name)
		b.WriteByte(':')
		var v any
		if i < len(row) {
			v = row[i]
		}
		writeJSONValue(&b, v, c.Type)
	}
	b.WriteByte('}')
	return b.String()
}

// KeyJSON renders the columns idx of row as a JSON object ("null" when
// idx is empty).
func KeyJSON(s cdc.Schema, row []any, idx []int) string {
	if len(idx) == 0 {
		return "null"
	}
	cols := make([]cdc.Column, len(idx))
	vals := make([]any, len(idx))
	for j, i := range idx {
		cols[j] = s.Columns[i]
		if i < len(row) {
			vals[j] = row[i]
		}
	}
	return RowJSON(cdc.Schema{Columns: cols}, vals, nil)
}

func writeJSONString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(strings.ToValidUTF8(s, "\uFFFD")) // a string always marshals
	b.Write(q)
}

func writeJSONValue(b *bytes.Buffer, v any, t cdc.Type) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case int:
		b.WriteString(strconv.Itoa(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			writeJSONString(b, cdc.FormatValue(x, t))
			return
		}
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case decimal.Decimal:
		writeJSONString(b, cdc.DecimalText(x))
	case []byte:
		writeJSONString(b, base64.StdEncoding.EncodeToString(x))
	case time.Time:
		if t.Kind == cdc.KindDate {
			writeJSONString(b, x.Format(time.DateOnly))
			return
		}
		writeJSONString(b, x.Format(time.RFC3339Nano))
	default:
		writeJSONString(b, cdc.FormatValue(v, t))
	}
}

// ParseRowJSON reads a row written by RowJSON back into canonical values
// aligned with s: a column the object does not hold is NULL, a key the
// schema does not have is an error. Values are coerced to their column's
// type (cdc.Coerce; BINARY from base64).
func ParseRowJSON(s cdc.Schema, text string) ([]any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("dead letter row is not a JSON object: %w", err)
	}
	row := make([]any, len(s.Columns))
	for name, raw := range obj {
		i := s.Index(name)
		if i < 0 {
			return nil, fmt.Errorf("dead letter row has a column %q that the job does not write (it writes %s)", name, strings.Join(s.Names(), ", "))
		}
		t := s.Columns[i].Type
		var v any
		switch x := raw.(type) {
		case nil:
		case json.Number:
			v = string(x)
		case bool:
			v = x
		case string:
			v = x
			if t.Kind == cdc.KindBinary {
				b, err := base64.StdEncoding.DecodeString(x)
				if err != nil {
					return nil, fmt.Errorf("dead letter column %s: not base64: %w", name, err)
				}
				v = b
			}
		default:
			v = fmt.Sprint(x) // a JSON object or list held in a text column
		}
		cv, err := cdc.Coerce(v, t)
		if err != nil {
			return nil, fmt.Errorf("dead letter column %s: %w", name, err)
		}
		row[i] = cv
	}
	return row, nil
}
