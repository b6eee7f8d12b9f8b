package otsfake

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore/otsprotocol"
	"google.golang.org/protobuf/proto"
)

// Default credentials and instance of a Server.
const (
	DefaultInstance        = "otsfake"
	DefaultAccessKeyID     = "otsfake-akid"
	DefaultAccessKeySecret = "otsfake-secret"
)

// maxBodyBytes bounds request bodies (the service limit is 5 MB).
const maxBodyBytes = 5 << 20

// Server is a fake Tablestore instance. Create it with New or NewUnstarted.
type Server struct {
	instance        string
	accessKeyID     string
	accessKeySecret string
	clock           func() time.Time
	shardsPerStream int

	ts *httptest.Server // nil for NewUnstarted

	mu       sync.Mutex
	tables   map[string]*table
	faults   map[string][]*faultQueue
	requests map[string]int
	reqSeq   uint64
}

// Option configures a Server.
type Option func(*Server)

// WithCredentials sets the access key id and secret the server accepts.
func WithCredentials(accessKeyID, accessKeySecret string) Option {
	return func(s *Server) { s.accessKeyID, s.accessKeySecret = accessKeyID, accessKeySecret }
}

// WithInstance sets the instance name the server accepts (x-ots-instancename).
func WithInstance(name string) Option { return func(s *Server) { s.instance = name } }

// WithClock sets the clock used for stream-record timestamps (µs), cell
// versions (ms) and creation times. Default time.Now.
func WithClock(now func() time.Time) Option { return func(s *Server) { s.clock = now } }

// WithShards sets how many shards the stream of a newly created table has
// (default 1; values < 1 mean 1).
func WithShards(n int) Option {
	return func(s *Server) {
		if n < 1 {
			n = 1
		}
		s.shardsPerStream = n
	}
}

// NewUnstarted returns a Server that does not listen; serve Handler() with
// your own http.Server. URL and Endpoint return "" until you know better.
func NewUnstarted(opts ...Option) *Server {
	s := &Server{
		instance:        DefaultInstance,
		accessKeyID:     DefaultAccessKeyID,
		accessKeySecret: DefaultAccessKeySecret,
		clock:           time.Now,
		shardsPerStream: 1,
		tables:          map[string]*table{},
		faults:          map[string][]*faultQueue{},
		requests:        map[string]int{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// New returns a Server listening on a loopback port (httptest). Call Close
// when done.
func New(opts ...Option) *Server {
	s := NewUnstarted(opts...)
	s.ts = httptest.NewServer(s.Handler())
	return s
}

// URL returns the server's base URL ("http://127.0.0.1:port"), the endpoint
// to pass to tablestore.NewClient. Empty for NewUnstarted servers.
func (s *Server) URL() string {
	if s.ts == nil {
		return ""
	}
	return s.ts.URL
}

// Endpoint is an alias of URL.
func (s *Server) Endpoint() string { return s.URL() }

// Instance returns the instance name the server accepts.
func (s *Server) Instance() string { return s.instance }

// AccessKeyID returns the access key id the server accepts.
func (s *Server) AccessKeyID() string { return s.accessKeyID }

// AccessKeySecret returns the access key secret the server accepts.
func (s *Server) AccessKeySecret() string { return s.accessKeySecret }

// Close stops the listener of a server made by New (no-op otherwise).
func (s *Server) Close() {
	if s.ts != nil {
		s.ts.Close()
	}
}

// Handler returns the http.Handler serving the Tablestore protocol.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Requests returns how many authenticated requests op (e.g. "PutRow") has
// received, including those answered with an injected fault.
func (s *Server) Requests(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[op]
}

// opFunc runs one operation on a decoded request body. It is called with
// s.mu held.
type opFunc func(s *Server, body []byte) (message, *otsError)

var operations = map[string]opFunc{
	"CreateTable":      (*Server).createTable,
	"DescribeTable":    (*Server).describeTable,
	"ListTable":        (*Server).listTable,
	"DeleteTable":      (*Server).deleteTable,
	"PutRow":           (*Server).putRow,
	"UpdateRow":        (*Server).updateRow,
	"DeleteRow":        (*Server).deleteRow,
	"GetRow":           (*Server).getRow,
	"BatchWriteRow":    (*Server).batchWriteRow,
	"ListStream":       (*Server).listStream,
	"DescribeStream":   (*Server).describeStream,
	"GetShardIterator": (*Server).getShardIterator,
	"GetStreamRecord":  (*Server).getStreamRecord,
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.reqSeq++
	reqID := fmt.Sprintf("otsfake-%08d", s.reqSeq)
	s.mu.Unlock()
	w.Header().Set(hdrRequestID, reqID)

	if r.Method != http.MethodPost {
		s.writeError(w, newErr(CodeMethodNotAllowed, "Only POST method is allowed."))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		s.writeError(w, errParam("Failed to read the request body: %v.", err))
		return
	}
	if len(body) > maxBodyBytes {
		s.writeError(w, newErr("OTSRequestBodyTooLarge", "The size of POST data is too large."))
		return
	}
	if e := s.authenticate(r, body); e != nil {
		s.writeError(w, e)
		return
	}
	op := strings.TrimPrefix(r.URL.Path, "/")
	fn, ok := operations[op]

	s.mu.Lock()
	s.requests[op]++
	if f, hit := s.takeFault(op); hit {
		s.mu.Unlock()
		if f.EmptyBody {
			s.writeBody(w, f.Status, nil)
		} else {
			s.writeError(w, &otsError{status: f.Status, code: f.Code, message: f.Message})
		}
		return
	}
	if !ok {
		s.mu.Unlock()
		s.writeError(w, newErr(CodeUnsupportOperation, "Unsupported operation: '%s'.", op))
		return
	}
	resp, oerr := fn(s, body)
	s.mu.Unlock()

	if oerr != nil {
		s.writeError(w, oerr)
		return
	}
	out, err := marshal(resp)
	if err != nil {
		s.writeError(w, newErr(CodeInternalServerError, "otsfake: marshal %s response: %v", op, err))
		return
	}
	s.writeBody(w, http.StatusOK, out)
}

func (s *Server) writeError(w http.ResponseWriter, e *otsError) {
	msg := &otsprotocol.Error{Code: proto.String(e.code), Message: proto.String(e.message)}
	out, err := marshal(msg)
	if err != nil { // cannot happen: Code is set
		out = []byte(e.Error())
	}
	s.writeBody(w, e.status, out)
}

func (s *Server) writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/x-protobuf")
	h.Set(hdrContentType, "protocol buffer")
	h.Set(hdrContentMD5, ContentMD5(body))
	h.Set(hdrDate, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// unmarshal decodes a request body into m, mapping failures to
// OTSParameterInvalid.
func unmarshal(body []byte, m message) *otsError {
	if err := unmarshalInto(body, m); err != nil {
		return errParam("Failed to parse the ProtoBuf message: %v.", err)
	}
	return nil
}

// nowMicros returns the server clock in microseconds.
func (s *Server) nowMicros() int64 { return s.clock().UnixMicro() }

// nowMillis returns the server clock in milliseconds.
func (s *Server) nowMillis() int64 { return s.clock().UnixMilli() }

func consumed(read, write int32) *otsprotocol.ConsumedCapacity {
	return &otsprotocol.ConsumedCapacity{CapacityUnit: &otsprotocol.CapacityUnit{
		Read: proto.Int32(read), Write: proto.Int32(write)}}
}
