package tablestore

import (
	"context"
	"fmt"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// ModeChangeFeed is StreamInfo.Mode of a Tablestore stream: every record is
// returned as it was written (no net changes per key, no before-images).
const ModeChangeFeed = "CHANGE_FEED"

// Stream describes the Stream of the table src.Stream names.
//
// TableSchema is the table's primary-key columns, in key order and NOT NULL
// (INTEGER → BIGINT, STRING → STRING, BINARY → BINARY), followed by the
// attribute columns src.Columns declares, in declaration order (Tablestore
// rows are schemaless, so the job says which attribute columns it reads and
// as what type; see the package doc for the accepted types). Key is the
// primary key.
//
// ID is the stream id, which changes when the stream is disabled and enabled
// again. Offset is always the zero Offset: the stream keeps no consumer
// position server-side; the job's checkpoint in the sink database is the
// only position (see Advance).
//
// A missing table or a table without a stream is an error wrapping
// runner.ErrNoStream; a declaration that does not fit wraps ErrBadColumns.
func (s *Source) Stream(ctx context.Context, src plan.Source) (*runner.StreamInfo, error) {
	if s.isClosed() {
		return nil, errClosed
	}
	table := src.Stream
	if table == "" {
		return nil, fmt.Errorf("%w: the job names no Tablestore table (source: TABLE_NAME)", runner.ErrNoStream)
	}
	desc, err := call(ctx, s, "DescribeTable", func(c *tablestore.TableStoreClient) (*tablestore.DescribeTableResponse, error) {
		return c.DescribeTable(&tablestore.DescribeTableRequest{TableName: table})
	})
	if err != nil {
		if otsCode(err) == codeObjectNotExist {
			return nil, fmt.Errorf("%w: table %q does not exist on instance %q (%w)", runner.ErrNoStream, table, s.ep.Instance, err)
		}
		return nil, err
	}
	if desc.TableMeta == nil {
		return nil, fmt.Errorf("%w: DescribeTable %q: no table meta", ErrEmptyResponse, table)
	}
	enabled := desc.StreamDetails != nil && desc.StreamDetails.EnableStream
	schema, err := tableSchema(desc.TableMeta, src.Columns)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", table, err)
	}
	if desc.TableOption != nil && desc.TableOption.MaxVersion > 1 {
		s.log.WarnContext(ctx, "tablestore: table keeps several versions per column; sluice reads the stream as if it kept one (a deleted version becomes NULL)",
			"table", table, "max_versions", desc.TableOption.MaxVersion)
	}
	ls, err := call(ctx, s, "ListStream", func(c *tablestore.TableStoreClient) (*tablestore.ListStreamResponse, error) {
		r, err := c.ListStream(&tablestore.ListStreamRequest{TableName: &table})
		if err == nil && enabled && findStream(r, table) == nil {
			// An empty 200 body decodes as "no streams"; DescribeTable
			// just said there is one, so ask again.
			return nil, fmt.Errorf("%w: ListStream %q returned no stream, DescribeTable reports one", ErrEmptyResponse, table)
		}
		return r, err
	})
	if err != nil {
		return nil, err
	}
	st := findStream(ls, table)
	if st == nil {
		return nil, fmt.Errorf("%w: table %q on instance %q has no Stream enabled; enable it with UpdateTable "+
			"(StreamSpec: EnableStream true, ExpirationTime in hours, e.g. 24 to 168), in the console (table → Tunnel/Stream), "+
			"or when creating the table (CreateTable StreamSpec)", runner.ErrNoStream, table, s.ep.Instance)
	}
	comment := "Tablestore Stream (change feed: PutRow → INSERT, UpdateRow → UPDATE_AFTER partial row, DeleteRow → DELETE key)"
	if desc.StreamDetails != nil && desc.StreamDetails.ExpirationTime > 0 {
		comment += fmt.Sprintf("; retention %d h", desc.StreamDetails.ExpirationTime)
	}
	return &runner.StreamInfo{
		Name:        table,
		Table:       table,
		Mode:        ModeChangeFeed,
		Comment:     comment,
		Created:     time.UnixMicro(st.CreationTime).UTC(),
		ID:          string(*st.Id),
		TableSchema: schema,
	}, nil
}

func findStream(r *tablestore.ListStreamResponse, table string) *tablestore.Stream {
	if r == nil {
		return nil
	}
	for i := range r.Streams {
		st := &r.Streams[i]
		if st.Id != nil && (st.TableName == nil || *st.TableName == table) {
			return st
		}
	}
	return nil
}

// tableSchema builds the row layout: primary key from the table meta, then
// the declared attribute columns.
func tableSchema(meta *tablestore.TableMeta, decls []plan.ColumnDecl) (cdc.Schema, error) {
	var sc cdc.Schema
	for _, pk := range meta.SchemaEntry {
		if pk == nil || pk.Name == nil || pk.Type == nil {
			return cdc.Schema{}, fmt.Errorf("%w: DescribeTable: incomplete primary key schema", ErrEmptyResponse)
		}
		t, err := pkType(*pk.Type)
		if err != nil {
			return cdc.Schema{}, fmt.Errorf("primary key column %q: %w", *pk.Name, err)
		}
		sc.Columns = append(sc.Columns, cdc.Column{Name: *pk.Name, Type: t, NotNull: true})
		sc.Key = append(sc.Key, *pk.Name)
	}
	if len(sc.Key) == 0 {
		return cdc.Schema{}, fmt.Errorf("%w: DescribeTable: no primary key", ErrEmptyResponse)
	}
	seen := map[string]bool{}
	for _, d := range decls {
		at := ""
		if d.Pos.Line > 0 {
			at = d.Pos.String() + ": "
		}
		if d.Name == "" || cdc.IsMetadataColumn(d.Name) {
			return cdc.Schema{}, fmt.Errorf("%s%w: %q is not a usable column name", at, ErrBadColumns, d.Name)
		}
		if seen[d.Name] {
			return cdc.Schema{}, fmt.Errorf("%s%w: column %q declared twice", at, ErrBadColumns, d.Name)
		}
		seen[d.Name] = true
		t, err := cdc.ParseType(d.Type)
		if err != nil {
			return cdc.Schema{}, fmt.Errorf("%scolumn %q: %w", at, d.Name, err)
		}
		if i := keyIndex(sc, d.Name); i >= 0 {
			if t != sc.Columns[i].Type {
				return cdc.Schema{}, fmt.Errorf("%s%w: %q is a primary-key column of type %s (from the table); drop the declaration or declare %s",
					at, ErrBadColumns, d.Name, sc.Columns[i].Type, sc.Columns[i].Type)
			}
			continue
		}
		sc.Columns = append(sc.Columns, cdc.Column{Name: d.Name, Type: t})
	}
	return sc, nil
}

func keyIndex(sc cdc.Schema, name string) int {
	for i, k := range sc.Key {
		if k == name {
			return i
		}
	}
	return -1
}

func pkType(t tablestore.PrimaryKeyType) (cdc.Type, error) {
	switch t {
	case tablestore.PrimaryKeyType_INTEGER:
		return cdc.TypeBigInt, nil
	case tablestore.PrimaryKeyType_STRING:
		return cdc.TypeString, nil
	case tablestore.PrimaryKeyType_BINARY:
		return cdc.TypeBinary, nil
	}
	return cdc.Type{}, fmt.Errorf("%w: unsupported primary key type %d", ErrBadColumns, t)
}

// PartialRows reports that reads may deliver partial rows: an UpdateRow
// record carries only the columns it changed (runner.PartialRowSource).
func (s *Source) PartialRows(*runner.StreamInfo) bool { return true }

// Advance does nothing and returns nil: a Tablestore stream has no consumer
// offset on the server. The job's position is the checkpoint the runner
// commits in the sink database with the rows (runner.Checkpoint), which is
// where the next run starts.
func (s *Source) Advance(ctx context.Context, info *runner.StreamInfo, from, to cdc.Offset) error {
	return ctx.Err()
}

// shardNode is one shard of a DescribeStream answer.
type shardNode struct {
	id, father, mother string
}

// shardList is a stream's shards in DescribeStream order.
type shardList struct {
	nodes      []shardNode
	byID       map[string]int
	expiration int32 // retention in hours
	at         time.Time
}

func (l *shardList) has(id string) bool { _, ok := l.byID[id]; return ok }

// listShards returns the stream's shards, from the cache when it is younger
// than the describe interval and force is false, else by paging
// DescribeStream (InclusiveStartShardId = the previous NextShardId).
func (s *Source) listShards(ctx context.Context, streamID string, force bool) (*shardList, error) {
	s.mu.Lock()
	cached := s.shards[streamID]
	s.mu.Unlock()
	now := s.opt.now()
	if !force && cached != nil && now.Sub(cached.at) < s.opt.describeInterval {
		return cached, nil
	}
	l := &shardList{byID: map[string]int{}, at: now}
	var start *tablestore.ShardId
	for page := 0; ; page++ {
		if page > 100000 {
			return nil, fmt.Errorf("%w: DescribeStream %s does not stop paging", ErrEmptyResponse, streamID)
		}
		sid := tablestore.StreamId(streamID)
		req := &tablestore.DescribeStreamRequest{StreamId: &sid, InclusiveStartShardId: start}
		resp, err := call(ctx, s, "DescribeStream", func(c *tablestore.TableStoreClient) (*tablestore.DescribeStreamResponse, error) {
			return c.DescribeStream(req)
		})
		if err != nil {
			return nil, err
		}
		l.expiration = resp.ExpirationTime
		for _, sh := range resp.Shards {
			if sh == nil || sh.SelfShard == nil {
				continue
			}
			n := shardNode{id: string(*sh.SelfShard)}
			if sh.FatherShard != nil {
				n.father = string(*sh.FatherShard)
			}
			if sh.MotherShard != nil {
				n.mother = string(*sh.MotherShard)
			}
			if _, dup := l.byID[n.id]; dup {
				continue
			}
			l.byID[n.id] = len(l.nodes)
			l.nodes = append(l.nodes, n)
		}
		if resp.NextShardId == nil || *resp.NextShardId == "" || (start != nil && *resp.NextShardId == *start) {
			break
		}
		start = resp.NextShardId
	}
	s.mu.Lock()
	if !s.closed {
		s.shards[streamID] = l
	}
	s.mu.Unlock()
	s.log.DebugContext(ctx, "tablestore: described stream", "stream", streamID, "shards", len(l.nodes))
	return l, nil
}
