package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"
)

// Tablestore error codes the package reacts to.
const (
	codeAuthFailed        = "OTSAuthFailed"
	codeTrimmedDataAccess = "OTSTrimmedDataAccess"
	codeObjectNotExist    = "OTSObjectNotExist"
)

// transientCodes are the error codes retried with backoff: throttling,
// overload and server-side timeouts. The SDK retries OTSTimeout,
// OTSInternalServerError and OTSServerUnavailable only for operations it
// deems idempotent, which excludes GetShardIterator; sluice's calls only
// read, so it retries them for every operation.
var transientCodes = map[string]bool{
	"OTSServerBusy":            true,
	"OTSServerUnavailable":     true,
	"OTSTimeout":               true,
	"OTSInternalServerError":   true,
	"OTSPartitionUnavailable":  true,
	"OTSTableNotReady":         true,
	"OTSStorageServerBusy":     true,
	"OTSNotEnoughCapacityUnit": true,
	"OTSCapacityUnitExhausted": true,
	"OTSRowOperationConflict":  true,
	"OTSQuotaExhausted":        true,
}

// RetryPolicy bounds the retries of a transient failure: at most Attempts
// tries per request, waiting Initial, 2*Initial, … capped at Max between
// them, each wait drawn uniformly from [d/2, d] (jitter). Waits end early
// when the context is cancelled.
type RetryPolicy struct {
	Attempts int
	Initial  time.Duration
	Max      time.Duration
}

// DefaultRetryPolicy: 8 attempts, 100ms doubling to 5s (about 15s of
// retrying in total).
var DefaultRetryPolicy = RetryPolicy{Attempts: 8, Initial: 100 * time.Millisecond, Max: 5 * time.Second}

// delay returns the wait before retry number attempt+1 (attempt counts from
// 0).
func (p RetryPolicy) delay(attempt int) time.Duration {
	d := p.Initial
	for i := 0; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call runs one SDK operation op with s's retry policy. Transient failures
// (isTransient) are retried; an OTSAuthFailed becomes an error wrapping
// ErrAuth; other failures are returned wrapped (errors.As finds the
// *tablestore.OtsError).
func call[T any](ctx context.Context, s *Source, op string, fn func(*tablestore.TableStoreClient) (T, error)) (T, error) {
	var zero T
	p := s.opt.retry
	for attempt := 0; ; attempt++ {
		v, err := once(ctx, s, op, fn)
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return zero, ctx.Err()
		}
		if !isTransient(err) {
			return zero, s.wrapErr(op, err)
		}
		if attempt+1 >= max(p.Attempts, 1) {
			return zero, fmt.Errorf("%w: %s failed %d times: %w", ErrRetriesExhausted, op, attempt+1, err)
		}
		d := p.delay(attempt)
		s.log.DebugContext(ctx, "tablestore: transient failure, retrying", "op", op, "attempt", attempt+1, "wait", d, "err", err)
		if err := sleep(ctx, d); err != nil {
			return zero, err
		}
	}
}

// once runs fn in a goroutine so that a cancelled ctx returns at once (the
// SDK takes no context; the abandoned request ends by its HTTP timeout) and
// so that a panic of the SDK, which dereferences required response fields
// of an empty 200 body, becomes an error wrapping ErrEmptyResponse.
func once[T any](ctx context.Context, s *Source, op string, fn func(*tablestore.TableStoreClient) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("%w: %s: the SDK failed to decode the response: %v", ErrEmptyResponse, op, p)}
			}
			ch <- r
		}()
		r.v, r.err = fn(s.client)
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// isTransient reports whether err is worth retrying: the codes in
// transientCodes, any other 5xx answer, an empty response, or a network
// failure.
func isTransient(err error) bool {
	if errors.Is(err, ErrEmptyResponse) {
		return true
	}
	var oe *tablestore.OtsError
	if errors.As(err, &oe) {
		return transientCodes[oe.Code] || oe.HttpStatusCode >= 500
	}
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// otsCode returns the Tablestore error code in err's chain, or "".
func otsCode(err error) string {
	var oe *tablestore.OtsError
	if errors.As(err, &oe) {
		return oe.Code
	}
	return ""
}

// wrapErr adds the operation and, for OTSAuthFailed, ErrAuth with a hint.
func (s *Source) wrapErr(op string, err error) error {
	if otsCode(err) == codeAuthFailed {
		return fmt.Errorf("%w: %s on instance %q at %s was rejected (%w); check %s and %s (and %s when using STS), and that the instance name is right",
			ErrAuth, op, s.ep.Instance, s.ep.URL, err, EnvAccessKeyID, EnvAccessKeySecret, EnvSTSToken)
	}
	return fmt.Errorf("tablestore %s: %w", op, err)
}
