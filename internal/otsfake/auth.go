package otsfake

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"sort"
	"strings"
)

// Request headers the SDK sends (tablestore/ots_header.go, api.go doRequest).
const (
	hdrDate         = "x-ots-date"
	hdrAPIVersion   = "x-ots-apiversion"
	hdrAccessKeyID  = "x-ots-accesskeyid"
	hdrContentMD5   = "x-ots-contentmd5"
	hdrInstanceName = "x-ots-instancename"
	hdrSignature    = "x-ots-signature"
	hdrSignatureV4  = "x-ots-signaturev4"
	hdrRequestID    = "x-ots-requestid"
	hdrContentType  = "x-ots-contenttype"
)

// Sign returns the base64 HMAC-SHA1 request signature the SDK sends in
// x-ots-signature, keyed by the access key secret, for a POST to uri (such
// as "/PutRow") with the given headers. The string to sign is
//
//	uri + "\nPOST\n\n" + for each x-ots-* header except x-ots-signature, sorted
//	by lower-cased name: name + ":" + strings.TrimSpace(value) + "\n"
//
// Headers with an empty value are skipped, as the SDK skips them.
func Sign(uri string, h http.Header, secret string) string {
	type kv struct{ k, v string }
	var hs []kv
	for name, vals := range h {
		lower := strings.ToLower(name)
		if !strings.HasPrefix(lower, "x-ots-") || lower == hdrSignature || len(vals) == 0 {
			continue
		}
		if v := strings.TrimSpace(vals[0]); v != "" {
			hs = append(hs, kv{lower, v})
		}
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].k < hs[j].k })
	var sb strings.Builder
	sb.WriteString(uri + "\nPOST\n\n")
	for _, x := range hs {
		sb.WriteString(x.k + ":" + x.v + "\n")
	}
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(sb.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ContentMD5 returns the base64 MD5 digest of body, as sent in
// x-ots-contentmd5.
func ContentMD5(body []byte) string {
	sum := md5.Sum(body)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// authenticate checks the request headers the way the service does and
// returns nil or an OTSAuthFailed / OTSParameterInvalid error.
func (s *Server) authenticate(r *http.Request, body []byte) *otsError {
	h := r.Header
	for _, name := range []string{hdrDate, hdrAPIVersion, hdrAccessKeyID, hdrContentMD5, hdrInstanceName} {
		if h.Get(name) == "" {
			return newErr(CodeAuthFailed, "Missing header: %s.", name)
		}
	}
	// The SDK formats the milliseconds of x-ots-date with a literal "123"
	// (layout "2006-01-02T15:04:05.123Z"), so only presence is checked.
	if h.Get(hdrSignature) == "" {
		if h.Get(hdrSignatureV4) != "" {
			return newErr(CodeAuthFailed, "Signature V4 is not supported by otsfake.")
		}
		return newErr(CodeAuthFailed, "Missing header: %s.", hdrSignature)
	}
	if h.Get(hdrAccessKeyID) != s.accessKeyID {
		return newErr(CodeAuthFailed, "The AccessKeyID does not exist.")
	}
	if h.Get(hdrInstanceName) != s.instance {
		return newErr(CodeAuthFailed, "The instance is not found.")
	}
	want := Sign(r.URL.Path, h, s.accessKeySecret)
	if !hmac.Equal([]byte(want), []byte(h.Get(hdrSignature))) {
		return newErr(CodeAuthFailed, "Signature mismatch.")
	}
	if h.Get(hdrContentMD5) != ContentMD5(body) {
		return newErr(CodeParameterInvalid, "Content MD5 mismatch.")
	}
	return nil
}
