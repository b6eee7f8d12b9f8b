package otsfake

import (
	"fmt"
	"sort"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore/otsprotocol"
	"google.golang.org/protobuf/proto"
)

// Defaults the service applies to omitted table options.
const (
	defaultTimeToLive          = -1
	defaultMaxVersions         = 1
	defaultDeviationCellVerSec = 86400
)

// table is one table: schema, options, rows and optional stream.
type table struct {
	name     string
	pk       []*otsprotocol.PrimaryKeySchema
	defined  []*otsprotocol.DefinedColumnSchema
	options  *otsprotocol.TableOptions
	read     int32
	write    int32
	created  int64 // µs
	rows     map[string]*storedRow
	stream   *stream // nil when the stream is disabled
	streamOn int64   // µs, last time the stream was enabled
}

// version is one version of an attribute column.
type version struct {
	ts  int64 // ms
	val *value
}

// storedRow is a row: its primary key and, per column, versions newest first.
type storedRow struct {
	pk   []cell
	cols map[string][]version
}

func (s *Server) lookupTable(name string) (*table, *otsError) {
	t, ok := s.tables[name]
	if !ok {
		return nil, errTableNotExist()
	}
	return t, nil
}

func (s *Server) createTable(body []byte) (message, *otsError) {
	req := &otsprotocol.CreateTableRequest{}
	if e := unmarshal(body, req); e != nil {
		return nil, e
	}
	meta := req.GetTableMeta()
	name := meta.GetTableName()
	if name == "" {
		return nil, errParam("Invalid table name: ''.")
	}
	if n := len(meta.GetPrimaryKey()); n < 1 || n > 4 {
		return nil, errParam("The number of primary key columns must be in range: [1, 4].")
	}
	for _, pk := range meta.GetPrimaryKey() {
		switch pk.GetType() {
		case otsprotocol.PrimaryKeyType_INTEGER, otsprotocol.PrimaryKeyType_STRING, otsprotocol.PrimaryKeyType_BINARY:
		default:
			return nil, errParam("Invalid type of primary key column '%s'.", pk.GetName())
		}
		if pk.Option != nil && pk.GetOption() == otsprotocol.PrimaryKeyOption_AUTO_INCREMENT {
			return nil, newErr(CodeUnsupportOperation, "otsfake does not support auto-increment primary keys.")
		}
	}
	if _, exists := s.tables[name]; exists {
		return nil, newErr(CodeObjectAlreadyExist, "Requested table already exists.")
	}
	opts := &otsprotocol.TableOptions{
		TimeToLive:                proto.Int32(defaultTimeToLive),
		MaxVersions:               proto.Int32(defaultMaxVersions),
		DeviationCellVersionInSec: proto.Int64(defaultDeviationCellVerSec),
		AllowUpdate:               proto.Bool(true),
	}
	if o := req.GetTableOptions(); o != nil {
		if o.TimeToLive != nil {
			opts.TimeToLive = proto.Int32(o.GetTimeToLive())
		}
		if o.MaxVersions != nil && o.GetMaxVersions() > 0 {
			opts.MaxVersions = proto.Int32(o.GetMaxVersions())
		}
		if o.DeviationCellVersionInSec != nil {
			opts.DeviationCellVersionInSec = proto.Int64(o.GetDeviationCellVersionInSec())
		}
		if o.AllowUpdate != nil {
			opts.AllowUpdate = proto.Bool(o.GetAllowUpdate())
		}
		if o.UpdateFullRow != nil {
			opts.UpdateFullRow = proto.Bool(o.GetUpdateFullRow())
		}
	}
	t := &table{
		name:    name,
		pk:      meta.GetPrimaryKey(),
		defined: meta.GetDefinedColumn(),
		options: opts,
		read:    req.GetReservedThroughput().GetCapacityUnit().GetRead(),
		write:   req.GetReservedThroughput().GetCapacityUnit().GetWrite(),
		created: s.nowMicros(),
		rows:    map[string]*storedRow{},
	}
	if spec := req.GetStreamSpec(); spec.GetEnableStream() {
		exp := spec.GetExpirationTime()
		if exp <= 0 {
			return nil, errParam("Expiration time of stream must be positive.")
		}
		t.streamOn = t.created
		t.stream = newStream(fmt.Sprintf("%s_%d", name, t.created), exp, t.created, s.shardsPerStream)
	}
	s.tables[name] = t
	return &otsprotocol.CreateTableResponse{}, nil
}

func (s *Server) describeTable(body []byte) (message, *otsError) {
	req := &otsprotocol.DescribeTableRequest{}
	if e := unmarshal(body, req); e != nil {
		return nil, e
	}
	t, e := s.lookupTable(req.GetTableName())
	if e != nil {
		return nil, e
	}
	resp := &otsprotocol.DescribeTableResponse{
		TableMeta: &otsprotocol.TableMeta{
			TableName:     proto.String(t.name),
			PrimaryKey:    t.pk,
			DefinedColumn: t.defined,
		},
		ReservedThroughputDetails: &otsprotocol.ReservedThroughputDetails{
			CapacityUnit: &otsprotocol.CapacityUnit{
				Read: proto.Int32(t.read), Write: proto.Int32(t.write)},
			LastIncreaseTime: proto.Int64(t.created / 1e6),
		},
		TableOptions: t.options,
		TableStatus:  otsprotocol.TableStatus_ACTIVE.Enum(),
	}
	if t.stream != nil {
		resp.StreamDetails = &otsprotocol.StreamDetails{
			EnableStream:   proto.Bool(true),
			StreamId:       proto.String(t.stream.id),
			ExpirationTime: proto.Int32(t.stream.expirationHours),
			LastEnableTime: proto.Int64(t.streamOn),
		}
	} else {
		resp.StreamDetails = &otsprotocol.StreamDetails{EnableStream: proto.Bool(false)}
	}
	return resp, nil
}

func (s *Server) listTable(body []byte) (message, *otsError) {
	resp := &otsprotocol.ListTableResponse{}
	for name := range s.tables {
		resp.TableNames = append(resp.TableNames, name)
	}
	sort.Strings(resp.TableNames)
	return resp, nil
}

func (s *Server) deleteTable(body []byte) (message, *otsError) {
	req := &otsprotocol.DeleteTableRequest{}
	if e := unmarshal(body, req); e != nil {
		return nil, e
	}
	if _, e := s.lookupTable(req.GetTableName()); e != nil {
		return nil, e
	}
	delete(s.tables, req.GetTableName())
	return &otsprotocol.DeleteTableResponse{}, nil
}

// checkPK validates a request primary key against the table schema.
func (t *table) checkPK(pk []cell) *otsError {
	if len(pk) != len(t.pk) {
		return errParam("Validate PK size fail. Input: %d, Meta: %d.", len(pk), len(t.pk))
	}
	for i, c := range pk {
		schema := t.pk[i]
		if c.name != schema.GetName() {
			return errParam("Validate PK name fail. Input: %s, Meta: %s.", c.name, schema.GetName())
		}
		if c.val == nil {
			return errParam("Primary key column '%s' has no value.", c.name)
		}
		want := map[otsprotocol.PrimaryKeyType]byte{
			otsprotocol.PrimaryKeyType_INTEGER: vtInteger,
			otsprotocol.PrimaryKeyType_STRING:  vtString,
			otsprotocol.PrimaryKeyType_BINARY:  vtBlob,
		}[schema.GetType()]
		if c.val.vt != want {
			return errParam("Validate PK type fail. Input: %#x, Meta: %s.", c.val.vt, schema.GetType())
		}
	}
	return nil
}
