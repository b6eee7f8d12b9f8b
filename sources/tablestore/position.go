package tablestore

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"
)

// Sequence is a stream record's sequence info: it strictly increases along
// one shard, in the order (Epoch, Timestamp, RowIndex). Timestamp is in
// microseconds since the Unix epoch (server clock).
type Sequence struct {
	Epoch     int32
	Timestamp int64 // µs
	RowIndex  int32
}

func seqOf(info *tablestore.RecordSequenceInfo) Sequence {
	if info == nil {
		return Sequence{}
	}
	return Sequence{Epoch: info.Epoch, Timestamp: info.Timestamp, RowIndex: info.RowIndex}
}

// IsZero reports whether q is the zero Sequence ("no record yet").
func (q Sequence) IsZero() bool { return q == Sequence{} }

// Compare orders sequences along a shard: -1, 0 or +1.
func (q Sequence) Compare(o Sequence) int {
	if c := cmp.Compare(q.Epoch, o.Epoch); c != 0 {
		return c
	}
	if c := cmp.Compare(q.Timestamp, o.Timestamp); c != 0 {
		return c
	}
	return cmp.Compare(q.RowIndex, o.RowIndex)
}

// Time returns the sequence timestamp as a UTC time.
func (q Sequence) Time() time.Time { return time.UnixMicro(q.Timestamp).UTC() }

// String is "EPOCH:TIMESTAMP_US:ROW_INDEX", the form stored in positions.
func (q Sequence) String() string {
	return strconv.FormatInt(int64(q.Epoch), 10) + ":" + strconv.FormatInt(q.Timestamp, 10) + ":" + strconv.FormatInt(int64(q.RowIndex), 10)
}

func parseSequence(s string) (Sequence, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return Sequence{}, fmt.Errorf("sequence %q is not EPOCH:TIMESTAMP_US:ROW_INDEX", s)
	}
	e, err1 := strconv.ParseInt(parts[0], 10, 32)
	ts, err2 := strconv.ParseInt(parts[1], 10, 64)
	ri, err3 := strconv.ParseInt(parts[2], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return Sequence{}, fmt.Errorf("sequence %q is not EPOCH:TIMESTAMP_US:ROW_INDEX", s)
	}
	return Sequence{Epoch: int32(e), Timestamp: ts, RowIndex: int32(ri)}, nil
}

// Position is the checkpoint of one shard: the value of the shard's entry
// in cdc.Offset.Positions (the partition is the shard id).
//
// Encoded as JSON:
//
//	{"it":"ITERATOR","seq":"EPOCH:TS_US:ROW","v":VERSION}   reading
//	{"done":true,"v":VERSION}                                closed, read to its end
//
// Iterator is the shard iterator to read from: the iterator of the page
// holding the last returned record while that page is partly returned,
// else the page after it. Last is the sequence of the last returned record
// (zero if none); records at or before it are skipped when the page is read
// again. Version is the __commit_version of the last returned record, or of
// the last record of the shard's parents before any was returned; children
// continue above it. A shard absent from the offset is read from its oldest
// record, once its parents are done.
type Position struct {
	Iterator string
	Last     Sequence
	Version  int64
	Done     bool
}

type positionJSON struct {
	Iterator string `json:"it,omitempty"`
	Seq      string `json:"seq,omitempty"`
	Version  int64  `json:"v,omitempty"`
	Done     bool   `json:"done,omitempty"`
}

// Encode returns the stored form (see Position).
func (p Position) Encode() string {
	j := positionJSON{Iterator: p.Iterator, Version: p.Version, Done: p.Done}
	if p.Done {
		j.Iterator = ""
	} else if !p.Last.IsZero() {
		j.Seq = p.Last.String()
	}
	b, err := json.Marshal(j)
	if err != nil { // strings and integers always marshal
		panic(err)
	}
	return string(b)
}

// DecodePosition parses the form Encode returns. Errors wrap
// ErrBadPosition.
func DecodePosition(s string) (Position, error) {
	var j positionJSON
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return Position{}, fmt.Errorf("%w %q: %v", ErrBadPosition, s, err)
	}
	p := Position{Iterator: j.Iterator, Version: j.Version, Done: j.Done}
	if j.Seq != "" {
		q, err := parseSequence(j.Seq)
		if err != nil {
			return Position{}, fmt.Errorf("%w: %v", ErrBadPosition, err)
		}
		p.Last = q
	}
	if !p.Done && p.Iterator == "" && !p.Last.IsZero() {
		return Position{}, fmt.Errorf("%w %q: a sequence without an iterator", ErrBadPosition, s)
	}
	return p, nil
}

// commitVersion derives the __commit_version of a record: its sequence
// timestamp in µs times 1000 plus its row index (capped at 999), raised to
// prev+1 when that is not above prev, the version of the record returned
// before it in the same shard lineage (the shard, then its parents). So
// versions strictly increase along a shard and from parents to children,
// hence per primary key, and track commit time closely (version/1000 is
// about the commit µs).
func commitVersion(q Sequence, prev int64) int64 {
	v := q.Timestamp*1000 + int64(min(max(q.RowIndex, 0), 999))
	return max(v, prev+1)
}
