package otsfake

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore/otsprotocol"
)

// hashSpace is the size of the key-hash space partitioned among shards.
const hashSpace = uint64(1) << 32

// stream is the change stream of one table.
type stream struct {
	id              string
	expirationHours int32
	created         int64    // µs
	shards          []*shard // in creation order (the DescribeStream order)
	nextShard       int
}

// record is one stream record.
type record struct {
	action otsprotocol.ActionType
	row    *pbRow // pk, cells, delete marker and sequence info
}

// shard is one stream shard. It owns the key hashes in [lo, hi) while open.
type shard struct {
	id            string
	parent        string // "" when none
	parentSibling string // "" when none
	lo, hi        uint64
	closed        bool
	base          int // absolute offset of records[0]; records before it are trimmed
	records       []*record
	lastTS        int64 // µs of the newest record ever appended
	lastRowIndex  int32
}

func newStream(id string, expirationHours int32, created int64, n int) *stream {
	st := &stream{id: id, expirationHours: expirationHours, created: created}
	for i := 0; i < n; i++ {
		lo := hashSpace * uint64(i) / uint64(n)
		hi := hashSpace * uint64(i+1) / uint64(n)
		st.addShard(lo, hi, "", "")
	}
	return st
}

func (st *stream) addShard(lo, hi uint64, parent, sibling string) *shard {
	st.nextShard++
	sh := &shard{id: fmt.Sprintf("shard-%04d", st.nextShard), lo: lo, hi: hi, parent: parent, parentSibling: sibling}
	st.shards = append(st.shards, sh)
	return sh
}

func (st *stream) shard(id string) *shard {
	for _, sh := range st.shards {
		if sh.id == id {
			return sh
		}
	}
	return nil
}

// route returns the open shard owning the hash of the first primary-key
// column of pk.
func (st *stream) route(pk []cell) *shard {
	h := fnv.New32a()
	h.Write(pk[0].val.hashBytes())
	k := uint64(h.Sum32())
	for _, sh := range st.shards {
		if !sh.closed && sh.lo <= k && k < sh.hi {
			return sh
		}
	}
	panic("otsfake: no open shard owns key hash") // shards always cover the space
}

// end returns the absolute offset after the last record.
func (sh *shard) end() int { return sh.base + len(sh.records) }

// appendRecord records a change in the owning shard of st, stamping its
// sequence info from nowMicros.
func (st *stream) appendRecord(nowMicros int64, action otsprotocol.ActionType, row *pbRow) {
	sh := st.route(row.pk)
	ts := nowMicros
	if ts <= sh.lastTS && len(sh.records)+sh.base > 0 {
		ts = sh.lastTS
		sh.lastRowIndex++
	} else {
		sh.lastRowIndex = 0
	}
	sh.lastTS = ts
	row.ext = &seqInfo{epoch: 0, ts: ts, rowIndex: sh.lastRowIndex}
	sh.records = append(sh.records, &record{action: action, row: row})
}

func (s *Server) lockedStream(tableName string) (*stream, error) {
	t, ok := s.tables[tableName]
	if !ok {
		return nil, fmt.Errorf("otsfake: table %q does not exist", tableName)
	}
	if t.stream == nil {
		return nil, fmt.Errorf("otsfake: table %q has no stream", tableName)
	}
	return t.stream, nil
}

// SplitShard closes the open shard shardID of tableName's stream and
// creates two children owning the lower and upper halves of its key-hash
// range; both report the parent as ParentId (ParentSiblingId unset). Reads
// of the parent return its remaining records and then a nil
// NextShardIterator. Returns the children's ids (lower half first), or an
// error if the table, stream or open shard does not exist or the shard's
// range is too small to split.
func (s *Server) SplitShard(tableName, shardID string) (left, right string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.lockedStream(tableName)
	if err != nil {
		return "", "", err
	}
	sh := st.shard(shardID)
	if sh == nil || sh.closed {
		return "", "", fmt.Errorf("otsfake: no open shard %q in stream of %q", shardID, tableName)
	}
	if sh.hi-sh.lo < 2 {
		return "", "", fmt.Errorf("otsfake: shard %q is too small to split", shardID)
	}
	mid := sh.lo + (sh.hi-sh.lo)/2
	sh.closed = true
	l := st.addShard(sh.lo, mid, sh.id, "")
	r := st.addShard(mid, sh.hi, sh.id, "")
	return l.id, r.id, nil
}

// MergeShards closes the open shards a and b of tableName's stream, which
// must own adjacent key-hash ranges, and creates one child owning both
// ranges, with ParentId a and ParentSiblingId b. Returns the child's id, or
// an error if a shard is missing/closed or the ranges are not adjacent.
func (s *Server) MergeShards(tableName, a, b string) (child string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.lockedStream(tableName)
	if err != nil {
		return "", err
	}
	sa, sb := st.shard(a), st.shard(b)
	if sa == nil || sa.closed || sb == nil || sb.closed || a == b {
		return "", fmt.Errorf("otsfake: shards %q and %q must be two distinct open shards of %q", a, b, tableName)
	}
	var lo, hi uint64
	switch {
	case sa.hi == sb.lo:
		lo, hi = sa.lo, sb.hi
	case sb.hi == sa.lo:
		lo, hi = sb.lo, sa.hi
	default:
		return "", fmt.Errorf("otsfake: shards %q and %q do not own adjacent key ranges", a, b)
	}
	sa.closed, sb.closed = true, true
	return st.addShard(lo, hi, a, b).id, nil
}

// Trim drops, in every shard of tableName's stream, the records whose
// sequence timestamp is before the given time (as the service's retention
// does), and returns how many it dropped. Iterators that point at a dropped
// record then fail with OTSTrimmedDataAccess.
func (s *Server) Trim(tableName string, before time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.lockedStream(tableName)
	if err != nil {
		return 0, err
	}
	cut := before.UnixMicro()
	dropped := 0
	for _, sh := range st.shards {
		n := 0
		for n < len(sh.records) && sh.records[n].row.ext.ts < cut {
			n++
		}
		sh.trim(n)
		dropped += n
	}
	return dropped, nil
}

// TrimShard drops the n oldest records of one shard (fewer if it holds
// fewer) and returns how many it dropped.
func (s *Server) TrimShard(tableName, shardID string, n int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.lockedStream(tableName)
	if err != nil {
		return 0, err
	}
	sh := st.shard(shardID)
	if sh == nil {
		return 0, fmt.Errorf("otsfake: no shard %q in stream of %q", shardID, tableName)
	}
	n = max(0, min(n, len(sh.records)))
	sh.trim(n)
	return n, nil
}

func (sh *shard) trim(n int) {
	sh.records = append([]*record(nil), sh.records[n:]...)
	sh.base += n
}

// ShardInfo describes a shard for test assertions.
type ShardInfo struct {
	ID              string
	ParentID        string // "" when none
	ParentSiblingID string // "" when none
	Closed          bool
	Records         int // records currently held (not trimmed)
}

// Shards returns the shards of tableName's stream in DescribeStream order.
func (s *Server) Shards(tableName string) ([]ShardInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.lockedStream(tableName)
	if err != nil {
		return nil, err
	}
	out := make([]ShardInfo, 0, len(st.shards))
	for _, sh := range st.shards {
		out = append(out, ShardInfo{ID: sh.id, ParentID: sh.parent, ParentSiblingID: sh.parentSibling,
			Closed: sh.closed, Records: len(sh.records)})
	}
	return out, nil
}

// ShardFor returns the id of the open shard that a row whose first
// primary-key column is v would be written to. v is an int64, string or
// []byte, as in the SDK.
func (s *Server) ShardFor(tableName string, v any) (string, error) {
	var val value
	switch x := v.(type) {
	case int64:
		val = value{vt: vtInteger, i: x}
	case string:
		val = value{vt: vtString, bs: []byte(x)}
	case []byte:
		val = value{vt: vtBlob, bs: x}
	default:
		return "", fmt.Errorf("otsfake: unsupported primary key type %T", v)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.lockedStream(tableName)
	if err != nil {
		return "", err
	}
	return st.route([]cell{{val: &val}}).id, nil
}
