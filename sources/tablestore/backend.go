package tablestore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"

	"github.com/sluicedata/sluice/internal/redact"
	"github.com/sluicedata/sluice/runner"
)

// URL schemes of the backend.
const (
	SchemeHTTPS = "tablestore"       // tablestore://INSTANCE.REGION.ots.aliyuncs.com
	SchemeHTTP  = "tablestore+http"  // tablestore+http://HOST:PORT?instance=NAME
	SchemeTLS   = "tablestore+https" // tablestore+https://HOST[:PORT]?instance=NAME
)

// Environment variables holding the credentials.
const (
	EnvAccessKeyID     = "TABLESTORE_ACCESS_KEY_ID"
	EnvAccessKeySecret = "TABLESTORE_ACCESS_KEY_SECRET"
	EnvSTSToken        = "TABLESTORE_STS_TOKEN" // optional
)

func init() {
	runner.Register(open, SchemeHTTPS, SchemeHTTP, SchemeTLS)
}

// open is the runner.Opener: credentials come from the process environment.
func open(ctx context.Context, rawURL string, log *slog.Logger) (runner.Backend, error) {
	return Open(ctx, rawURL, log)
}

// Option configures Open.
type Option func(*options)

type options struct {
	lookupEnv        func(string) (string, bool)
	creds            *credentials
	now              func() time.Time
	retry            RetryPolicy
	describeInterval time.Duration
	pageSize         int32
	requestTimeout   time.Duration
	transport        http.RoundTripper
}

type credentials struct{ id, secret, token string }

// WithLookupEnv sets the function credentials are read through (default
// os.LookupEnv).
func WithLookupEnv(f func(string) (string, bool)) Option {
	return func(o *options) { o.lookupEnv = f }
}

// WithCredentials sets the credentials directly instead of reading the
// environment. token is the STS token, "" for none.
func WithCredentials(accessKeyID, accessKeySecret, token string) Option {
	return func(o *options) { o.creds = &credentials{accessKeyID, accessKeySecret, token} }
}

// WithClock sets the clock that fixes a read's cutoff (default time.Now).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithRetry sets the retry policy for transient failures.
func WithRetry(p RetryPolicy) Option { return func(o *options) { o.retry = p } }

// WithDescribeInterval sets how long a shard list stays fresh before
// Changes describes the stream again (default 10s). A shard reaching its end
// always triggers a new description.
func WithDescribeInterval(d time.Duration) Option {
	return func(o *options) { o.describeInterval = d }
}

// WithPageSize sets the GetStreamRecord limit (records per request,
// 1..1000, default 1000).
func WithPageSize(n int) Option {
	return func(o *options) { o.pageSize = int32(max(1, min(n, 1000))) }
}

// WithRequestTimeout bounds one HTTP request (default 30s).
func WithRequestTimeout(d time.Duration) Option { return func(o *options) { o.requestTimeout = d } }

// WithTransport sets the HTTP transport of the SDK client (a proxy, custom
// TLS settings); default: the SDK's transport.
func WithTransport(rt http.RoundTripper) Option { return func(o *options) { o.transport = rt } }

// Endpoint is a parsed connection URL.
type Endpoint struct {
	Scheme   string // the URL's scheme (SchemeHTTPS, SchemeHTTP or SchemeTLS)
	URL      string // what the SDK connects to: "https://host[:port]" or "http://host:port"
	Instance string
}

// ParseURL parses a connection URL:
//
//	tablestore://INSTANCE.REGION.ots.aliyuncs.com   HTTPS; instance = the host's first label
//	tablestore+https://HOST[:PORT]?instance=NAME    HTTPS to any host
//	tablestore+http://HOST:PORT?instance=NAME       plain HTTP (local test servers)
//
// instance=NAME may also override the first label of a tablestore:// host.
// Credentials in the URL are refused (they belong in the environment). Errors
// wrap ErrBadURL.
func ParseURL(raw string) (Endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Endpoint{}, fmt.Errorf("%w %q: %w", ErrBadURL, redact.Conn(raw), redact.Error(err, raw))
	}
	bad := func(why string) (Endpoint, error) {
		return Endpoint{}, fmt.Errorf("%w %q: %s", ErrBadURL, redactURL(u), why)
	}
	if u.User != nil {
		return bad("credentials do not belong in the URL; set " + EnvAccessKeyID + " and " + EnvAccessKeySecret)
	}
	if u.Opaque != "" || u.Host == "" {
		return bad("want tablestore://INSTANCE.REGION.ots.aliyuncs.com or tablestore+http(s)://HOST:PORT?instance=NAME")
	}
	if u.Path != "" && u.Path != "/" {
		return bad("unexpected path " + u.Path)
	}
	q := u.Query()
	for k := range q {
		if k != "instance" {
			return bad("unknown parameter " + k + " (known: instance)")
		}
	}
	ep := Endpoint{Scheme: strings.ToLower(u.Scheme), Instance: q.Get("instance")}
	switch ep.Scheme {
	case SchemeHTTPS:
		ep.URL = "https://" + u.Host
		if ep.Instance == "" {
			host := u.Hostname()
			if net.ParseIP(host) != nil || !strings.Contains(host, ".") {
				return bad("cannot take the instance from host " + host + "; add ?instance=NAME")
			}
			ep.Instance = host[:strings.IndexByte(host, '.')]
		}
	case SchemeTLS:
		ep.URL = "https://" + u.Host
	case SchemeHTTP:
		ep.URL = "http://" + u.Host
	default:
		return bad("scheme must be " + SchemeHTTPS + ", " + SchemeTLS + " or " + SchemeHTTP)
	}
	if ep.Instance == "" {
		return bad("missing ?instance=NAME")
	}
	return ep, nil
}

func redactURL(u *url.URL) string {
	return redact.Conn(u.String())
}

// Source is an open Tablestore endpoint used as a table-stream source. It
// implements runner.Backend and runner.Source (not Sink, Executor or
// Pushdowner). It is safe for concurrent use.
type Source struct {
	ep     Endpoint
	client *tablestore.TableStoreClient
	log    *slog.Logger
	opt    options

	mu     sync.Mutex
	shards map[string]*shardList // by stream id: cached DescribeStream result
	closed bool
}

var _ runner.Source = (*Source)(nil)

// Open parses rawURL (see ParseURL), reads the credentials
// (TABLESTORE_ACCESS_KEY_ID, TABLESTORE_ACCESS_KEY_SECRET and the optional
// TABLESTORE_STS_TOKEN, through WithLookupEnv; or WithCredentials) and
// builds the SDK client. It does no I/O; a wrong credential shows on the
// first request as an error wrapping ErrAuth. log may be nil.
func Open(ctx context.Context, rawURL string, log *slog.Logger, opts ...Option) (*Source, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o := options{
		lookupEnv:        os.LookupEnv,
		now:              time.Now,
		retry:            DefaultRetryPolicy,
		describeInterval: 10 * time.Second,
		pageSize:         1000,
		requestTimeout:   30 * time.Second,
	}
	for _, f := range opts {
		f(&o)
	}
	ep, err := ParseURL(rawURL)
	if err != nil {
		return nil, &runner.ConnError{Err: err}
	}
	cr := o.creds
	if cr == nil {
		cr = &credentials{}
		cr.id, _ = o.lookupEnv(EnvAccessKeyID)
		cr.secret, _ = o.lookupEnv(EnvAccessKeySecret)
		cr.token, _ = o.lookupEnv(EnvSTSToken)
	}
	if cr.id == "" || cr.secret == "" {
		return nil, fmt.Errorf("%w for %s: set %s and %s (and %s for STS credentials)",
			ErrNoCredentials, ep.URL, EnvAccessKeyID, EnvAccessKeySecret, EnvSTSToken)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := tablestore.NewDefaultTableStoreConfig()
	// sluice retries itself (ctx-aware, also GetShardIterator, which the
	// SDK does not retry on timeouts); the SDK's loop sleeps without a ctx.
	cfg.RetryTimes = 0
	cfg.MaxRetryTime = 0
	cfg.HTTPTimeout.ConnectionTimeout = 10 * time.Second
	cfg.HTTPTimeout.RequestTimeout = o.requestTimeout
	cfg.MaxIdleConnections = 16
	cfg.IdleConnTimeout = 30 * time.Second
	cfg.Transport = o.transport
	client := tablestore.NewClientWithConfig(ep.URL, ep.Instance, cr.id, cr.secret, cr.token, cfg)
	s := &Source{ep: ep, client: client, log: log.With("backend", "tablestore", "instance", ep.Instance), opt: o,
		shards: map[string]*shardList{}}
	return s, nil
}

// Scheme returns the URL scheme the source was opened with.
func (s *Source) Scheme() string { return s.ep.Scheme }

// Identity is "tablestore:ENDPOINT/INSTANCE".
func (s *Source) Identity() string { return "tablestore:" + s.ep.URL + "/" + s.ep.Instance }

// Redacted is the canonical connection URL; it never holds credentials.
func (s *Source) Redacted() string {
	host := strings.TrimPrefix(strings.TrimPrefix(s.ep.URL, "https://"), "http://")
	return s.ep.Scheme + "://" + host + "?instance=" + url.QueryEscape(s.ep.Instance)
}

// errClosed is returned by Stream and Changes after Close.
var errClosed = errors.New("tablestore: source is closed")

func (s *Source) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close releases the source. Readers opened by Changes must be closed
// separately.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.shards = map[string]*shardList{}
	return nil
}
