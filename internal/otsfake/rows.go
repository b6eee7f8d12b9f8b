package otsfake

import (
	"sort"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore/otsprotocol"
	"google.golang.org/protobuf/proto"
)

// rowChange is one decoded write: PutRow, UpdateRow or DeleteRow, in a
// single-row request or a BatchWriteRow entry.
type rowChange struct {
	kind    otsprotocol.OperationType
	row     []byte // PlainBuffer row change
	cond    *otsprotocol.Condition
	content *otsprotocol.ReturnContent
}

func (s *Server) putRow(body []byte) (message, *otsError) {
	req := &otsprotocol.PutRowRequest{}
	if e := unmarshal(body, req); e != nil {
		return nil, e
	}
	t, e := s.lookupTable(req.GetTableName())
	if e != nil {
		return nil, e
	}
	row, e := s.applyChange(t, rowChange{otsprotocol.OperationType_PUT, req.GetRow(), req.GetCondition(), req.GetReturnContent()})
	if e != nil {
		return nil, e
	}
	return &otsprotocol.PutRowResponse{Consumed: consumed(0, 1), Row: row}, nil
}

func (s *Server) updateRow(body []byte) (message, *otsError) {
	req := &otsprotocol.UpdateRowRequest{}
	if e := unmarshal(body, req); e != nil {
		return nil, e
	}
	t, e := s.lookupTable(req.GetTableName())
	if e != nil {
		return nil, e
	}
	row, e := s.applyChange(t, rowChange{otsprotocol.OperationType_UPDATE, req.GetRowChange(), req.GetCondition(), req.GetReturnContent()})
	if e != nil {
		return nil, e
	}
	return &otsprotocol.UpdateRowResponse{Consumed: consumed(0, 1), Row: row}, nil
}

func (s *Server) deleteRow(body []byte) (message, *otsError) {
	req := &otsprotocol.DeleteRowRequest{}
	if e := unmarshal(body, req); e != nil {
		return nil, e
	}
	t, e := s.lookupTable(req.GetTableName())
	if e != nil {
		return nil, e
	}
	row, e := s.applyChange(t, rowChange{otsprotocol.OperationType_DELETE, req.GetPrimaryKey(), req.GetCondition(), req.GetReturnContent()})
	if e != nil {
		return nil, e
	}
	return &otsprotocol.DeleteRowResponse{Consumed: consumed(0, 1), Row: row}, nil
}

func (s *Server) batchWriteRow(body []byte) (message, *otsError) {
	req := &otsprotocol.BatchWriteRowRequest{}
	if e := unmarshal(body, req); e != nil {
		return nil, e
	}
	resp := &otsprotocol.BatchWriteRowResponse{}
	for _, treq := range req.GetTables() {
		tresp := &otsprotocol.TableInBatchWriteRowResponse{TableName: proto.String(treq.GetTableName())}
		t, terr := s.lookupTable(treq.GetTableName())
		for _, r := range treq.GetRows() {
			e := terr
			var row []byte
			if e == nil {
				row, e = s.applyChange(t, rowChange{r.GetType(), r.GetRowChange(), r.GetCondition(), r.GetReturnContent()})
			}
			if e != nil {
				tresp.Rows = append(tresp.Rows, &otsprotocol.RowInBatchWriteRowResponse{
					IsOk:  proto.Bool(false),
					Error: &otsprotocol.Error{Code: proto.String(e.code), Message: proto.String(e.message)},
				})
				continue
			}
			tresp.Rows = append(tresp.Rows, &otsprotocol.RowInBatchWriteRowResponse{
				IsOk: proto.Bool(true), Consumed: consumed(0, 1), Row: row})
		}
		resp.Tables = append(resp.Tables, tresp)
	}
	return resp, nil
}

// applyChange validates and applies one write, appends its stream record,
// and returns the ReturnContent row (nil when none was asked for).
func (s *Server) applyChange(t *table, ch rowChange) ([]byte, *otsError) {
	row, err := decodeOneRow(ch.row)
	if err != nil {
		return nil, errParam("%v", err)
	}
	if e := t.checkPK(row.pk); e != nil {
		return nil, e
	}
	if len(ch.cond.GetColumnCondition()) > 0 {
		return nil, newErr(CodeUnsupportOperation, "otsfake does not support column conditions.")
	}
	key := pkKey(row.pk)
	existing := t.rows[key]
	switch ch.cond.GetRowExistence() {
	case otsprotocol.RowExistenceExpectation_EXPECT_EXIST:
		if existing == nil {
			return nil, newErr(CodeConditionCheckFail, "Condition check failed.")
		}
	case otsprotocol.RowExistenceExpectation_EXPECT_NOT_EXIST:
		if existing != nil {
			return nil, newErr(CodeConditionCheckFail, "Condition check failed.")
		}
	}
	now := s.nowMillis()
	rec := &pbRow{pk: row.pk}
	var action otsprotocol.ActionType

	switch ch.kind {
	case otsprotocol.OperationType_PUT:
		action = otsprotocol.ActionType_PUT_ROW
		nr := &storedRow{pk: row.pk, cols: map[string][]version{}}
		for _, c := range row.cells {
			if c.hasOp || c.val == nil {
				return nil, errParam("PutRow cell '%s' must be a plain value.", c.name)
			}
			if !c.hasTS {
				c.ts, c.hasTS = now, true
			}
			nr.put(c.name, version{c.ts, c.val})
			rec.cells = append(rec.cells, cell{name: c.name, val: c.val, ts: c.ts, hasTS: true})
		}
		nr.trimVersions(int(t.options.GetMaxVersions()))
		t.rows[key] = nr
	case otsprotocol.OperationType_UPDATE:
		action = otsprotocol.ActionType_UPDATE_ROW
		nr := &storedRow{pk: row.pk, cols: map[string][]version{}}
		if existing != nil { // copy, so a failing cell leaves the row untouched
			for name, vs := range existing.cols {
				nr.cols[name] = append([]version(nil), vs...)
			}
		}
		for _, c := range row.cells {
			rc, e := nr.update(c, now)
			if e != nil {
				return nil, e
			}
			rec.cells = append(rec.cells, rc)
		}
		nr.trimVersions(int(t.options.GetMaxVersions()))
		t.rows[key] = nr
	case otsprotocol.OperationType_DELETE:
		action = otsprotocol.ActionType_DELETE_ROW
		if len(row.cells) > 0 {
			return nil, errParam("DeleteRow must carry the primary key only.")
		}
		rec.deleteRow = true
		delete(t.rows, key)
	default:
		return nil, errParam("Unknown operation type %d.", ch.kind)
	}
	if t.stream != nil {
		t.stream.appendRecord(s.nowMicros(), action, rec)
	}
	return returnContent(t.rows[key], row.pk, ch.content), nil
}

// update applies one UpdateRow cell and returns the cell as the stream
// record carries it.
func (r *storedRow) update(c cell, now int64) (cell, *otsError) {
	switch {
	case !c.hasOp:
		if c.val == nil {
			return cell{}, errParam("UpdateRow put cell '%s' has no value.", c.name)
		}
		if !c.hasTS {
			c.ts, c.hasTS = now, true
		}
		r.put(c.name, version{c.ts, c.val})
		return cell{name: c.name, val: c.val, ts: c.ts, hasTS: true}, nil
	case c.op == opDeleteOneVersion:
		if !c.hasTS {
			return cell{}, errParam("DeleteOneVersion of '%s' needs a timestamp.", c.name)
		}
		vs := r.cols[c.name]
		for i, v := range vs {
			if v.ts == c.ts {
				vs = append(vs[:i:i], vs[i+1:]...)
				break
			}
		}
		r.setVersions(c.name, vs)
		return cell{name: c.name, op: opDeleteOneVersion, hasOp: true, ts: c.ts, hasTS: true}, nil
	case c.op == opDeleteAllVersions:
		delete(r.cols, c.name)
		return cell{name: c.name, op: opDeleteAllVersions, hasOp: true}, nil
	case c.op == opIncrement:
		if c.val == nil || c.val.vt != vtInteger {
			return cell{}, errParam("Increment of '%s' needs an integer.", c.name)
		}
		sum := &value{vt: vtInteger, i: c.val.i}
		if vs := r.cols[c.name]; len(vs) > 0 {
			if vs[0].val.vt != vtInteger {
				return cell{}, errParam("Column '%s' is not an integer.", c.name)
			}
			sum.i += vs[0].val.i
		}
		r.put(c.name, version{now, sum})
		return cell{name: c.name, val: sum, ts: now, hasTS: true}, nil
	default:
		return cell{}, errParam("Unknown cell operation %#x on '%s'.", c.op, c.name)
	}
}

// put stores a version, replacing one with the same timestamp, keeping
// versions newest first.
func (r *storedRow) put(name string, v version) {
	vs := r.cols[name]
	out := make([]version, 0, len(vs)+1)
	for _, old := range vs {
		if old.ts != v.ts {
			out = append(out, old)
		}
	}
	out = append(out, v)
	sort.SliceStable(out, func(i, j int) bool { return out[i].ts > out[j].ts })
	r.cols[name] = out
}

func (r *storedRow) setVersions(name string, vs []version) {
	if len(vs) == 0 {
		delete(r.cols, name)
		return
	}
	r.cols[name] = vs
}

func (r *storedRow) trimVersions(max int) {
	if max <= 0 {
		return
	}
	for name, vs := range r.cols {
		if len(vs) > max {
			r.cols[name] = vs[:max]
		}
	}
}

// cells returns the stored cells, columns sorted by name, versions newest
// first, keeping at most maxVersions per column and only columns in want
// (all when want is empty) with versions accepted by keep.
func (r *storedRow) cells(want []string, maxVersions int, keep func(ts int64) bool) []cell {
	names := make([]string, 0, len(r.cols))
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w] = true
	}
	for name := range r.cols {
		if len(want) == 0 || wanted[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []cell
	for _, name := range names {
		n := 0
		for _, v := range r.cols[name] {
			if maxVersions > 0 && n >= maxVersions {
				break
			}
			if keep != nil && !keep(v.ts) {
				continue
			}
			out = append(out, cell{name: name, val: v.val, ts: v.ts, hasTS: true})
			n++
		}
	}
	return out
}

// returnContent builds the row a write returns for its ReturnContent.
func returnContent(r *storedRow, pk []cell, rc *otsprotocol.ReturnContent) []byte {
	if rc == nil || rc.ReturnType == nil {
		return nil
	}
	switch rc.GetReturnType() {
	case otsprotocol.ReturnType_RT_PK:
		return encodeRows(&pbRow{pk: pk})
	case otsprotocol.ReturnType_RT_AFTER_MODIFY:
		out := &pbRow{pk: pk}
		if r != nil && len(rc.GetReturnColumnNames()) > 0 {
			out.cells = r.cells(rc.GetReturnColumnNames(), 1, nil)
		}
		return encodeRows(out)
	}
	return nil
}

func (s *Server) getRow(body []byte) (message, *otsError) {
	req := &otsprotocol.GetRowRequest{}
	if e := unmarshal(body, req); e != nil {
		return nil, e
	}
	t, e := s.lookupTable(req.GetTableName())
	if e != nil {
		return nil, e
	}
	pkRow, err := decodeOneRow(req.GetPrimaryKey())
	if err != nil {
		return nil, errParam("%v", err)
	}
	if e := t.checkPK(pkRow.pk); e != nil {
		return nil, e
	}
	if req.MaxVersions == nil && req.TimeRange == nil {
		return nil, errParam("Neither column_to_get nor time_range is set.")
	}
	resp := &otsprotocol.GetRowResponse{Consumed: consumed(1, 0), Row: []byte{}}
	r := t.rows[pkKey(pkRow.pk)]
	if r == nil {
		return resp, nil
	}
	var keep func(int64) bool
	if tr := req.GetTimeRange(); tr != nil {
		keep = func(ts int64) bool {
			if tr.SpecificTime != nil {
				return ts == tr.GetSpecificTime()
			}
			return ts >= tr.GetStartTime() && (tr.EndTime == nil || ts < tr.GetEndTime())
		}
	}
	resp.Row = encodeRows(&pbRow{pk: r.pk, cells: r.cells(req.GetColumnsToGet(), int(req.GetMaxVersions()), keep)})
	return resp, nil
}
