package tablestore

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
)

// TestChildWaitsForStoppedParent: a parent shard that was caught up earlier
// in the read and then received more records and split is not done, so its
// children wait for the next read even when they are listed and have
// records; otherwise a key's later change would overtake its earlier one.
func TestChildWaitsForStoppedParent(t *testing.T) {
	w := newWorld(t, 2)
	var a []int64 // keys of shard-0001
	for id := int64(1); len(a) < 6; id++ {
		if w.shardOf(id) == "shard-0001" {
			a = append(a, id)
		}
	}
	for _, id := range a[:3] {
		w.put(id, map[string]any{"qty": id})
	}
	s := w.open(WithDescribeInterval(0))
	info := w.info(s)
	ctx := context.Background()
	rd, err := s.Changes(ctx, info, cdc.Offset{}, runner.ReadOptions{BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	first, err := rd.Next(ctx) // shard-0001 to its (current) end: caught up
	if err != nil || len(first) != 3 {
		t.Fatalf("Next: %d %v", len(first), err)
	}
	// Same instant (within the read's cutoff): more for the parent, a split,
	// then the same keys again in the children.
	for _, id := range a {
		w.update(id, map[string]any{"qty": -id})
	}
	if _, _, err := w.srv.SplitShard(table, "shard-0001"); err != nil {
		t.Fatal(err)
	}
	for _, id := range a {
		w.update(id, map[string]any{"name": "child"})
	}
	got := first
	for {
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b...)
	}
	if len(got) != 3 {
		t.Errorf("first read returned %d changes; the children must wait for their parent", len(got))
	}
	more, _ := readAll(t, s, info, rd.ReadPoint(), 4)
	checkExactlyOnce(t, w, append(got, more...))
	shardOrder(t, w, append(got, more...))
}

func TestParseURL(t *testing.T) {
	for _, c := range []struct{ in, url, inst, err string }{
		{"tablestore://myinst.cn-hangzhou.ots.aliyuncs.com", "https://myinst.cn-hangzhou.ots.aliyuncs.com", "myinst", ""},
		{"tablestore://myinst.cn-hangzhou.ots.aliyuncs.com/?instance=other", "https://myinst.cn-hangzhou.ots.aliyuncs.com", "other", ""},
		{"tablestore+http://127.0.0.1:8123?instance=otsfake", "http://127.0.0.1:8123", "otsfake", ""},
		{"tablestore+https://gw.example.com:8443?instance=x", "https://gw.example.com:8443", "x", ""},
		{"tablestore+http://127.0.0.1:8123", "", "", "missing ?instance"},
		{"tablestore://127.0.0.1:8123", "", "", "cannot take the instance"},
		{"tablestore://id:secret@inst.region.ots.aliyuncs.com", "", "", "credentials do not belong"},
		{"tablestore://inst.region.ots.aliyuncs.com?foo=1", "", "", "unknown parameter foo"},
		{"tablestore://inst.region.ots.aliyuncs.com/table", "", "", "unexpected path"},
		{"postgres://x", "", "", "scheme must be"},
	} {
		ep, err := ParseURL(c.in)
		if c.err != "" {
			if !errors.Is(err, ErrBadURL) || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "secret@") {
				t.Errorf("%s: err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || ep.URL != c.url || ep.Instance != c.inst {
			t.Errorf("%s: %+v %v", c.in, ep, err)
		}
	}
	s, err := Open(context.Background(), "tablestore://inst.cn-shanghai.ots.aliyuncs.com", nil, WithCredentials("a", "b", ""))
	if err != nil {
		t.Fatal(err)
	}
	if s.Redacted() != "tablestore://inst.cn-shanghai.ots.aliyuncs.com?instance=inst" || s.Identity() != "tablestore:https://inst.cn-shanghai.ots.aliyuncs.com/inst" || s.Scheme() != "tablestore" {
		t.Errorf("Redacted %q Identity %q", s.Redacted(), s.Identity())
	}
}

func TestPosition(t *testing.T) {
	for _, p := range []Position{
		{},
		{Iterator: "it|1", Last: Sequence{Epoch: 1, Timestamp: 1709528767000000, RowIndex: 3}, Version: 1709528767000000003},
		{Iterator: "abc"},
		{Done: true, Version: 42},
	} {
		got, err := DecodePosition(p.Encode())
		if err != nil || got != p {
			t.Errorf("%+v → %s → %+v, %v", p, p.Encode(), got, err)
		}
	}
	if s := (Position{Done: true, Version: 7}).Encode(); s != `{"v":7,"done":true}` {
		t.Errorf("done encodes as %s", s)
	}
	for _, bad := range []string{"", "done", `{"seq":"1:2:3"}`, `{"it":"x","seq":"1:2"}`, `{"zz":1}`} {
		if _, err := DecodePosition(bad); !errors.Is(err, ErrBadPosition) {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
	if v := commitVersion(Sequence{Timestamp: 10, RowIndex: 5}, 0); v != 10005 {
		t.Errorf("version %d", v)
	}
	if v := commitVersion(Sequence{Timestamp: 10, RowIndex: 5}, 20000); v != 20001 {
		t.Errorf("version above prev: %d", v)
	}
	if v := commitVersion(Sequence{Timestamp: 10, RowIndex: 5000}, 0); v != 10999 {
		t.Errorf("row index cap: %d", v)
	}
}

func TestBackoff(t *testing.T) {
	b := IdleBackoff{Min: 10 * time.Millisecond, Max: 35 * time.Millisecond}
	var got []time.Duration
	for i := 0; i < 4; i++ {
		got = append(got, b.Next())
	}
	if got[0] != 10*time.Millisecond || got[1] != 20*time.Millisecond || got[2] != 35*time.Millisecond || got[3] != 35*time.Millisecond {
		t.Errorf("backoff %v", got)
	}
	b.Reset()
	if d := b.Next(); d != 10*time.Millisecond {
		t.Errorf("after Reset %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (&IdleBackoff{Min: time.Hour}).Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait: %v", err)
	}
	p := RetryPolicy{Attempts: 5, Initial: 100 * time.Millisecond, Max: time.Second}
	for a := 0; a < 8; a++ {
		d := p.delay(a)
		hi := min(p.Initial<<a, p.Max)
		if d < hi/2 || d > hi {
			t.Errorf("delay(%d) = %v, want in [%v, %v]", a, d, hi/2, hi)
		}
	}
}
