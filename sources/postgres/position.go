package postgres

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicedata/sluice/cdc"
)

// Position is a parsed stream position (the single partition "" of a
// cdc.Offset): "sys=<system_identifier> batch=<n> snap=<xmin:xmax:xip,…>"
// plus " initial" while a SHOW_INITIAL_ROWS stream has not been read.
type Position struct {
	System  string // pg_control_system().system_identifier, decimal
	Batch   int64  // reads that produced this position
	Snap    string // pg_snapshot text "xmin:xmax:xip1,xip2"
	Initial bool   // the initial rows are still to be returned

	// Not stored: set by readPoint on the read point of a read from an
	// offset whose window's __seq span is below 2^32 (see seqVersion).
	hasSeqBase bool
	seqBase    int64 // min(__seq) of the window - 1
	// windowRows bounds the log rows of the window (max - min + 1 of its
	// __seq), for sizing work_mem (workMemSQL); 0 when unknown.
	windowRows int64
	// tableRows estimates the tracked table's rows (windowTopQuery); 0
	// when not estimated.
	tableRows int64
	// noLogRows: the window holds no row of the change log (readPoint
	// found none between the from position and the read point), so a
	// read to this position consumes no log row.
	noLogRows bool
}

// Xmin returns the snapshot's xmin.
func (p Position) Xmin() uint64 { n, _, _ := p.parts(); return n }

// Xmax returns the snapshot's xmax.
func (p Position) Xmax() uint64 { _, n, _ := p.parts(); return n }

// Xip returns the snapshot's in-progress transaction ids.
func (p Position) Xip() []uint64 { _, _, x := p.parts(); return x }

func (p Position) parts() (xmin, xmax uint64, xip []uint64) {
	f := strings.Split(p.Snap, ":")
	if len(f) != 3 {
		return 0, 0, nil
	}
	xmin, _ = strconv.ParseUint(f[0], 10, 64)
	xmax, _ = strconv.ParseUint(f[1], 10, 64)
	if f[2] != "" {
		for _, s := range strings.Split(f[2], ",") {
			n, _ := strconv.ParseUint(s, 10, 64)
			xip = append(xip, n)
		}
	}
	return xmin, xmax, xip
}

// String renders the position as stored.
func (p Position) String() string {
	s := fmt.Sprintf("sys=%s batch=%d snap=%s", p.System, p.Batch, p.Snap)
	if p.Initial {
		s += " initial"
	}
	return s
}

// Offset returns the position as a single-partition offset.
func (p Position) Offset() cdc.Offset { return cdc.SingleOffset(p.String()) }

// ParsePosition parses the text String returns. It returns an error
// wrapping ErrBadPosition otherwise.
func ParsePosition(s string) (Position, error) {
	var p Position
	bad := func(why string) (Position, error) {
		return Position{}, fmt.Errorf("%w %q: %s", ErrBadPosition, s, why)
	}
	seen := 0
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "sys":
			if _, err := strconv.ParseUint(v, 10, 64); err != nil {
				return bad("sys is not a system identifier")
			}
			p.System = v
			seen |= 1
		case "batch":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return bad("batch is not a counter")
			}
			p.Batch = n
			seen |= 2
		case "snap":
			if !validSnapshot(v) {
				return bad("snap is not a pg_snapshot")
			}
			p.Snap = v
			seen |= 4
		case "initial":
			p.Initial = true
		default:
			return bad("unknown field " + k)
		}
	}
	if seen != 7 {
		return bad("want sys=, batch= and snap=")
	}
	return p, nil
}

// OffsetPosition returns the position of a single-partition offset; ok is
// false for the zero offset.
func OffsetPosition(o cdc.Offset) (p Position, ok bool, err error) {
	if o.IsZero() {
		return Position{}, false, nil
	}
	s, has := o.Get("")
	if !has || len(o.Positions) != 1 {
		return Position{}, false, fmt.Errorf("%w: offset %s is not a PostgreSQL stream offset", ErrBadPosition, o)
	}
	p, err = ParsePosition(s)
	return p, err == nil, err
}

func validSnapshot(s string) bool {
	f := strings.Split(s, ":")
	if len(f) != 3 {
		return false
	}
	for i, x := range f {
		if x == "" && i == 2 {
			continue
		}
		for _, n := range strings.Split(x, ",") {
			if _, err := strconv.ParseUint(n, 10, 64); err != nil {
				return false
			}
		}
	}
	return true
}
