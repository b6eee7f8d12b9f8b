package changerel

import "github.com/sluicedata/sluice/cdc"

// NullSuspects name the row of a NOT NULL violation. A merge sink writes
// its staged rows with one statement, and the database's error names the
// column but not the row. So while staging, a sink notes the keys whose
// change writes NULL into a NOT NULL column of the target (suspects; a
// later change of the same key that writes a value there, or deletes the
// key, clears the note, since a merge applies the last change per key), and
// when the statement fails on a NOT NULL column it names the first suspect
// of that column. A sink resets the suspects after every successful merge
// of its staged rows, so they are rows not yet merged; a job whose rows
// carry no NULL there keeps them empty and pays one comparison per NOT NULL
// column and row. The zero value is ready to use.
type NullSuspects struct {
	keys  map[int][]Suspect
	index map[int]map[string]int // column → key text → position in keys
}

// Suspect is a staged row that writes NULL into a NOT NULL column.
type Suspect struct {
	Text string // the key as the sink renders it, e.g. "(id=2)"
	Key  []any  // the key for cdc.ValueError.Key
	gone bool   // cleared by a later change of the key
}

// Note records the staged change ch for the NOT NULL columns notNull
// (aligned with the projected columns): a NULL that an INSERT or
// UPDATE_AFTER carries makes its key a suspect; any other change of a
// suspect key that touches the column clears it (a partial row that does
// not carry the column leaves it as it is). keyOf renders ch's key.
func (s *NullSuspects) Note(ch *cdc.Change, notNull []bool, keyOf func(*cdc.Change) (string, []any)) {
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
			continue
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
				s.keys, s.index = map[int][]Suspect{}, map[int]map[string]int{}
			}
			if s.index[i] == nil {
				s.index[i] = map[string]int{}
			}
			s.index[i][text] = len(s.keys[i])
			s.keys[i] = append(s.keys[i], Suspect{Text: text, Key: key})
		}
	}
}

// NoteAppended records the appended change ch for the NOT NULL columns
// notNull (aligned with the projected columns): the first row that
// carries NULL into such a column becomes its suspect and stays one (an
// append writes every row, so no later row clears it). keyOf renders the
// row's key (Suspect.Text, and Suspect.Key, empty for a row without key
// columns).
func (s *NullSuspects) NoteAppended(ch *cdc.Change, notNull []bool, keyOf func(*cdc.Change) (string, []any)) {
	for i, nn := range notNull {
		if !nn || !ch.Has(i) || ch.Row[i] != nil || len(s.keys[i]) > 0 {
			continue
		}
		text, key := keyOf(ch)
		if s.keys == nil {
			s.keys, s.index = map[int][]Suspect{}, map[int]map[string]int{}
		}
		s.keys[i] = append(s.keys[i], Suspect{Text: text, Key: key})
	}
}

// Reset forgets every suspect (after a successful merge).
func (s *NullSuspects) Reset() { s.keys, s.index = nil, nil }

// First returns the first standing suspect of projected column i.
func (s *NullSuspects) First(i int) (Suspect, bool) {
	for _, k := range s.keys[i] {
		if !k.gone {
			return k, true
		}
	}
	return Suspect{}, false
}
