package cdc

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Offset is a table stream's position: one opaque position per partition.
// Single-partition sources (SQLite, PostgreSQL) use the partition "";
// Tablestore uses one entry per shard. Positions are meaningful only to the
// source that produced them. The zero Offset (no partitions) means "the
// start of the stream".
type Offset struct {
	Positions map[string]string `json:"positions,omitempty"`
}

// SingleOffset returns an offset of one unnamed partition.
func SingleOffset(pos string) Offset { return Offset{Positions: map[string]string{"": pos}} }

// IsZero reports whether the offset has no positions.
func (o Offset) IsZero() bool { return len(o.Positions) == 0 }

// Get returns the position of a partition ("" for single-partition sources).
func (o Offset) Get(partition string) (string, bool) {
	p, ok := o.Positions[partition]
	return p, ok
}

// With returns a copy of o with partition set to position.
func (o Offset) With(partition, position string) Offset {
	m := maps.Clone(o.Positions)
	if m == nil {
		m = map[string]string{}
	}
	m[partition] = position
	return Offset{Positions: m}
}

// Equal reports whether two offsets hold the same positions.
func (o Offset) Equal(p Offset) bool { return maps.Equal(o.Positions, p.Positions) }

// String renders the offset for humans: the bare position for a single
// partition, else "shard=pos, …" sorted by partition.
func (o Offset) String() string {
	if o.IsZero() {
		return "(start)"
	}
	if p, ok := o.Positions[""]; ok && len(o.Positions) == 1 {
		return p
	}
	keys := slices.Sorted(maps.Keys(o.Positions))
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += k + "=" + o.Positions[k]
	}
	return s
}

// Encode returns the JSON form stored in checkpoint tables.
func (o Offset) Encode() string {
	b, err := json.Marshal(o)
	if err != nil { // a map[string]string always marshals
		panic(err)
	}
	return string(b)
}

// DecodeOffset parses the form Encode returns. An empty string is the zero
// Offset. It returns an error wrapping ErrBadOffset otherwise.
func DecodeOffset(s string) (Offset, error) {
	var o Offset
	if s == "" {
		return o, nil
	}
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return Offset{}, fmt.Errorf("%w: %v", ErrBadOffset, err)
	}
	return o, nil
}
