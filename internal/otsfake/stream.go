package otsfake

import (
	"encoding/base64"
	"sort"
	"strconv"
	"strings"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore/otsprotocol"
	"google.golang.org/protobuf/proto"
)

// GetStreamRecord limits.
const (
	defaultRecordLimit = 100
	maxRecordLimit     = 1000
)

// iterator is the decoded form of a shard iterator (and of a GetShardIterator
// token): a position in one shard of one stream.
type iterator struct {
	streamID string
	shardID  string
	offset   int // absolute record offset in the shard
}

const iteratorPrefix = "otsfake-it1|"

func (it iterator) String() string {
	raw := iteratorPrefix + it.streamID + "|" + it.shardID + "|" + strconv.Itoa(it.offset)
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func parseIterator(s string) (iterator, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || !strings.HasPrefix(string(raw), iteratorPrefix) {
		return iterator{}, false
	}
	parts := strings.Split(strings.TrimPrefix(string(raw), iteratorPrefix), "|")
	if len(parts) != 3 {
		return iterator{}, false
	}
	off, err := strconv.Atoi(parts[2])
	if err != nil || off < 0 {
		return iterator{}, false
	}
	return iterator{streamID: parts[0], shardID: parts[1], offset: off}, true
}

// streamByID finds a stream and its table by stream id.
func (s *Server) streamByID(id string) (*table, *stream, *otsError) {
	for _, t := range s.tables {
		if t.stream != nil && t.stream.id == id {
			return t, t.stream, nil
		}
	}
	return nil, nil, newErr(CodeObjectNotExist, "Requested stream data does not exist.")
}

func (s *Server) listStream(body []byte) (message, *otsError) {
	req := &otsprotocol.ListStreamRequest{}
	if e := unmarshal(body, req); e != nil {
		return nil, e
	}
	resp := &otsprotocol.ListStreamResponse{}
	var names []string
	if req.TableName != nil {
		t, e := s.lookupTable(req.GetTableName())
		if e != nil {
			return nil, e
		}
		names = []string{t.name}
	} else {
		for name := range s.tables {
			names = append(names, name)
		}
		sort.Strings(names)
	}
	for _, name := range names {
		t := s.tables[name]
		if t.stream == nil {
			continue
		}
		resp.Streams = append(resp.Streams, &otsprotocol.Stream{
			StreamId:     proto.String(t.stream.id),
			TableName:    proto.String(t.name),
			CreationTime: proto.Int64(t.stream.created),
		})
	}
	return resp, nil
}

func (s *Server) describeStream(body []byte) (message, *otsError) {
	req := &otsprotocol.DescribeStreamRequest{}
	if e := unmarshal(body, req); e != nil {
		return nil, e
	}
	t, st, e := s.streamByID(req.GetStreamId())
	if e != nil {
		return nil, e
	}
	start := 0
	if req.InclusiveStartShardId != nil {
		start = -1
		for i, sh := range st.shards {
			if sh.id == req.GetInclusiveStartShardId() {
				start = i
				break
			}
		}
		if start < 0 {
			return nil, errParam("InclusiveStartShardId '%s' does not exist.", req.GetInclusiveStartShardId())
		}
	}
	limit := len(st.shards)
	if req.ShardLimit != nil {
		if req.GetShardLimit() <= 0 {
			return nil, errParam("ShardLimit must be positive.")
		}
		limit = int(req.GetShardLimit())
	}
	resp := &otsprotocol.DescribeStreamResponse{
		StreamId:       proto.String(st.id),
		ExpirationTime: proto.Int32(st.expirationHours),
		TableName:      proto.String(t.name),
		CreationTime:   proto.Int64(st.created),
		StreamStatus:   otsprotocol.StreamStatus_STREAM_ACTIVE.Enum(),
	}
	end := min(start+limit, len(st.shards))
	for _, sh := range st.shards[start:end] {
		ps := &otsprotocol.StreamShard{ShardId: proto.String(sh.id)}
		if sh.parent != "" {
			ps.ParentId = proto.String(sh.parent)
		}
		if sh.parentSibling != "" {
			ps.ParentSiblingId = proto.String(sh.parentSibling)
		}
		resp.Shards = append(resp.Shards, ps)
	}
	if end < len(st.shards) {
		resp.NextShardId = proto.String(st.shards[end].id)
	}
	return resp, nil
}

func (s *Server) getShardIterator(body []byte) (message, *otsError) {
	req := &otsprotocol.GetShardIteratorRequest{}
	if e := unmarshal(body, req); e != nil {
		return nil, e
	}
	_, st, e := s.streamByID(req.GetStreamId())
	if e != nil {
		return nil, e
	}
	sh := st.shard(req.GetShardId())
	if sh == nil {
		return nil, newErr(CodeObjectNotExist, "Shard '%s' does not exist.", req.GetShardId())
	}
	it := iterator{streamID: st.id, shardID: sh.id, offset: sh.base}
	switch {
	case req.Token != nil:
		tok, ok := parseIterator(req.GetToken())
		if !ok || tok.streamID != st.id || tok.shardID != sh.id {
			return nil, errParam("Invalid token.")
		}
		if tok.offset < sh.base {
			return nil, newErr(CodeTrimmedDataAccess, "Requested stream data is already trimmed or does not exist.")
		}
		it.offset = min(tok.offset, sh.end())
	case req.Timestamp != nil:
		// The first record whose sequence timestamp (µs) is >= Timestamp.
		it.offset = sh.end()
		for i, r := range sh.records {
			if r.row.ext.ts >= req.GetTimestamp() {
				it.offset = sh.base + i
				break
			}
		}
	}
	return &otsprotocol.GetShardIteratorResponse{ShardIterator: proto.String(it.String())}, nil
}

func (s *Server) getStreamRecord(body []byte) (message, *otsError) {
	req := &otsprotocol.GetStreamRecordRequest{}
	if e := unmarshal(body, req); e != nil {
		return nil, e
	}
	it, ok := parseIterator(req.GetShardIterator())
	if !ok {
		return nil, errParam("Invalid shard iterator.")
	}
	t, st, e := s.streamByID(it.streamID)
	if e != nil {
		return nil, e
	}
	sh := st.shard(it.shardID)
	if sh == nil {
		return nil, newErr(CodeObjectNotExist, "Shard '%s' does not exist.", it.shardID)
	}
	if it.offset < sh.base {
		return nil, newErr(CodeTrimmedDataAccess, "Requested stream data is already trimmed or does not exist.")
	}
	if it.offset > sh.end() {
		return nil, errParam("Invalid shard iterator.")
	}
	limit := defaultRecordLimit
	if req.Limit != nil {
		if req.GetLimit() <= 0 || req.GetLimit() > maxRecordLimit {
			return nil, errParam("Limit must be in range [1, %d].", maxRecordLimit)
		}
		limit = int(req.GetLimit())
	}
	from := it.offset - sh.base
	to := min(from+limit, len(sh.records))
	resp := &otsprotocol.GetStreamRecordResponse{Consumed: consumed(1, 0)}
	for _, r := range sh.records[from:to] {
		pr := &otsprotocol.GetStreamRecordResponse_StreamRecord{
			ActionType: r.action.Enum(),
			Record:     encodeRows(r.row),
		}
		if req.TableName != nil {
			pr.TableName = []byte(t.name)
		}
		resp.StreamRecords = append(resp.StreamRecords, pr)
	}
	next := sh.base + to
	if !(sh.closed && next == sh.end()) {
		resp.NextShardIterator = proto.String(iterator{streamID: st.id, shardID: sh.id, offset: next}.String())
	}
	resp.MayMoreRecord = proto.Bool(next < sh.end())
	return resp, nil
}
