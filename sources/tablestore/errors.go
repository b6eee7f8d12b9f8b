package tablestore

import "errors"

// Sentinel errors of package tablestore. Errors returned by the package wrap
// them (test with errors.Is); messages never contain the access key secret
// or the STS token.
var (
	// ErrDataLost: the stream no longer holds records the job has not read
	// yet, because its checkpoint fell behind the stream's retention
	// (OTSTrimmedDataAccess, or a shard the checkpoint still reads from has
	// expired). The job stops; resynchronize the target with
	// `sluice backfill JOB`.
	ErrDataLost = errors.New("tablestore: stream data lost")
	// ErrAuth: the service rejected the credentials or the instance name
	// (OTSAuthFailed).
	ErrAuth = errors.New("tablestore: authentication failed")
	// ErrNoCredentials: TABLESTORE_ACCESS_KEY_ID or
	// TABLESTORE_ACCESS_KEY_SECRET is not set.
	ErrNoCredentials = errors.New("tablestore: no credentials")
	// ErrBadURL: the connection URL is not one of the accepted forms.
	ErrBadURL = errors.New("tablestore: bad connection URL")
	// ErrBadColumns: the job's column declarations do not fit the table.
	ErrBadColumns = errors.New("tablestore: bad column declaration")
	// ErrEmptyResponse: the service answered 200 with an empty or
	// incomplete body (the SDK panics on some of these; the panic is
	// recovered into this error). It is treated as transient.
	ErrEmptyResponse = errors.New("tablestore: empty or incomplete response")
	// ErrRetriesExhausted: a transient failure persisted through every
	// retry; the last failure is wrapped too.
	ErrRetriesExhausted = errors.New("tablestore: transient failure persisted")
	// ErrBadPosition: a checkpoint position of a shard cannot be decoded.
	ErrBadPosition = errors.New("tablestore: bad shard position")
)
