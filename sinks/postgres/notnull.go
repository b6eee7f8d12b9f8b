package postgres

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sluicedata/sluice/cdc"
)

// Naming the row of a NOT NULL violation. A merge writes its staged rows
// with one MERGE, and PostgreSQL's not_null_violation (23502) names the
// column but not the row, and leaves the transaction unusable for a query
// that would find it. So while staging, the sink notes the keys whose
// change writes NULL into a NOT NULL column of the target (suspects; a
// later change of the same key that writes a value, or deletes it, clears
// the note, since a merge applies the last change per key), and when the
// MERGE fails with 23502 it names the first suspect of the failing column.
// A suspect list is cleared after every successful merge of the staged
// rows, so it holds only rows not yet merged; a job whose rows carry no
// NULL there keeps it empty and pays one comparison per NOT NULL column
// and row.

// nullSuspects are, per projected column, the keys of staged rows whose
// change writes NULL into the target's NOT NULL column, in staging order.
type nullSuspects struct {
	keys  map[int][]suspect
	index map[int]map[string]int // column → key text → position in keys
}

type suspect struct {
	text string // "(id=2)"
	key  []any  // for cdc.ValueError.Key
	gone bool   // cleared by a later change of the key
}

// note records the staged change ch for the NOT NULL columns notNull
// (aligned with the projected columns): a full or carried NULL of an
// INSERT or UPDATE_AFTER makes its key a suspect; any other change of a
// suspect key clears it. keyOf renders the key (text, ValueError key).
func (s *nullSuspects) note(ch *cdc.Change, notNull []bool, keyOf func(*cdc.Change) (string, []any)) {
	var text string
	var key []any
	for i, nn := range notNull {
		if !nn {
			continue
		}
		writes := ch.Op == cdc.OpInsert || ch.Op == cdc.OpUpdateAfter
		isNull := writes && ch.Has(i) && ch.Row[i] == nil
		if !isNull && len(s.index[i]) == 0 {
			continue // the common case: nothing to note, nothing to clear
		}
		if writes && !ch.Has(i) {
			continue // a partial row that leaves the column as it is
		}
		if text == "" {
			text, key = keyOf(ch)
		}
		if pos, ok := s.index[i][text]; ok {
			s.keys[i][pos].gone = true
			delete(s.index[i], text)
		}
		if isNull {
			if s.keys == nil {
				s.keys, s.index = map[int][]suspect{}, map[int]map[string]int{}
			}
			if s.index[i] == nil {
				s.index[i] = map[string]int{}
			}
			s.index[i][text] = len(s.keys[i])
			s.keys[i] = append(s.keys[i], suspect{text: text, key: key})
		}
	}
}

// reset forgets every suspect (after a successful merge).
func (s *nullSuspects) reset() { s.keys, s.index = nil, nil }

// first returns the first standing suspect of column i.
func (s *nullSuspects) first(i int) (suspect, bool) {
	for _, k := range s.keys[i] {
		if !k.gone {
			return k, true
		}
	}
	return suspect{}, false
}

// notNullError returns err (a failed merge of the staged rows) with the
// row named when it is a not_null_violation of a column a suspect writes
// NULL into: "row with key (id=2), column "name": cannot store NULL as
// STRING: the target column is NOT NULL". Other errors are returned as
// they are.
func (t *Tx) notNullError(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23502" || pe.ColumnName == "" {
		return err
	}
	for i, name := range t.c.columns {
		if name != pe.ColumnName {
			continue
		}
		if k, ok := t.nulls.first(i); ok {
			ve := &cdc.ValueError{Key: k.key, Column: name, Type: t.c.types[i], Value: nil, Reason: "the target column is NOT NULL"}
			return fmt.Errorf("postgres sink: write %s: %w (%w)", Quote(t.p.st.Table), ve, err)
		}
	}
	return err
}

// keyOf renders ch's key for nullSuspects.
func (t *Tx) keyOf(ch *cdc.Change) (string, []any) {
	key := make([]any, len(t.keyIdx))
	for j, i := range t.keyIdx {
		key[j] = rawText(t.keyName[j] + "=" + cdc.FormatValue(ch.Row[i], t.p.st.Schema.Columns[i].Type))
	}
	return t.keyText(ch), key
}
