package sqlite

import (
	"database/sql/driver"
	"encoding/json"
	"errors"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
)

// fitFunc is the SQL function that converts a stored value between logical
// types inside SQL (pushdown, merge values of another type than the target
// column): sluice_sink_fit(value, from_type, to_type, column, key_text)
// returns the value stored as to_type, or fails the statement with a
// *cdc.ValueError naming key_text and column. It is registered on the
// modernc.org/sqlite driver by this package's init, so it exists on every
// connection opened afterwards.
const fitFunc = "sluice_sink_fit"

const fitMarker = "sluice-value-error:"

func init() {
	if err := sqlitex.RegisterFunctions([]sqlitex.Function{{Name: fitFunc, NArgs: 5, Fn: sqlFit}}); err != nil {
		panic(err)
	}
}

func sqlFit(args []driver.Value) (driver.Value, error) {
	if args[0] == nil {
		return nil, nil
	}
	from, err1 := cdc.ParseStoredType(asString(args[1]))
	to, err2 := cdc.ParseStoredType(asString(args[2]))
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	// The stored value is trusted to be of type from; it is decoded without
	// re-checking from's precision so that only the target type can fail.
	if from.Kind == cdc.KindDecimal && from.Precision > 0 {
		from = cdc.Decimal(cdc.MaxDecimalPrecision, from.Scale)
	}
	canon, err := sqlitex.Decode(args[0], from)
	if err == nil {
		var out any
		if out, err = sqlitex.Encode(canon, to); err == nil {
			return out, nil
		}
	} else {
		canon = args[0]
	}
	ve := &cdc.ValueError{Column: asString(args[3]), Type: to, Value: canon, Reason: err.Error()}
	var inner *cdc.ValueError
	if errors.As(err, &inner) {
		ve.Reason = inner.Reason
	}
	if k := asString(args[4]); k != "" {
		ve.Key = []any{rawText(k)}
	}
	b, _ := json.Marshal(fitPayload{Key: asString(args[4]), Column: ve.Column, Type: to.String(), Value: cdc.FormatValue(ve.Value, from), Reason: ve.Reason})
	return nil, errors.New(fitMarker + string(b))
}

type fitPayload struct {
	Key, Column, Type, Value, Reason string
}

// rawText prints without quotes in cdc.ValueError's "%v" formatting.
type rawText string

func (r rawText) String() string { return string(r) }

func asString(v driver.Value) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case nil:
		return ""
	}
	return cdc.FormatValue(v, cdc.Type{})
}

// fitError recovers the *cdc.ValueError that sluice_sink_fit raised inside
// a statement, or returns nil.
func fitError(err error) *cdc.ValueError {
	if err == nil {
		return nil
	}
	msg := err.Error()
	i := strings.Index(msg, fitMarker)
	if i < 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(msg[i+len(fitMarker):]))
	var p fitPayload
	if dec.Decode(&p) != nil {
		return nil
	}
	t, _ := cdc.ParseStoredType(p.Type)
	ve := &cdc.ValueError{Column: p.Column, Type: t, Value: p.Value, Reason: p.Reason}
	if p.Key != "" {
		ve.Key = []any{rawText(p.Key)}
	}
	return ve
}
