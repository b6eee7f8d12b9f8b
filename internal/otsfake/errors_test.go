package otsfake

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"
	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore/otsprotocol"
)

func TestAuthFailures(t *testing.T) {
	srv, _ := start(t, WithCredentials("id1", "secret1"), WithInstance("inst"))
	tests := []struct {
		name, akid, secret, instance string
		wantMsg                      string
	}{
		{"wrong secret", "id1", "nope", "inst", "Signature mismatch."},
		{"wrong key id", "id2", "secret1", "inst", "The AccessKeyID does not exist."},
		{"wrong instance", "id1", "secret1", "other", "The instance is not found."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tablestore.NewDefaultTableStoreConfig()
			cfg.RetryTimes = 2
			c := tablestore.NewClientWithConfig(srv.URL(), tc.instance, tc.akid, tc.secret, "", cfg)
			_, err := c.ListTable()
			code, status := otsCode(t, err)
			if code != CodeAuthFailed || status != http.StatusForbidden {
				t.Fatalf("got %s %d, want %s 403", code, status, CodeAuthFailed)
			}
			if oe := err.(*tablestore.OtsError); oe.Message != tc.wantMsg || oe.RequestId == "" {
				t.Errorf("message %q request id %q; want %q and an id", oe.Message, oe.RequestId, tc.wantMsg)
			}
			if n := srv.Requests("ListTable"); n != 0 {
				t.Errorf("unauthenticated requests counted: %d", n)
			}
		})
	}
	// The right credentials work.
	if _, err := clientWith(srv, "id1", "secret1").ListTable(); err != nil {
		t.Fatalf("ListTable with the right credentials: %v", err)
	}
}

// rawPost sends a hand-signed request; md5Override replaces the content MD5
// header (the signature then covers the wrong value, as a tampered body would).
func rawPost(t *testing.T, srv *Server, uri string, body []byte, md5Override string) (int, *otsprotocol.Error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL()+uri, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	h := req.Header
	h.Set(hdrDate, "2024-01-02T03:04:05.123Z")
	h.Set(hdrAPIVersion, "2015-12-31")
	h.Set(hdrAccessKeyID, srv.AccessKeyID())
	h.Set(hdrInstanceName, srv.Instance())
	md5 := ContentMD5(body)
	if md5Override != "" {
		md5 = md5Override
	}
	h.Set(hdrContentMD5, md5)
	h.Set(hdrSignature, Sign(uri, h, srv.AccessKeySecret()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, nil
	}
	perr := &otsprotocol.Error{}
	if err := unmarshalInto(out, perr); err != nil {
		t.Fatalf("error body is not an otsprotocol.Error: %v", err)
	}
	return resp.StatusCode, perr
}

func TestContentMD5(t *testing.T) {
	srv, _ := start(t)
	body, _ := marshal(&otsprotocol.ListTableRequest{})
	if status, perr := rawPost(t, srv, "/ListTable", body, ""); status != http.StatusOK {
		t.Fatalf("hand-signed request failed: %d %v", status, perr)
	}
	status, perr := rawPost(t, srv, "/ListTable", body, ContentMD5([]byte("other")))
	if status != http.StatusBadRequest || perr.GetCode() != CodeParameterInvalid {
		t.Fatalf("bad content md5: %d %v, want 400 %s", status, perr, CodeParameterInvalid)
	}
}

// TestSignMatchesSDK checks Sign against the SDK's own signer.
func TestSignMatchesSDK(t *testing.T) {
	h := http.Header{}
	h.Set(hdrDate, "2024-01-02T03:04:05.123Z")
	h.Set(hdrAPIVersion, "2015-12-31")
	h.Set(hdrAccessKeyID, "ak")
	h.Set(hdrInstanceName, "inst")
	h.Set(hdrContentMD5, ContentMD5([]byte("body")))
	h.Set("x-ots-ststoken", "tok")
	h.Set("User-Agent", "ignored")
	creds := &sdkCreds{id: "ak", secret: "sk"}
	want, err := tablestore.GetSignature("/PutRow", "POST", creds, h)
	if err != nil {
		t.Fatal(err)
	}
	if got := Sign("/PutRow", h, "sk"); got != want {
		t.Fatalf("Sign = %s, SDK = %s", got, want)
	}
}

type sdkCreds struct{ id, secret string }

func (c *sdkCreds) GetAccessKeyID() string     { return c.id }
func (c *sdkCreds) GetAccessKeySecret() string { return c.secret }
func (c *sdkCreds) GetSecurityToken() string   { return "" }

func TestInjectedErrors(t *testing.T) {
	tests := []struct {
		name      string
		op, code  string
		n         int
		call      func(c *tablestore.TableStoreClient) error
		wantErr   bool
		wantCalls int
	}{
		{"503 unavailable retried on idempotent read", "ListStream", CodeServerUnavailable, 2,
			func(c *tablestore.TableStoreClient) error {
				_, err := c.ListStream(&tablestore.ListStreamRequest{})
				return err
			}, false, 3},
		{"500 internal retried on idempotent read", "DescribeTable", CodeInternalServerError, 1,
			func(c *tablestore.TableStoreClient) error {
				_, err := c.DescribeTable(&tablestore.DescribeTableRequest{TableName: "t"})
				return err
			}, false, 2},
		{"busy retried on write", "PutRow", CodeServerBusy, 2,
			func(c *tablestore.TableStoreClient) error {
				ch := &tablestore.PutRowChange{TableName: "t", PrimaryKey: pk("a", 1)}
				ch.AddColumn("v", int64(1))
				ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
				_, err := c.PutRow(&tablestore.PutRowRequest{PutRowChange: ch})
				return err
			}, false, 3},
		{"timeout not retried on write", "PutRow", CodeTimeout, 1,
			func(c *tablestore.TableStoreClient) error {
				ch := &tablestore.PutRowChange{TableName: "t", PrimaryKey: pk("a", 1)}
				ch.AddColumn("v", int64(1))
				ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
				_, err := c.PutRow(&tablestore.PutRowRequest{PutRowChange: ch})
				return err
			}, true, 1},
		{"retries exhausted", "GetRow", CodeServerUnavailable, 10,
			func(c *tablestore.TableStoreClient) error {
				_, err := c.GetRow(&tablestore.GetRowRequest{SingleRowQueryCriteria: &tablestore.SingleRowQueryCriteria{
					TableName: "t", PrimaryKey: pk("a", 1), MaxVersion: 1}})
				return err
			}, true, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := start(t)
			c := client(srv) // RetryTimes = 3
			createTable(t, c, "t", true)
			srv.InjectError(tc.op, tc.code, tc.n)
			err := tc.call(c)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil {
				if code, status := otsCode(t, err); code != tc.code || status != StatusForCode(tc.code) {
					t.Errorf("got %s %d, want %s %d", code, status, tc.code, StatusForCode(tc.code))
				}
			}
			if got := srv.Requests(tc.op); got != tc.wantCalls {
				t.Errorf("%s requests = %d, want %d", tc.op, got, tc.wantCalls)
			}
		})
	}
}

func TestInjectedEmptyBody(t *testing.T) {
	srv, _ := start(t)
	c := client(srv)
	createTable(t, c, "t", true)
	sid := streamOf(t, c, "t")
	srv.InjectEmptyResponse("DescribeStream", 1)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("SDK did not panic on an empty DescribeStream body")
			}
		}()
		_, _ = c.DescribeStream(&tablestore.DescribeStreamRequest{StreamId: sid})
	}()
	// The fault is used up: the next call works.
	if _, err := c.DescribeStream(&tablestore.DescribeStreamRequest{StreamId: sid}); err != nil {
		t.Fatalf("DescribeStream after the fault: %v", err)
	}
	// AnyOperation faults apply to every operation.
	srv.InjectFault(AnyOperation, Fault{Code: "OTSQuotaExhausted", Status: 403, Message: "quota"}, 1)
	_, err := c.ListTable()
	if code, status := otsCode(t, err); code != "OTSQuotaExhausted" || status != 403 {
		t.Fatalf("got %s %d", code, status)
	}
}

func TestOperationErrors(t *testing.T) {
	srv, _ := start(t)
	c := client(srv)
	createTable(t, c, "t", false)
	tests := []struct {
		name   string
		call   func() error
		code   string
		status int
	}{
		{"describe missing table", func() error {
			_, err := c.DescribeTable(&tablestore.DescribeTableRequest{TableName: "missing"})
			return err
		}, CodeObjectNotExist, 404},
		{"create existing table", func() error {
			meta := &tablestore.TableMeta{TableName: "t"}
			meta.AddPrimaryKeyColumn("id", tablestore.PrimaryKeyType_STRING)
			_, err := c.CreateTable(&tablestore.CreateTableRequest{TableMeta: meta,
				TableOption: &tablestore.TableOption{TimeToAlive: -1, MaxVersion: 1}, ReservedThroughput: &tablestore.ReservedThroughput{}})
			return err
		}, CodeObjectAlreadyExist, 409},
		{"expect-exist on missing row", func() error {
			ch := &tablestore.UpdateRowChange{TableName: "t", PrimaryKey: pk("nope", 1)}
			ch.PutColumn("v", int64(1))
			ch.SetCondition(tablestore.RowExistenceExpectation_EXPECT_EXIST)
			_, err := c.UpdateRow(&tablestore.UpdateRowRequest{UpdateRowChange: ch})
			return err
		}, CodeConditionCheckFail, 403},
		{"wrong primary key type", func() error {
			p := &tablestore.PrimaryKey{}
			p.AddPrimaryKeyColumn("id", int64(1))
			p.AddPrimaryKeyColumn("n", int64(1))
			ch := &tablestore.PutRowChange{TableName: "t", PrimaryKey: p}
			ch.AddColumn("v", int64(1))
			ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
			_, err := c.PutRow(&tablestore.PutRowRequest{PutRowChange: ch})
			return err
		}, CodeParameterInvalid, 400},
		{"describe unknown stream", func() error {
			sid := tablestore.StreamId("nope")
			_, err := c.DescribeStream(&tablestore.DescribeStreamRequest{StreamId: &sid})
			return err
		}, CodeObjectNotExist, 404},
		{"bad iterator", func() error {
			it := tablestore.ShardIterator("garbage")
			_, err := c.GetStreamRecord(&tablestore.GetStreamRecordRequest{ShardIterator: &it})
			return err
		}, CodeParameterInvalid, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, status := otsCode(t, tc.call())
			if code != tc.code || status != tc.status {
				t.Errorf("got %s %d, want %s %d", code, status, tc.code, tc.status)
			}
		})
	}
}
