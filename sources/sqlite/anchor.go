package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
)

// Anchors tie an offset to the change log it was read from. A read point
// is the last seq the log ever numbered (sqlite_sequence); a database file
// replaced by an earlier copy of itself (a restored backup) numbers the
// same seqs again for different changes. While its log has not reached
// the offset again, the read refuses (futureOffsetError); once the
// application has written past it, the seq alone cannot tell. So an
// offset a read hands out carries, after a colon, a fingerprint of the
// log row numbered by its seq: FNV-1a (32 bits, hex) of that row's op,
// capture time (ts, milliseconds) and rowid. A read from such an offset
// looks the row up (one primary-key probe): the same fingerprint, or no
// row any more (purged once every stream consumed it: a restored copy
// keeps every row after its streams' offsets, which are at or before the
// copy's last seq), reads on; another fingerprint means the row was
// written again after a restore, and the read refuses with ErrRestored.
// A row written again after a restore has a later capture time than the
// one it replaces (the original was written after the copy was taken),
// so the fingerprints differ but for a 2^-32 hash collision.
//
// Offsets without an anchor (a stream's offset at creation, a backfill's
// hand-off point, the offsets of an earlier sluice) are read as before;
// the offset their read hands out carries one.

// anchorAt is the fingerprint of the row numbered seq in change log log,
// "" when the log holds no such row.
func anchorAt(ctx context.Context, q sqlitex.Querier, log string, seq int64) (string, error) {
	var op, ts string
	var rid sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT op, ts, rid FROM `+sqlitex.Quote(log)+` WHERE seq = ?`, seq).Scan(&op, &ts, &rid)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read change log row %d of %s: %w", seq, log, err)
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", op, ts, rid.Int64)
	return fmt.Sprintf("%08x", h.Sum32()), nil
}

// validAnchor reports whether s has the form anchorAt returns.
func validAnchor(s string) bool {
	if len(s) != 8 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// readPointFrom is the read point seq of a read from f: f itself when the
// read found no change after it (seq is f's, past the initial rows), so
// that an empty read hands back the offset it was given, anchor and all
// (its log row is usually purged by then, and a bare "<seq>" would read as
// a moved offset: the run history records moved offsets); else anchored.
func readPointFrom(ctx context.Context, q sqlitex.Querier, s *runner.StreamInfo, f position, seq int64) (position, error) {
	if seq == f.seq && !f.initial {
		return f, nil
	}
	return anchored(ctx, q, s, seq)
}

// anchored is the read point seq of s's change log with its anchor.
func anchored(ctx context.Context, q sqlitex.Querier, s *runner.StreamInfo, seq int64) (position, error) {
	a, err := anchorAt(ctx, q, logTable(s.Table), seq)
	return position{seq: seq, anchor: a}, err
}

// checkAnchor refuses a read of s from f (the offset from) whose anchor
// no longer matches the change-log row it names: the database was
// replaced by an earlier copy and its log numbered that seq again for
// another change. It wraps ErrRestored and cdc.ErrBadOffset.
func checkAnchor(ctx context.Context, q sqlitex.Querier, s *runner.StreamInfo, from cdc.Offset, f position) error {
	if f.anchor == "" || f.initial {
		return nil
	}
	a, err := anchorAt(ctx, q, logTable(s.Table), f.seq)
	if err != nil || a == "" || a == f.anchor {
		return err
	}
	return fmt.Errorf("%w: %w: reading stream %s from %s, but change %d in the change log of %s is not the change that offset was read up to: the database was replaced by an earlier copy (a restored backup) and has numbered its changes past that offset again; the changes up to it would be skipped, so nothing was read. To go on: run sluice backfill on the stream's jobs (the target may hold rows the restored database lacks: drop it first for an exact copy)",
		ErrRestored, cdc.ErrBadOffset, s.Name, from, f.seq, s.Table)
}
