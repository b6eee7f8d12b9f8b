package runner

import (
	"encoding/hex"
	"fmt"

	"github.com/sluicedata/sluice/cdc"
)

// keyOf returns the primary-key values of a table row (the backfill's
// keyset position).
func (b *backfill) keyOf(row []any) []any {
	key := make([]any, len(b.keyIdx))
	for i, k := range b.keyIdx {
		key[i] = row[k]
	}
	return key
}

// lastKey decodes the state's last key (nil when nothing was copied).
func (b *backfill) lastKey() ([]any, error) {
	key, err := decodeKey(b.state.LastKey, b.keyT)
	if err != nil {
		return nil, fmt.Errorf("job %s: backfill state: last key: %w", b.job, err)
	}
	return key, nil
}

// encodeKey renders canonical key values as text (cdc.FormatValue; BINARY
// as plain hex) for the JSON state; decodeKey reverses it with cdc.Coerce.
func encodeKey(key []any, types []cdc.Type) []*string {
	if key == nil {
		return nil
	}
	out := make([]*string, len(key))
	for i, v := range key {
		if v == nil {
			continue
		}
		s := cdc.FormatValue(v, types[i])
		if bs, ok := v.([]byte); ok {
			s = hex.EncodeToString(bs)
		}
		out[i] = &s
	}
	return out
}

func decodeKey(enc []*string, types []cdc.Type) ([]any, error) {
	if enc == nil {
		return nil, nil
	}
	if len(enc) != len(types) {
		return nil, fmt.Errorf("%d values for a key of %d columns", len(enc), len(types))
	}
	out := make([]any, len(enc))
	for i, s := range enc {
		if s == nil {
			continue
		}
		var v any = *s
		if types[i].Kind == cdc.KindBinary {
			bs, err := hex.DecodeString(*s)
			if err != nil {
				return nil, err
			}
			v = bs
		}
		c, err := cdc.Coerce(v, types[i])
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}
