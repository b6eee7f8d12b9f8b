package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
)

// DefaultBatchSize is used when ReadOptions.BatchSize is not positive.
const DefaultBatchSize = 1000

// DefaultBatchBytes bounds a batch by its changes' memory (cdc.Change.Size)
// when ReadOptions.BatchBytes is not positive: a run holds a few batches
// at once, whatever the width of the rows.
const DefaultBatchBytes = 8 << 20

// Changes opens a read of the stream's records after from, up to the
// moment of this call: a shard stops at its first record whose sequence
// timestamp is later than the source clock at the call (WithClock), or when
// it has nothing more (caught up), or at its end (closed shard, read to
// NextShardIterator == nil, then marked done). Every listed shard is read;
// a child shard (after a split or a merge) only once all its parents are
// done. Records come in shard order within a shard and never out of order
// per key (see the package doc).
//
// from holds one Position per shard (partition = shard id). The zero
// Offset reads every shard from its oldest retained record. A position of a
// shard that is gone from the stream is dropped when the shard was done,
// else the read fails with ErrDataLost.
//
// The reader's ReadPoint is the position after the last change Next has
// returned (the read point of the whole read after Next returned io.EOF).
// Changes never moves anything on the server. It reuses the source's cached
// shard list (re-described after WithDescribeInterval, or when a shard
// ends), so calling it again from the last ReadPoint is cheap.
func (s *Source) Changes(ctx context.Context, info *runner.StreamInfo, from cdc.Offset, opt runner.ReadOptions) (runner.ChangeReader, error) {
	cutoff := s.opt.now().UnixMicro() // the moment the read starts
	if s.isClosed() {
		return nil, errClosed
	}
	if info == nil || info.ID == "" {
		return nil, fmt.Errorf("%w: Changes needs the StreamInfo returned by Stream", runner.ErrNoStream)
	}
	positions := make(map[string]Position, len(from.Positions))
	for shard, raw := range from.Positions {
		p, err := DecodePosition(raw)
		if err != nil {
			return nil, fmt.Errorf("offset of shard %q: %w", shard, err)
		}
		positions[shard] = p
	}
	list, err := s.listShards(ctx, info.ID, false)
	if err != nil {
		return nil, err
	}
	for id := range positions {
		if !list.has(id) { // the cache may predate the shard
			if list, err = s.listShards(ctx, info.ID, true); err != nil {
				return nil, err
			}
			break
		}
	}
	batch := opt.BatchSize
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	if opt.BatchBytes <= 0 {
		opt.BatchBytes = DefaultBatchBytes
	}
	r := &reader{
		src: s, table: info.Table, streamID: info.ID, batch: batch, bytes: int64(opt.BatchBytes),
		cutoff: cutoff,
		dec:    newDecoder(info.TableSchema, info.Table, s.log),
		shards: map[string]*shardState{},
	}
	for id, p := range positions {
		if list.has(id) {
			continue
		}
		if p.Done {
			s.log.DebugContext(ctx, "tablestore: dropping expired done shard from the offset", "table", info.Table, "shard", id)
			continue
		}
		r.list = list
		return nil, r.dataLost(id, p, errors.New("the shard has expired from the stream"))
	}
	r.apply(list, positions)
	return r, nil
}

// reader is a ChangeReader over all shards of one stream. It is used by
// one goroutine at a time.
type reader struct {
	src        *Source
	table      string
	streamID   string
	batch      int
	bytes      int64 // ReadOptions.BatchBytes or DefaultBatchBytes: a batch ends at this many bytes (cdc.Change.Size)
	size       int64 // bytes of the batch being filled
	cutoff     int64 // µs: records after it are left for a later read
	dec        *decoder
	list       *shardList
	shards     map[string]*shardState
	order      []*shardState // DescribeStream order
	cur        *shardState
	redescribe bool // a shard ended since the last DescribeStream
	closed     bool
}

// shardState is the read of one shard.
type shardState struct {
	node     shardNode
	pos      Position // after the last returned change
	floor    int64    // highest version of the parents (set once they are done)
	floorSet bool
	stopped  bool // nothing more for this read (caught up or past the cutoff)

	loaded   bool
	page     []*tablestore.StreamRecord
	idx      int
	pageIter string
	pageNext *tablestore.ShardIterator // nil: the shard ends after this page
	pageMore bool

	pending     chan pageResult // prefetch of the page at pendingIter
	pendingIter string
	cancel      context.CancelFunc
}

type pageResult struct {
	resp *tablestore.GetStreamRecordResponse
	iter string
	err  error
}

// apply adds the shards of list not known yet, with their positions.
func (r *reader) apply(list *shardList, positions map[string]Position) {
	r.list = list
	for _, n := range list.nodes {
		if _, ok := r.shards[n.id]; ok {
			continue
		}
		sh := &shardState{node: n, pos: positions[n.id]}
		r.shards[n.id] = sh
		r.order = append(r.order, sh)
	}
}

// ReadPoint returns one position per shard that has one: the shards read
// (or skipped as caught up) so far and those of the starting offset still in
// the stream.
func (r *reader) ReadPoint() cdc.Offset {
	m := map[string]string{}
	for _, sh := range r.order {
		if sh.pos.Done || sh.pos.Iterator != "" {
			m[sh.node.id] = sh.pos.Encode()
		}
	}
	if len(m) == 0 {
		return cdc.Offset{}
	}
	return cdc.Offset{Positions: m}
}

// Next returns up to BatchSize changes and about BatchBytes bytes, or
// io.EOF when every shard is done, caught up, past the cutoff or waiting
// for a parent.
func (r *reader) Next(ctx context.Context) ([]cdc.Change, error) {
	if r.closed {
		return nil, errors.New("tablestore: read is closed")
	}
	out := make([]cdc.Change, 0, min(r.batch, 1024))
	r.size = 0
	for !r.full(len(out)) {
		sh, err := r.nextShard(ctx)
		if err != nil {
			return nil, err
		}
		if sh == nil {
			break
		}
		if err := r.fill(ctx, sh, &out); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, io.EOF
	}
	return out, nil
}

// full reports whether a batch of n changes (r.size bytes) is full.
func (r *reader) full(n int) bool {
	return n >= r.batch || (r.bytes > 0 && r.size >= r.bytes)
}

// Close stops prefetches. It is safe to call twice.
func (r *reader) Close() error {
	r.closed = true
	for _, sh := range r.order {
		sh.dropPage()
	}
	return nil
}

// dropPage forgets the loaded page and stops the prefetch.
func (sh *shardState) dropPage() {
	sh.stopPrefetch()
	sh.clearPage()
}

// clearPage forgets the loaded page; a prefetch of the next one goes on.
func (sh *shardState) clearPage() {
	sh.loaded, sh.page, sh.idx, sh.pageNext = false, nil, 0, nil
}

func (sh *shardState) stopPrefetch() {
	if sh.cancel != nil {
		sh.cancel()
	}
	sh.pending, sh.pendingIter, sh.cancel = nil, "", nil
}

// eligible reports whether sh has something to read now.
func (r *reader) eligible(sh *shardState) bool {
	return !sh.pos.Done && !sh.stopped && r.parentsDone(sh)
}

// parentsDone: every parent (father, and mother after a merge) still in the
// stream is done. A parent gone from the stream has expired; its records are
// gone either way (Changes already failed if the offset still read it).
func (r *reader) parentsDone(sh *shardState) bool {
	for _, p := range [2]string{sh.node.father, sh.node.mother} {
		if ps, ok := r.shards[p]; p != "" && ok && !ps.pos.Done {
			return false
		}
	}
	return true
}

// floorOf returns the highest version of sh's parents (0 when none).
func (r *reader) floorOf(sh *shardState) int64 {
	if !sh.floorSet {
		for _, p := range [2]string{sh.node.father, sh.node.mother} {
			if ps, ok := r.shards[p]; p != "" && ok {
				sh.floor = max(sh.floor, ps.pos.Version)
			}
		}
		sh.floorSet = true
	}
	return sh.floor
}

// nextShard returns the shard to read from: the current one while it has
// records, else the first eligible in DescribeStream order; it describes
// the stream again when a shard ended (to find its children) or the list is
// older than the describe interval. nil means nothing is left for this read.
func (r *reader) nextShard(ctx context.Context) (*shardState, error) {
	if r.cur != nil && r.eligible(r.cur) {
		return r.cur, nil
	}
	stale := r.src.opt.now().Sub(r.list.at) >= r.src.opt.describeInterval
	for {
		if stale || r.redescribe {
			list, err := r.src.listShards(ctx, r.streamID, true)
			if err != nil {
				return nil, err
			}
			r.apply(list, nil)
			stale, r.redescribe = false, false
		}
		for _, sh := range r.order {
			if r.eligible(sh) {
				r.cur = sh
				return sh, nil
			}
		}
		if !r.redescribe {
			r.cur = nil
			return nil, nil
		}
	}
}

// fill appends changes of sh to out until the batch is full, the page is
// consumed, or the cutoff is passed.
func (r *reader) fill(ctx context.Context, sh *shardState, out *[]cdc.Change) error {
	if !sh.loaded {
		if err := r.load(ctx, sh); err != nil {
			return err
		}
	}
	for sh.idx < len(sh.page) && !r.full(len(*out)) {
		rec := sh.page[sh.idx]
		q := seqOf(rec.Info)
		if !sh.pos.Last.IsZero() && q.Compare(sh.pos.Last) <= 0 {
			sh.idx++ // returned before this page was read again (restart)
			continue
		}
		if q.Timestamp > r.cutoff {
			sh.stopped = true
			sh.dropPage()
			return nil
		}
		v := commitVersion(q, max(sh.pos.Version, r.floorOf(sh)))
		ch, err := r.dec.change(ctx, rec, v)
		if err != nil {
			return fmt.Errorf("table %q, shard %s, record %s: %w", r.table, sh.node.id, q, err)
		}
		*out = append(*out, ch)
		if r.bytes > 0 {
			r.size += int64(ch.Size())
		}
		sh.pos.Iterator, sh.pos.Last, sh.pos.Version = sh.pageIter, q, v
		sh.idx++
	}
	if sh.idx < len(sh.page) {
		return nil // batch full; the rest of the page stays loaded
	}
	next, more, empty := sh.pageNext, sh.pageMore, len(sh.page) == 0
	sh.clearPage()
	if next == nil {
		sh.pos = Position{Done: true, Version: max(sh.pos.Version, r.floorOf(sh))}
		r.redescribe = true
		r.src.log.DebugContext(ctx, "tablestore: shard read to its end", "table", r.table, "shard", sh.node.id)
		return nil
	}
	sh.pos.Iterator = string(*next)
	if empty || !more {
		sh.stopped = true // caught up
		sh.stopPrefetch()
		return nil
	}
	r.prefetch(ctx, sh, sh.pos.Iterator) // normally started by load already
	return nil
}

// prefetch starts reading the page at iter, the shard's next page, in the
// background, so that the next fill does not wait for the round trip: load
// starts it as soon as a page arrives, so the next page travels while this
// one is decoded. At most one page per shard is prefetched; a prefetch of
// iter already running is kept.
func (r *reader) prefetch(ctx context.Context, sh *shardState, iter string) {
	if sh.pending != nil {
		if sh.pendingIter == iter {
			return
		}
		sh.stopPrefetch()
	}
	pctx, cancel := context.WithCancel(ctx)
	ch := make(chan pageResult, 1)
	go func() {
		resp, err := r.getRecords(pctx, iter)
		ch <- pageResult{resp: resp, iter: iter, err: err}
	}()
	sh.pending, sh.pendingIter, sh.cancel = ch, iter, cancel
}

// load reads the page at sh.pos.Iterator (a new iterator for a shard never
// read) into sh.
func (r *reader) load(ctx context.Context, sh *shardState) error {
	var res pageResult
	if sh.pending != nil && sh.pendingIter != sh.pos.Iterator {
		sh.stopPrefetch() // not the page wanted (cannot happen: prefetch follows pos)
	}
	if sh.pending != nil {
		select {
		case res = <-sh.pending:
		case <-ctx.Done():
			return ctx.Err()
		}
		sh.stopPrefetch()
		if res.err != nil && (errors.Is(res.err, context.Canceled) || errors.Is(res.err, context.DeadlineExceeded)) {
			res = pageResult{} // the prefetch's context ended, not ours: read again
		}
	}
	if res.resp == nil && res.err == nil {
		iter := sh.pos.Iterator
		if iter == "" {
			var err error
			if iter, err = r.newIterator(ctx, sh.node.id, nil); err != nil {
				return err
			}
		}
		resp, err := r.getRecords(ctx, iter)
		res = pageResult{resp: resp, iter: iter, err: err}
	}
	if res.err != nil {
		switch otsCode(res.err) {
		case codeTrimmedDataAccess:
			var err error
			if res, err = r.recoverTrimmed(ctx, sh, res.err); err != nil {
				return err
			}
		case codeObjectNotExist:
			return r.dataLost(sh.node.id, sh.pos, res.err)
		default:
			return fmt.Errorf("table %q, shard %s: %w", r.table, sh.node.id, res.err)
		}
	}
	resp := res.resp
	sh.loaded, sh.page, sh.idx, sh.pageIter = true, resp.Records, 0, res.iter
	sh.pageNext = resp.NextShardIterator
	sh.pageMore = resp.MayMoreRecord == nil || *resp.MayMoreRecord
	if sh.pageNext != nil && sh.pageMore && len(sh.page) > 0 {
		r.prefetch(ctx, sh, string(*sh.pageNext))
	}
	return nil
}

// recoverTrimmed handles OTSTrimmedDataAccess on sh's iterator. Only a page
// partly returned can be recovered: if the record last returned is still in
// the stream, nothing after it was trimmed (retention removes the oldest
// records), so the read continues from a timestamp iterator. Otherwise the
// read fails with ErrDataLost.
func (r *reader) recoverTrimmed(ctx context.Context, sh *shardState, cause error) (pageResult, error) {
	last := sh.pos.Last
	if last.IsZero() {
		return pageResult{}, r.dataLost(sh.node.id, sh.pos, cause)
	}
	ts := last.Timestamp
	iter, err := r.newIterator(ctx, sh.node.id, &ts)
	if err != nil {
		return pageResult{}, err
	}
	resp, err := r.getRecords(ctx, iter)
	if err != nil {
		return pageResult{}, r.dataLost(sh.node.id, sh.pos, err)
	}
	for _, rec := range resp.Records {
		if c := seqOf(rec.Info).Compare(last); c == 0 {
			r.src.log.InfoContext(ctx, "tablestore: iterator trimmed, resumed after the last record read", "table", r.table, "shard", sh.node.id)
			return pageResult{resp: resp, iter: iter}, nil
		} else if c > 0 {
			break
		}
	}
	return pageResult{}, r.dataLost(sh.node.id, sh.pos, cause)
}

// newIterator calls GetShardIterator: from the shard's oldest record, or
// from the first record at or after ts (µs).
func (r *reader) newIterator(ctx context.Context, shard string, ts *int64) (string, error) {
	sid, shid := tablestore.StreamId(r.streamID), tablestore.ShardId(shard)
	it, err := call(ctx, r.src, "GetShardIterator", func(c *tablestore.TableStoreClient) (string, error) {
		resp, err := c.GetShardIterator(&tablestore.GetShardIteratorRequest{StreamId: &sid, ShardId: &shid, Timestamp: ts})
		if err != nil {
			return "", err
		}
		if resp.ShardIterator == nil || *resp.ShardIterator == "" {
			return "", fmt.Errorf("%w: GetShardIterator returned no iterator", ErrEmptyResponse)
		}
		return string(*resp.ShardIterator), nil
	})
	if err != nil {
		if otsCode(err) == codeObjectNotExist {
			return "", r.dataLost(shard, Position{}, err)
		}
		return "", fmt.Errorf("table %q, shard %s: %w", r.table, shard, err)
	}
	return it, nil
}

// getRecords calls GetStreamRecord. An answer with no field set at all is
// an empty body (the SDK decodes it without complaint as "end of shard",
// which would skip the shard's remaining records); it is an error wrapping
// ErrEmptyResponse and retried, as the service always reports the consumed
// capacity.
func (r *reader) getRecords(ctx context.Context, iter string) (*tablestore.GetStreamRecordResponse, error) {
	it := tablestore.ShardIterator(iter)
	limit := r.src.opt.pageSize
	return call(ctx, r.src, "GetStreamRecord", func(c *tablestore.TableStoreClient) (*tablestore.GetStreamRecordResponse, error) {
		resp, err := c.GetStreamRecord(&tablestore.GetStreamRecordRequest{ShardIterator: &it, Limit: &limit})
		if err != nil {
			return nil, err
		}
		if len(resp.Records) == 0 && resp.NextShardIterator == nil && resp.MayMoreRecord == nil && resp.CapacityUnit == nil {
			return nil, fmt.Errorf("%w: GetStreamRecord answered an empty body", ErrEmptyResponse)
		}
		for _, rec := range resp.Records {
			if rec == nil || rec.Info == nil || rec.PrimaryKey == nil {
				return nil, fmt.Errorf("%w: GetStreamRecord: record without sequence info or key", ErrEmptyResponse)
			}
		}
		return resp, nil
	})
}

// dataLost builds the ErrDataLost error of a shard.
func (r *reader) dataLost(shard string, p Position, cause error) error {
	at := "its oldest record"
	if !p.Last.IsZero() {
		at = fmt.Sprintf("the record at %s (sequence %s)", p.Last.Time().Format("2006-01-02 15:04:05.999999Z07:00"), p.Last)
	}
	retention := ""
	if r.list != nil && r.list.expiration > 0 {
		retention = fmt.Sprintf(" (%d h)", r.list.expiration)
	}
	return fmt.Errorf("%w: table %q, stream %s, shard %s: the job's checkpoint (after %s) fell behind the stream's retention%s "+
		"and records it had not read were trimmed (%w); the target is missing those changes. "+
		"Resynchronize it with `sluice backfill JOB` (copies the table, then continues from the stream) and run the job more often than the retention",
		ErrDataLost, r.table, r.streamID, shard, at, retention, cause)
}
