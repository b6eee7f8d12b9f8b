// Package tablestore is sluice's Alibaba Cloud Tablestore (OTS) source: it
// reads a table's Stream, with the Tablestore Go SDK
// (github.com/aliyun/aliyun-tablestore-go-sdk v1.8.0), as a sluice table
// stream. It registers the URL schemes "tablestore", "tablestore+http" and
// "tablestore+https" with package runner; it is a runner.Source only (not a
// sink, executor or pushdown target).
//
// # Connection
//
//	tablestore://INSTANCE.REGION.ots.aliyuncs.com     HTTPS; the instance is the host's first label
//	tablestore+https://HOST[:PORT]?instance=NAME      HTTPS to an endpoint of another shape
//	tablestore+http://HOST:PORT?instance=NAME         plain HTTP (a local test server)
//
// Credentials come from TABLESTORE_ACCESS_KEY_ID and
// TABLESTORE_ACCESS_KEY_SECRET (plus TABLESTORE_STS_TOKEN for STS
// credentials), never from the URL; they are not printed in plans, logs or
// errors. A rejected credential or instance name (OTSAuthFailed) is an error
// wrapping ErrAuth that says what to check.
//
// # Job source
//
// The job's source names the TABLE (plan.Source.Stream); the table's
// Stream must be enabled. Tablestore attribute columns are schemaless, so the
// job declares those it reads (plan.Source.Columns, YAML
// `source: {stream: TABLE, columns: {price: DECIMAL(10,2), …}}`). The row
// layout (StreamInfo.TableSchema) is the primary-key columns, in key order,
// then the declared columns. Types:
//
//	Tablestore         sluice column types that accept it
//	INTEGER            BIGINT (also TINYINT/SMALLINT/INT, range-checked; DECIMAL exactly)
//	DOUBLE             DOUBLE, FLOAT
//	STRING             STRING, VARCHAR, CHAR; DECIMAL(p,s) (parsed exactly, never via float64);
//	                   DATE, TIMESTAMP (ISO 8601 text)
//	BOOLEAN            BOOLEAN
//	BINARY             BINARY
//
// Primary-key columns are typed from DescribeTable: INTEGER → BIGINT,
// STRING → STRING, BINARY → BINARY. A cell of another type is a
// *cdc.ValueError naming the row's key and the column, and stops the read.
// Columns the job does not declare are ignored (a debug log names each once):
// a job reads the columns it needs, as a SELECT would.
//
// # Records
//
// Tablestore keeps no before-images, so a stream read is a change feed, not
// net changes (StreamInfo.Mode is ModeChangeFeed): every record is returned.
//
//	PutRow     → INSERT, full row (Present nil): the carried columns, NULL
//	             for the others, since a PutRow replaces the row
//	UpdateRow  → UPDATE_AFTER, partial row: Present marks the key and the
//	             columns the update touched; a deleted column
//	             (DeleteOneVersion / DeleteAllVersions) is present and NULL
//	DeleteRow  → DELETE, the key only (Present marks the key columns)
//
// __commit_timestamp is the record's sequence timestamp (µs) as a UTC
// time.Time. __commit_version is timestamp_µs*1000 + row index (capped at
// 999), raised when needed so that it strictly increases along a shard and
// from parent shards to their children; thus it increases per key.
// Tables keeping several versions per column are read as if they kept one.
//
// # Shards and order
//
// Changes lists every shard (DescribeStream, paged with
// InclusiveStartShardId/NextShardId, cached and described again every
// WithDescribeInterval and whenever a shard ends) and reads each with
// GetShardIterator and GetStreamRecord. A child shard is read only after
// its parent, and after a merge also the parent's sibling, has been read to
// its end (NextShardIterator nil), as the Java stream client's
// BlockOnParentShardTask does. Tablestore routes a key to one shard at a
// time and moves it to a child only when the parent is closed, so a key's
// records are all in one chain of shards; reading a shard in order and a
// child only after its parents returns each key's records in commit order,
// across splits and merges, and __commit_version follows that order.
//
// A read is bounded: each shard stops at its first record whose sequence
// timestamp is after the moment Changes was called (run-once: "everything
// committed before the run started"), when it is caught up, or at its end.
// The cutoff compares the local clock with the server's sequence
// timestamps; clock skew only moves records to the next read, it never
// loses or repeats one, since positions follow the records actually
// returned. Continuous consumption is the runner calling Changes again from
// the last ReadPoint; IdleBackoff spaces those calls while the stream is
// idle.
//
// # Checkpoints
//
// The stream keeps no consumer position on the server: StreamInfo.Offset
// is the zero Offset and Advance does nothing. The position is the job's
// checkpoint, which the runner commits in the sink database in the same
// transaction as the rows. It is a cdc.Offset with one entry per shard
// (partition = shard id, value = Position.Encode):
//
//	{"it":"ITERATOR","seq":"EPOCH:TS_US:ROW","v":VERSION}    reading: iterator of the page, last record returned
//	{"done":true,"v":VERSION}                                 shard closed and read to its end
//
// Resuming reads the page at the iterator again and skips the records at or
// before seq, so a checkpoint taken after any change resumes exactly after
// it. A done shard gone from the stream (expired) is dropped from the offset.
//
// # Failures
//
// Transient failures (OTSServerBusy, OTSServerUnavailable, OTSTimeout,
// OTSInternalServerError, throttling, network errors, and empty 200
// answers, on which the SDK panics or which it would take for the end of a
// shard) are retried with exponential backoff and jitter (RetryPolicy), for
// every operation including GetShardIterator, and the waits end with the
// context. OTSTrimmedDataAccess (the checkpoint fell behind the stream's
// retention) stops the read with an error wrapping ErrDataLost that says to
// resynchronize with `sluice backfill`; records are never skipped silently.
package tablestore
