package tablestore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/otsfake"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// TestTransientRetries: transient errors of every operation, including
// GetShardIterator (which the SDK does not retry), are retried.
func TestTransientRetries(t *testing.T) {
	w := newWorld(t, 2)
	interleave(w, 100, 20, 1)
	w.srv.InjectError("DescribeTable", otsfake.CodeServerUnavailable, 1)
	w.srv.InjectError("ListStream", otsfake.CodeServerBusy, 1)
	w.srv.InjectError("DescribeStream", otsfake.CodeInternalServerError, 2)
	w.srv.InjectError("GetShardIterator", otsfake.CodeTimeout, 2)
	w.srv.InjectError("GetShardIterator", otsfake.CodeInternalServerError, 1)
	w.srv.InjectError("GetStreamRecord", otsfake.CodeServerBusy, 3)
	w.srv.InjectFault("GetStreamRecord", otsfake.Fault{Status: 502, Code: "x", Message: "bad gateway"}, 1)

	s := w.open(WithPageSize(20))
	got, _ := readAll(t, s, w.info(s), cdc.Offset{}, 30)
	checkExactlyOnce(t, w, got)
	if n := w.srv.Requests("GetShardIterator"); n != 2+3 {
		t.Errorf("GetShardIterator requests = %d, want 2 shards + 3 retries", n)
	}
	if n := w.srv.Requests("DescribeTable"); n != 2 {
		t.Errorf("DescribeTable requests = %d, want 2", n)
	}

	// A persistent failure ends after the policy's attempts.
	w.srv.InjectError("DescribeTable", otsfake.CodeServerBusy, 100)
	before := w.srv.Requests("DescribeTable")
	_, err := s.Stream(context.Background(), plan.Source{Stream: table})
	if !errors.Is(err, ErrRetriesExhausted) || w.srv.Requests("DescribeTable")-before != 5 {
		t.Errorf("err = %v after %d requests, want ErrRetriesExhausted after 5", err, w.srv.Requests("DescribeTable")-before)
	}
	w.srv.ClearFaults()
	// A non-transient error is not retried.
	w.srv.InjectError("DescribeTable", otsfake.CodeParameterInvalid, 1)
	before = w.srv.Requests("DescribeTable")
	if _, err := s.Stream(context.Background(), plan.Source{Stream: table}); err == nil || w.srv.Requests("DescribeTable")-before != 1 {
		t.Errorf("OTSParameterInvalid: err = %v after %d requests, want 1", err, w.srv.Requests("DescribeTable")-before)
	}
	// Waiting between retries ends with the context.
	w.srv.InjectError("DescribeTable", otsfake.CodeServerBusy, 100)
	slow := w.open(WithRetry(RetryPolicy{Attempts: 100, Initial: time.Hour, Max: time.Hour}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := slow.Stream(ctx, plan.Source{Stream: table}); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("cancelled retry: err = %v after %v", err, time.Since(start))
	}
}

// TestEmptyBody: empty 200 answers (on which the SDK panics, or which it
// would take for the end of a shard) are recovered and retried.
func TestEmptyBody(t *testing.T) {
	w := newWorld(t, 2)
	interleave(w, 100, 20, 1)
	for _, op := range []string{"DescribeTable", "ListStream", "DescribeStream", "GetShardIterator", "GetStreamRecord"} {
		w.srv.InjectEmptyResponse(op, 1)
	}
	s := w.open(WithPageSize(20))
	got, _ := readAll(t, s, w.info(s), cdc.Offset{}, 30)
	checkExactlyOnce(t, w, got)
	if n := w.srv.Requests("DescribeStream"); n < 2 {
		t.Errorf("DescribeStream requests = %d", n)
	}
	// The panic itself is turned into ErrEmptyResponse.
	_, err := once(context.Background(), s, "X", func(*tablestore.TableStoreClient) (int, error) {
		var p *tablestore.DescribeStreamResponse
		return int(p.CreationTime), nil
	})
	if !errors.Is(err, ErrEmptyResponse) || !isTransient(err) {
		t.Errorf("panic → %v, want transient ErrEmptyResponse", err)
	}
}

// TestCredentials: a wrong secret is a clear authentication error that
// does not print the secret; missing credentials say which variables to
// set; the registered opener reads the environment.
func TestCredentials(t *testing.T) {
	w := newWorld(t, 1)
	s, err := Open(context.Background(), sourceURL(w.srv), nil, WithCredentials(w.srv.AccessKeyID(), "wrong-secret-123", ""))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Stream(context.Background(), plan.Source{Stream: table})
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), EnvAccessKeySecret) || strings.Contains(err.Error(), "wrong-secret-123") {
		t.Errorf("err = %v, want ErrAuth naming %s without the secret", err, EnvAccessKeySecret)
	}
	var oe *tablestore.OtsError
	if !errors.As(err, &oe) || oe.Code != otsfake.CodeAuthFailed {
		t.Errorf("err does not wrap the OTSAuthFailed error: %v", err)
	}

	t.Setenv(EnvAccessKeyID, "")
	t.Setenv(EnvAccessKeySecret, "")
	if _, err := runner.Open(context.Background(), sourceURL(w.srv), nil); !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), EnvAccessKeyID) {
		t.Errorf("missing credentials: %v", err)
	}
	t.Setenv(EnvAccessKeyID, w.srv.AccessKeyID())
	t.Setenv(EnvAccessKeySecret, w.srv.AccessKeySecret())
	b, err := runner.Open(context.Background(), sourceURL(w.srv), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	src := b.(runner.Source)
	if _, err := src.Stream(context.Background(), plan.Source{Stream: table}); err != nil {
		t.Errorf("Stream with env credentials: %v", err)
	}
	if strings.Contains(b.Redacted(), w.srv.AccessKeySecret()) || strings.Contains(b.Identity(), w.srv.AccessKeySecret()) {
		t.Errorf("secret in Redacted/Identity")
	}
	lookup := func(k string) (string, bool) {
		return map[string]string{EnvAccessKeyID: "id", EnvAccessKeySecret: "s", EnvSTSToken: "tok"}[k], true
	}
	if _, err := Open(context.Background(), sourceURL(w.srv), nil, WithLookupEnv(lookup)); err != nil {
		t.Errorf("WithLookupEnv: %v", err)
	}
}

// TestTypeMismatch: a cell of another type than declared names the key and
// the column.
func TestTypeMismatch(t *testing.T) {
	w := newWorld(t, 1)
	w.put(41, map[string]any{"qty": int64(1)})
	w.put(42, map[string]any{"qty": "three"})
	s := w.open()
	rd, err := s.Changes(context.Background(), w.info(s), cdc.Offset{}, runner.ReadOptions{BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rd.Next(context.Background())
	var ve *cdc.ValueError
	if !errors.As(err, &ve) || ve.Column != "qty" || len(ve.Key) != 1 || ve.Key[0] != int64(42) || !errors.Is(err, cdc.ErrBadValue) {
		t.Fatalf("err = %v, want a ValueError for key 42 column qty", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "(id=42)") || !strings.Contains(msg, `"qty"`) || !strings.Contains(msg, "STRING") {
		t.Errorf("message %q does not name key, column and cell type", msg)
	}
	// Decimal text that does not fit DECIMAL(10,2) is an error too.
	w2 := newWorld(t, 1)
	w2.put(1, map[string]any{"price": "123456789012.5"})
	s2 := w2.open()
	rd, _ = s2.Changes(context.Background(), w2.info(s2), cdc.Offset{}, runner.ReadOptions{})
	if _, err := rd.Next(context.Background()); !errors.As(err, &ve) || ve.Column != "price" {
		t.Errorf("decimal overflow: %v", err)
	}
}

// TestNoStream: a table without a stream, or no table, wraps ErrNoStream
// and says how to enable it; bad declarations wrap ErrBadColumns.
func TestNoStream(t *testing.T) {
	w := newWorld(t, 1)
	w.createTable("plain", false)
	s := w.open()
	_, err := s.Stream(context.Background(), plan.Source{Stream: "plain"})
	if !errors.Is(err, runner.ErrNoStream) || !strings.Contains(err.Error(), "enable") {
		t.Errorf("no stream: %v", err)
	}
	if _, err := s.Stream(context.Background(), plan.Source{Stream: "missing"}); !errors.Is(err, runner.ErrNoStream) {
		t.Errorf("no table: %v", err)
	}
	for _, decls := range [][]plan.ColumnDecl{
		{{Name: "id", Type: "STRING"}},
		{{Name: "a", Type: "INT"}, {Name: "a", Type: "INT"}},
		{{Name: "__change_type", Type: "STRING"}},
	} {
		if _, err := s.Stream(context.Background(), plan.Source{Stream: table, Columns: decls}); !errors.Is(err, ErrBadColumns) {
			t.Errorf("%v: err = %v, want ErrBadColumns", decls, err)
		}
	}
	if _, err := s.Stream(context.Background(), plan.Source{Stream: table, Columns: []plan.ColumnDecl{{Name: "a", Type: "FANCY"}}}); !errors.Is(err, cdc.ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := s.Stream(context.Background(), plan.Source{Stream: table, Columns: []plan.ColumnDecl{{Name: "id", Type: "BIGINT"}}}); err != nil {
		t.Errorf("declaring the key with its own type: %v", err)
	}
}
