// Package otsfake is a wire-level fake of the Alibaba Cloud Tablestore (OTS)
// service, for tests that drive the real Tablestore Go SDK
// (github.com/aliyun/aliyun-tablestore-go-sdk/tablestore) against it.
//
// The fake speaks the SDK's HTTP protocol: one POST per operation
// ("/CreateTable", "/PutRow", "/GetStreamRecord", ...), protobuf request and
// response bodies (package tablestore/otsprotocol), rows in PlainBuffer
// format, and the x-ots-* request headers, including the HMAC-SHA1 request
// signature and the content MD5, which it verifies. Failures are answered the
// way the service answers them: a non-2xx HTTP status and an
// otsprotocol.Error body, which the SDK turns into a *tablestore.OtsError
// carrying the same Code and HttpStatusCode.
//
// Supported operations: CreateTable, DescribeTable, ListTable, DeleteTable,
// PutRow, UpdateRow, DeleteRow, GetRow, BatchWriteRow, ListStream,
// DescribeStream, GetShardIterator and GetStreamRecord.
//
// Tables created with an enabled StreamSpecification get a stream with N
// shards (see WithShards). Every write appends one stream record to the open
// shard that owns the FNV-1a hash of the first primary-key column. Test code
// can reshape the stream (SplitShard, MergeShards), drop old records (Trim,
// TrimShard), and inject failures (InjectError, InjectFault,
// InjectEmptyResponse).
//
// Sequence info of stream records: Epoch is always 0, Timestamp is the
// server clock in microseconds (never decreasing within a shard), and
// RowIndex numbers records that share a Timestamp within a shard (0, 1, ...),
// so (Epoch, Timestamp, RowIndex) strictly increases along a shard. Cell
// versions written without an explicit timestamp get the server clock in
// milliseconds, as the service does.
//
// The server is safe for concurrent use. Start it with New (it listens on a
// loopback port via net/http/httptest) or build it with NewUnstarted and
// serve Handler() yourself.
package otsfake
