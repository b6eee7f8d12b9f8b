package otsfake

import (
	"fmt"
	"net/http"
)

// Error codes the fake returns (the service's names; the SDK exposes them
// as tablestore.OtsError.Code).
const (
	CodeAuthFailed           = "OTSAuthFailed"
	CodeParameterInvalid     = "OTSParameterInvalid"
	CodeObjectNotExist       = "OTSObjectNotExist"
	CodeObjectAlreadyExist   = "OTSObjectAlreadyExist"
	CodeConditionCheckFail   = "OTSConditionCheckFail"
	CodeTrimmedDataAccess    = "OTSTrimmedDataAccess"
	CodeMethodNotAllowed     = "OTSMethodNotAllowed"
	CodeUnsupportOperation   = "OTSUnsupportOperation"
	CodeServerBusy           = "OTSServerBusy"
	CodeServerUnavailable    = "OTSServerUnavailable"
	CodeTimeout              = "OTSTimeout"
	CodeInternalServerError  = "OTSInternalServerError"
	CodePartitionUnavailable = "OTSPartitionUnavailable"
	CodeRowOperationConflict = "OTSRowOperationConflict"
)

// codeStatus maps error codes to the HTTP status the service uses for them
// (Tablestore "Error codes" reference).
var codeStatus = map[string]int{
	CodeAuthFailed:           http.StatusForbidden,
	CodeParameterInvalid:     http.StatusBadRequest,
	CodeObjectNotExist:       http.StatusNotFound,
	CodeObjectAlreadyExist:   http.StatusConflict,
	CodeConditionCheckFail:   http.StatusForbidden,
	CodeTrimmedDataAccess:    http.StatusBadRequest,
	CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	CodeUnsupportOperation:   http.StatusBadRequest,
	CodeServerBusy:           http.StatusServiceUnavailable,
	CodeServerUnavailable:    http.StatusServiceUnavailable,
	CodeTimeout:              http.StatusServiceUnavailable,
	CodeInternalServerError:  http.StatusInternalServerError,
	CodePartitionUnavailable: http.StatusServiceUnavailable,
	CodeRowOperationConflict: http.StatusConflict,
}

// StatusForCode returns the HTTP status the fake sends with an error code:
// the service's status for known codes, 500 for unknown ones.
func StatusForCode(code string) int {
	if s, ok := codeStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// otsError is an error answered to the client as an otsprotocol.Error body.
type otsError struct {
	status  int
	code    string
	message string
}

func (e *otsError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message) }

func newErr(code, format string, args ...any) *otsError {
	return &otsError{status: StatusForCode(code), code: code, message: fmt.Sprintf(format, args...)}
}

func errParam(format string, args ...any) *otsError {
	return newErr(CodeParameterInvalid, format, args...)
}

func errTableNotExist() *otsError {
	return newErr(CodeObjectNotExist, "Requested table does not exist.")
}

// Fault is a failure the server answers instead of running an operation
// (see InjectFault).
type Fault struct {
	// Status is the HTTP status; 0 means StatusForCode(Code), or 200 when
	// EmptyBody is set.
	Status int
	// Code and Message fill the otsprotocol.Error body.
	Code    string
	Message string
	// EmptyBody answers with the given status (default 200) and a
	// zero-length body instead of an error message. The SDK treats an empty
	// 200 body as an empty response and then dereferences its required
	// fields, which panics for most operations.
	EmptyBody bool
}

// AnyOperation, passed as the operation to InjectFault and friends, matches
// every operation. Faults for a specific operation are used first.
const AnyOperation = "*"

type faultQueue struct {
	fault Fault
	left  int
}

// InjectFault makes the next n requests for op (an operation name such as
// "GetStreamRecord", or AnyOperation) fail with f. Requests are counted after
// authentication, so a rejected signature does not consume a fault. Faults
// queue up in the order injected.
func (s *Server) InjectFault(op string, f Fault, n int) {
	if n <= 0 {
		return
	}
	if f.Status == 0 {
		if f.EmptyBody {
			f.Status = http.StatusOK
		} else {
			f.Status = StatusForCode(f.Code)
		}
	}
	if f.Message == "" && !f.EmptyBody {
		f.Message = "Injected by otsfake."
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[op] = append(s.faults[op], &faultQueue{fault: f, left: n})
}

// InjectError makes the next n requests for op fail with the error code
// (e.g. CodeServerBusy) and the service's HTTP status for it.
func (s *Server) InjectError(op, code string, n int) {
	s.InjectFault(op, Fault{Code: code}, n)
}

// InjectEmptyResponse makes the next n requests for op answer HTTP 200 with
// an empty body.
func (s *Server) InjectEmptyResponse(op string, n int) {
	s.InjectFault(op, Fault{EmptyBody: true}, n)
}

// ClearFaults drops all pending injected faults.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = map[string][]*faultQueue{}
}

// takeFault pops the next fault for op, if any. Caller holds s.mu.
func (s *Server) takeFault(op string) (Fault, bool) {
	for _, key := range []string{op, AnyOperation} {
		q := s.faults[key]
		if len(q) == 0 {
			continue
		}
		f := q[0].fault
		q[0].left--
		if q[0].left == 0 {
			q = q[1:]
		}
		if len(q) == 0 {
			delete(s.faults, key)
		} else {
			s.faults[key] = q
		}
		return f, true
	}
	return Fault{}, false
}
