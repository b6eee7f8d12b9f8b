package otsfake

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// PlainBuffer constants, as in tablestore/plain_buffer.go of the SDK.
const (
	pbHeader = 0x75

	tagRowPK           = 0x1
	tagRowData         = 0x2
	tagCell            = 0x3
	tagCellName        = 0x4
	tagCellValue       = 0x5
	tagCellType        = 0x6
	tagCellTimestamp   = 0x7
	tagDeleteRowMarker = 0x8
	tagRowChecksum     = 0x9
	tagCellChecksum    = 0xA
	tagExtension       = 0xB
	tagSeqInfo         = 0xC
	tagSeqInfoEpoch    = 0xD
	tagSeqInfoTS       = 0xE
	tagSeqInfoRowIndex = 0xF

	// Cell operation types.
	opDeleteAllVersions = 0x1
	opDeleteOneVersion  = 0x3
	opIncrement         = 0x4

	// Variant (value) types.
	vtInteger       = 0x0
	vtDouble        = 0x1
	vtBoolean       = 0x2
	vtString        = 0x3
	vtBlob          = 0x7
	vtInfMin        = 0x9
	vtInfMax        = 0xa
	vtAutoIncrement = 0xb

	// seqInfoLen is the byte length after the TAG_SEQ_INFO length field:
	// epoch (1+4) + timestamp (1+8) + row index (1+4).
	seqInfoLen = 19
	// extensionLen is the byte length after the TAG_EXTENSION length field:
	// TAG_SEQ_INFO (1) + its length (4) + seqInfoLen.
	extensionLen = 1 + 4 + seqInfoLen
)

// value is one PlainBuffer cell value.
type value struct {
	vt byte   // one of the vt* constants
	i  int64  // vtInteger; the IEEE-754 bits for vtDouble
	b  bool   // vtBoolean
	bs []byte // vtString, vtBlob
}

// cell is one PlainBuffer cell: a primary-key column or an attribute column
// (possibly a delete or increment operation).
type cell struct {
	name  string
	val   *value // nil when the cell carries no value (deletes)
	op    byte   // cell operation type, meaningful when hasOp
	hasOp bool
	ts    int64 // cell version in milliseconds, meaningful when hasTS
	hasTS bool
}

// seqInfo is the sequence-info extension of a stream record.
type seqInfo struct {
	epoch    int32
	ts       int64 // microseconds
	rowIndex int32
}

// pbRow is one PlainBuffer row.
type pbRow struct {
	pk        []cell
	cells     []cell
	deleteRow bool
	ext       *seqInfo
}

// crc8 is the CRC-8 (polynomial 0x07) used by PlainBuffer checksums.
var crc8Table = func() (t [256]byte) {
	for i := range t {
		x := byte(i)
		for j := 0; j < 8; j++ {
			if x&0x80 != 0 {
				x = x<<1 ^ 0x07
			} else {
				x <<= 1
			}
		}
		t[i] = x
	}
	return t
}()

func crcByte(crc, b byte) byte { return crc8Table[crc^b] }

func crcBytes(crc byte, bs []byte) byte {
	for _, b := range bs {
		crc = crcByte(crc, b)
	}
	return crc
}

func crcInt32(crc byte, v int32) byte {
	for i := 0; i < 4; i++ {
		crc = crcByte(crc, byte(v))
		v >>= 8
	}
	return crc
}

func crcInt64(crc byte, v int64) byte {
	for i := 0; i < 8; i++ {
		crc = crcByte(crc, byte(v))
		v >>= 8
	}
	return crc
}

func (v *value) checksum(crc byte) byte {
	crc = crcByte(crc, v.vt)
	switch v.vt {
	case vtInteger, vtDouble:
		crc = crcInt64(crc, v.i)
	case vtBoolean:
		if v.b {
			crc = crcByte(crc, 1)
		} else {
			crc = crcByte(crc, 0)
		}
	case vtString, vtBlob:
		crc = crcInt32(crc, int32(len(v.bs)))
		crc = crcBytes(crc, v.bs)
	}
	return crc
}

// checksum follows the SDK: name, value, timestamp, then operation type.
func (c *cell) checksum() byte {
	crc := crcBytes(0, []byte(c.name))
	if c.val != nil {
		crc = c.val.checksum(crc)
	}
	if c.hasTS {
		crc = crcInt64(crc, c.ts)
	}
	if c.hasOp {
		crc = crcByte(crc, c.op)
	}
	return crc
}

// checksum covers the cell checksums and the delete marker; the extension is
// not part of it (as in the SDKs).
func (r *pbRow) checksum() byte {
	var crc byte
	for i := range r.pk {
		crc = crcByte(crc, r.pk[i].checksum())
	}
	for i := range r.cells {
		crc = crcByte(crc, r.cells[i].checksum())
	}
	if r.deleteRow {
		return crcByte(crc, 1)
	}
	return crcByte(crc, 0)
}

// ---- encoding ----

type pbWriter struct{ bytes.Buffer }

func (w *pbWriter) u32(v int32) { _ = binary.Write(&w.Buffer, binary.LittleEndian, v) }
func (w *pbWriter) u64(v int64) { _ = binary.Write(&w.Buffer, binary.LittleEndian, v) }

func (w *pbWriter) value(v *value) {
	w.WriteByte(tagCellValue)
	switch v.vt {
	case vtInteger, vtDouble:
		w.u32(1 + 8)
		w.WriteByte(v.vt)
		w.u64(v.i)
	case vtBoolean:
		w.u32(2)
		w.WriteByte(v.vt)
		if v.b {
			w.WriteByte(1)
		} else {
			w.WriteByte(0)
		}
	case vtString, vtBlob:
		w.u32(int32(1 + 4 + len(v.bs)))
		w.WriteByte(v.vt)
		w.u32(int32(len(v.bs)))
		w.Write(v.bs)
	default:
		w.u32(1)
		w.WriteByte(v.vt)
	}
}

func (w *pbWriter) cell(c *cell) {
	w.WriteByte(tagCell)
	w.WriteByte(tagCellName)
	w.u32(int32(len(c.name)))
	w.WriteString(c.name)
	if c.val != nil {
		w.value(c.val)
	}
	if c.hasOp {
		w.WriteByte(tagCellType)
		w.WriteByte(c.op)
	}
	if c.hasTS {
		w.WriteByte(tagCellTimestamp)
		w.u64(c.ts)
	}
	w.WriteByte(tagCellChecksum)
	w.WriteByte(c.checksum())
}

func (w *pbWriter) row(r *pbRow) {
	w.WriteByte(tagRowPK)
	for i := range r.pk {
		w.cell(&r.pk[i])
	}
	if len(r.cells) > 0 {
		w.WriteByte(tagRowData)
		for i := range r.cells {
			w.cell(&r.cells[i])
		}
	}
	if r.deleteRow {
		w.WriteByte(tagDeleteRowMarker)
	}
	if r.ext != nil {
		w.WriteByte(tagExtension)
		w.u32(extensionLen)
		w.WriteByte(tagSeqInfo)
		w.u32(seqInfoLen)
		w.WriteByte(tagSeqInfoEpoch)
		w.u32(r.ext.epoch)
		w.WriteByte(tagSeqInfoTS)
		w.u64(r.ext.ts)
		w.WriteByte(tagSeqInfoRowIndex)
		w.u32(r.ext.rowIndex)
	}
	w.WriteByte(tagRowChecksum)
	w.WriteByte(r.checksum())
}

// encodeRows encodes rows as one PlainBuffer block (header + rows).
func encodeRows(rows ...*pbRow) []byte {
	var w pbWriter
	w.u32(pbHeader)
	for _, r := range rows {
		w.row(r)
	}
	return w.Bytes()
}

// ---- decoding ----

var errPlainBuffer = errors.New("malformed PlainBuffer")

type pbReader struct {
	b   []byte
	off int
	err error
}

func (r *pbReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at offset %d", errPlainBuffer, fmt.Sprintf(format, args...), r.off)
	}
}

func (r *pbReader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.b)-r.off < n {
		r.fail("unexpected end of data")
		return false
	}
	return true
}

func (r *pbReader) peek() int {
	if r.err != nil || r.off >= len(r.b) {
		return -1
	}
	return int(r.b[r.off])
}

func (r *pbReader) byte1() byte {
	if !r.need(1) {
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *pbReader) i32() int32 {
	if !r.need(4) {
		return 0
	}
	r.off += 4
	return int32(binary.LittleEndian.Uint32(r.b[r.off-4:]))
}

func (r *pbReader) i64() int64 {
	if !r.need(8) {
		return 0
	}
	r.off += 8
	return int64(binary.LittleEndian.Uint64(r.b[r.off-8:]))
}

func (r *pbReader) raw(n int32) []byte {
	if !r.need(int(n)) {
		return nil
	}
	r.off += int(n)
	return append([]byte(nil), r.b[r.off-int(n):r.off]...)
}

func (r *pbReader) expect(tag byte) {
	if got := r.byte1(); r.err == nil && got != tag {
		r.off--
		r.fail("expected tag %#x, got %#x", tag, got)
	}
}

func (r *pbReader) value() *value {
	size := r.i32()
	start := r.off
	v := &value{vt: r.byte1()}
	switch v.vt {
	case vtInteger, vtDouble:
		v.i = r.i64()
	case vtBoolean:
		v.b = r.byte1() != 0
	case vtString, vtBlob:
		v.bs = r.raw(r.i32())
	case vtInfMin, vtInfMax, vtAutoIncrement:
	default:
		r.fail("unknown value type %#x", v.vt)
	}
	if r.err == nil && r.off-start != int(size) {
		r.fail("value length prefix %d does not match %d", size, r.off-start)
	}
	return v
}

func (r *pbReader) cell() cell {
	var c cell
	r.expect(tagCell)
	r.expect(tagCellName)
	c.name = string(r.raw(r.i32()))
	if r.peek() == tagCellValue {
		r.off++
		c.val = r.value()
	}
	if r.peek() == tagCellType {
		r.off++
		c.op, c.hasOp = r.byte1(), true
	}
	if r.peek() == tagCellTimestamp {
		r.off++
		c.ts, c.hasTS = r.i64(), true
	}
	r.expect(tagCellChecksum)
	if sum := r.byte1(); r.err == nil && sum != c.checksum() {
		r.fail("checksum mismatch in cell %q", c.name)
	}
	return c
}

func (r *pbReader) row() *pbRow {
	row := &pbRow{}
	r.expect(tagRowPK)
	for r.peek() == tagCell {
		row.pk = append(row.pk, r.cell())
	}
	if r.peek() == tagRowData {
		r.off++
		for r.peek() == tagCell {
			row.cells = append(row.cells, r.cell())
		}
	}
	if r.peek() == tagDeleteRowMarker {
		r.off++
		row.deleteRow = true
	}
	if r.peek() == tagExtension {
		r.off++
		r.raw(r.i32()) // the fake never needs request extensions
	}
	r.expect(tagRowChecksum)
	if sum := r.byte1(); r.err == nil && sum != row.checksum() {
		r.fail("row checksum mismatch")
	}
	return row
}

// decodeRows decodes a PlainBuffer block (header + rows), verifying the
// cell and row checksums.
func decodeRows(b []byte) ([]*pbRow, error) {
	r := &pbReader{b: b}
	if h := r.i32(); r.err == nil && h != pbHeader {
		return nil, fmt.Errorf("%w: bad header %#x", errPlainBuffer, h)
	}
	var rows []*pbRow
	for r.err == nil && r.off < len(r.b) {
		rows = append(rows, r.row())
	}
	if r.err != nil {
		return nil, r.err
	}
	return rows, nil
}

// decodeOneRow decodes a PlainBuffer block that must hold exactly one row.
func decodeOneRow(b []byte) (*pbRow, error) {
	rows, err := decodeRows(b)
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 {
		return nil, fmt.Errorf("%w: expected 1 row, got %d", errPlainBuffer, len(rows))
	}
	return rows[0], nil
}

// ---- helpers ----

// key returns a canonical encoding of a primary key, usable as a map key.
func pkKey(pk []cell) string {
	var w pbWriter
	for i := range pk {
		w.cell(&pk[i])
	}
	return w.String()
}

// hashBytes returns the bytes hashed to route a row to a shard.
func (v *value) hashBytes() []byte {
	out := []byte{v.vt}
	switch v.vt {
	case vtInteger, vtDouble:
		out = binary.LittleEndian.AppendUint64(out, uint64(v.i))
	case vtBoolean:
		if v.b {
			out = append(out, 1)
		}
	default:
		out = append(out, v.bs...)
	}
	return out
}
