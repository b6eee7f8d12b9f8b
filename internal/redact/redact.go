// Package redact renders connection strings and the errors and texts that
// may hold them without their secrets. It is the one redaction every output
// of sluice uses: plans, logs, errors, the run history, /healthz, status,
// history and metric labels.
//
// A connection string is one of
//
//	SCHEME://[USER[:PASSWORD]@]HOST[:PORT][/PATH][?KEY=VALUE&…]   (URL)
//	SCHEME:OPAQUE[?KEY=VALUE&…]                                    (sqlite:PATH)
//	KEY=VALUE KEY='quoted value' …                                (libpq key=value DSN)
//
// What is masked (replaced by Mask): a URL's password, whatever characters
// it holds (the user info runs to the last '@' of the string, so a password
// holding '#', '/', '?', '@', '%', a space or quotes is masked whole); the
// value of every secret-looking parameter (IsSecretKey) in a URL query or a
// DSN; any text sluice cannot split unambiguously. Other parameters stay
// readable. A URL that net/url reads differently (an unencoded '#', '/',
// '?' or '@' in its password) shows its scheme only; a string that is not
// a connection string sluice can read shows its scheme and host when they
// can be found, nothing else.
package redact

import (
	"errors"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Mask replaces every secret in a rendered connection string.
const Mask = "xxxxx"

// IsSecretKey reports whether a URL query or DSN parameter named key holds
// a secret: password, passwd, pwd, sslpassword, any key containing
// "secret", "token", "credential" or "apikey"/"api_key", and any key
// starting with "access_key" (Tablestore's access_key_id and
// access_key_secret). Keys compare case-insensitively.
func IsSecretKey(key string) bool {
	k := strings.ToLower(strings.TrimSpace(key))
	switch {
	case k == "pwd", k == "passwd", strings.Contains(k, "password"),
		strings.Contains(k, "secret"), strings.Contains(k, "token"),
		strings.Contains(k, "credential"), strings.Contains(k, "apikey"),
		strings.Contains(k, "api_key"), strings.HasPrefix(k, "access_key"),
		strings.HasPrefix(k, "accesskey"):
		return true
	}
	return false
}

// parts is a connection string split into what may be shown and the
// secrets it holds.
type parts struct {
	shown   string   // the rendering with secrets masked
	secrets []string // raw secret texts (as written in the string)
}

// Conn returns conn with its secrets masked (see the package comment). The
// result never contains a password or secret parameter of conn.
func Conn(conn string) string { return split(conn).shown }

// Secrets returns the secret texts of conn as written and as a driver
// would decode them (percent-decoding, DSN quote unescaping), longest
// first; empty strings are left out.
func Secrets(conn string) []string {
	p := split(conn)
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, s := range p.secrets {
		base := []string{s, unquoteDSN(s)}
		if d, err := url.PathUnescape(s); err == nil {
			base = append(base, d)
		}
		if d, err := url.QueryUnescape(s); err == nil {
			base = append(base, d)
		}
		for _, b := range base {
			add(b)
			add(url.PathEscape(b))
			add(url.QueryEscape(b))
			// As quoted by %q in an error message.
			q := strconv.Quote(b)
			add(q[1 : len(q)-1])
		}
	}
	// Longest first, so that replacing one never leaves part of a longer one.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Text returns s with conn itself and every secret of conn replaced by the
// masked rendering of conn or by Mask.
func Text(s, conn string) string {
	if conn != "" && strings.Contains(s, conn) {
		s = strings.ReplaceAll(s, conn, Conn(conn))
	}
	for _, sec := range Secrets(conn) {
		s = strings.ReplaceAll(s, sec, Mask)
	}
	return s
}

// Error wraps err so that its message holds neither conn nor any of its
// secrets (Text); errors.Is and errors.As still see err. nil stays nil.
// Drivers' parse and connect errors (net/url, pgx) quote the string they
// were given: wrap them before they leave the package that called them.
func Error(err error, conn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := Text(msg, conn)
	if clean == msg {
		return err
	}
	return &scrubbed{msg: clean, err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// Is reports whether err was scrubbed by Error (tests).
func Is(err error) bool {
	var s *scrubbed
	return errors.As(err, &s)
}

var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)

func split(conn string) parts {
	c := strings.TrimSpace(conn)
	if c == "" {
		return parts{}
	}
	if m := schemeRE.FindStringSubmatch(c); m != nil && !strings.ContainsAny(m[1], " =") {
		scheme := m[1]
		rest := c[len(m[0]):]
		if strings.HasPrefix(rest, "//") && !strings.EqualFold(scheme, "sqlite") {
			return splitURL(scheme, rest[2:])
		}
		return splitOpaque(scheme, rest)
	}
	if strings.Contains(c, "=") {
		return splitDSN(c)
	}
	// Neither a URL nor a DSN: nothing of it is shown.
	return parts{shown: "(unreadable connection string)", secrets: []string{c}}
}

// hostRE is what a host[:port] (or a bracketed IPv6 address, or a
// comma-separated list of them, as libpq allows) may hold.
var hostRE = regexp.MustCompile(`^[A-Za-z0-9._~%\-\[\]:,]*$`)

// userRE is what a user name is shown with; others are masked.
var userRE = regexp.MustCompile(`^[A-Za-z0-9._~%\-+!$&'()*;=]*$`)

// splitURL reads rest (after "SCHEME://") two ways: with the user info
// running to the last '@' of the string (a password holding any character)
// and as net/url reads it (the authority ends at the first '/', '?' or
// '#'). When both agree the rendering keeps user, host, path and the
// parameters that are not secret. When they disagree the string is
// ambiguous — an unencoded '@', '/', '?' or '#' in a password, or an '@'
// in a parameter — and only the scheme is shown: every secret of either
// reading stays a secret, and no text is shown that one reading takes for
// a password.
func splitURL(scheme, rest string) parts {
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	aAt, bAt := strings.LastIndexByte(rest, '@'), strings.LastIndexByte(authority, '@')
	a := splitURLAt(scheme, rest, aAt)
	if aAt == bAt {
		return a
	}
	b := splitURLAt(scheme, rest, bAt)
	return parts{shown: scheme + "://" + Mask, secrets: append(append(a.secrets, b.secrets...), rest)}
}

// splitURLAt renders rest with the user info ending at index at (-1: none).
func splitURLAt(scheme, rest string, at int) parts {
	var p parts
	var b strings.Builder
	b.WriteString(scheme)
	b.WriteString("://")
	tail := rest
	if at >= 0 {
		info := rest[:at]
		tail = rest[at+1:]
		user, pass, hasPass := strings.Cut(info, ":")
		switch {
		case userRE.MatchString(user) && hasPass:
			b.WriteString(user + ":" + Mask + "@")
			p.secrets = append(p.secrets, pass)
		case userRE.MatchString(user):
			b.WriteString(user + "@")
		default:
			b.WriteString(Mask + "@")
			p.secrets = append(p.secrets, info)
		}
	}
	host, after := tail, ""
	if i := strings.IndexAny(tail, "/?#"); i >= 0 {
		host, after = tail[:i], tail[i:]
	}
	if !hostRE.MatchString(host) {
		// Not a host: show the scheme only.
		p.secrets = append(p.secrets, tail)
		p.shown = scheme + "://" + Mask
		return p
	}
	b.WriteString(host)
	// The rest must parse as a URL, else only scheme and host are shown.
	if after != "" {
		path, query, hasQuery := strings.Cut(after, "?")
		path, frag, hasFrag := strings.Cut(path, "#")
		if hasFrag {
			// A fragment means nothing to a database driver; it is most
			// likely part of a password written unencoded.
			p.secrets = append(p.secrets, frag)
		}
		if _, err := url.Parse(scheme + "://h" + path); err != nil || strings.ContainsAny(path, " \t\n'\"\\") {
			p.secrets = append(p.secrets, after)
			p.shown = b.String()
			return p
		}
		b.WriteString(path)
		if hasFrag {
			b.WriteString("#" + Mask)
		}
		if hasQuery {
			b.WriteString("?")
			q, sec := maskQuery(query)
			b.WriteString(q)
			p.secrets = append(p.secrets, sec...)
		}
	}
	p.shown = b.String()
	return p
}

func splitOpaque(scheme, rest string) parts {
	var p parts
	prefix := ""
	if !strings.EqualFold(scheme, "sqlite") {
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			info := rest[:at]
			if user, pass, ok := strings.Cut(info, ":"); ok {
				p.secrets = append(p.secrets, pass)
				info = user
			}
			p.secrets = append(p.secrets, info)
			prefix, rest = Mask+"@", rest[at+1:]
		}
	}
	body, query, hasQuery := strings.Cut(rest, "?")
	s := scheme + ":" + prefix + body
	if hasQuery {
		q, sec := maskQuery(query)
		s += "?" + q
		p.secrets = append(p.secrets, sec...)
	}
	p.shown = s
	return p
}

// queryKeyRE finds where the next parameter starts after a secret value
// that may itself hold '&' (a password written unencoded).
var queryKeyRE = regexp.MustCompile(`&[A-Za-z_][A-Za-z0-9_.\-]*=`)

// maskQuery masks the values of secret keys in a raw URL query. A secret
// value runs to the next "&key=" (so an unencoded '&' in it stays masked).
func maskQuery(q string) (string, []string) {
	var out strings.Builder
	var secrets []string
	for q != "" {
		var pair string
		if IsSecretKey(keyOf(q)) {
			// value runs to the next &key=
			if loc := queryKeyRE.FindStringIndex(q[strings.IndexByte(q, '=')+1:]); loc != nil {
				cut := strings.IndexByte(q, '=') + 1 + loc[0]
				pair, q = q[:cut], q[cut+1:]
			} else {
				pair, q = q, ""
			}
			k, v, _ := strings.Cut(pair, "=")
			secrets = append(secrets, v)
			pair = k + "=" + Mask
		} else {
			var rest string
			var more bool
			pair, rest, more = strings.Cut(q, "&")
			q = rest
			if !more {
				q = ""
			}
			if !strings.Contains(pair, "=") && pair != "" {
				// A bare word: perhaps the tail of an unencoded secret.
				secrets = append(secrets, pair)
				pair = Mask
			}
		}
		if out.Len() > 0 {
			out.WriteByte('&')
		}
		out.WriteString(pair)
	}
	return out.String(), secrets
}

func keyOf(pair string) string {
	k, _, ok := strings.Cut(pair, "=")
	if !ok {
		return ""
	}
	if i := strings.IndexByte(k, '&'); i >= 0 {
		return ""
	}
	if u, err := url.QueryUnescape(k); err == nil {
		return u
	}
	return k
}

// dsnKeys are libpq's connection keywords (PostgreSQL 17 docs, 32.1.2
// "Parameter Key Words"); after a bare (unquoted) secret value, text up to
// the next of them is treated as part of the secret.
var dsnKeys = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true,
	"passfile": true, "require_auth": true, "channel_binding": true,
	"connect_timeout": true, "client_encoding": true, "options": true,
	"application_name": true, "fallback_application_name": true,
	"keepalives": true, "keepalives_idle": true, "keepalives_interval": true,
	"keepalives_count": true, "tcp_user_timeout": true, "replication": true,
	"gssencmode": true, "sslmode": true, "requiressl": true, "sslcompression": true,
	"sslcert": true, "sslkey": true, "sslcertmode": true, "sslrootcert": true,
	"sslcrl": true, "sslcrldir": true, "sslsni": true, "requirepeer": true,
	"ssl_min_protocol_version": true, "ssl_max_protocol_version": true,
	"krbsrvname": true, "gsslib": true, "gssdelegation": true, "service": true,
	"target_session_attrs": true, "load_balance_hosts": true,
	"pool_max_conns": true, "pool_min_conns": true, "pool_max_conn_lifetime": true,
	"pool_max_conn_idle_time": true, "pool_health_check_period": true,
	"default_query_exec_mode": true, "statement_cache_capacity": true,
	"description_cache_capacity": true, "search_path": true, "timezone": true,
	"temp_buffers": true, "instance": true,
}

// splitDSN masks a libpq key=value string (keys, optional spaces around
// '=', values bare or single-quoted with backslash escapes).
func splitDSN(s string) parts {
	var p parts
	var out []string
	i := 0
	for i < len(s) {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			break
		}
		ks := i
		for i < len(s) && !isSpace(s[i]) && s[i] != '=' {
			i++
		}
		key := s[ks:i]
		j := i
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		if j >= len(s) || s[j] != '=' {
			// A word without '=': unreadable; masked.
			p.secrets = append(p.secrets, key)
			out = append(out, Mask)
			continue
		}
		i = j + 1
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		vs := i
		secret := IsSecretKey(key)
		if i < len(s) && s[i] == '\'' {
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			if i < len(s) {
				i++
			}
			if i > len(s) {
				i = len(s)
			}
		} else if secret {
			i = nextDSNKey(s, i)
		} else {
			for i < len(s) && !isSpace(s[i]) {
				i++
			}
		}
		val := s[vs:i]
		if secret || !dsnKeys[strings.ToLower(key)] && strings.ContainsAny(val, "'\\") {
			p.secrets = append(p.secrets, val)
			val = Mask
		}
		if !dsnKeys[strings.ToLower(key)] && !secret && !hostRE.MatchString(key) {
			p.secrets = append(p.secrets, key)
			key = Mask
		}
		out = append(out, key+"="+val)
	}
	p.shown = strings.Join(out, " ")
	return p
}

// nextDSNKey returns where a bare secret value starting at i ends: before
// the whitespace that precedes the next known "key=", or the end of s.
func nextDSNKey(s string, i int) int {
	for j := i; j < len(s); j++ {
		if !isSpace(s[j]) {
			continue
		}
		k := j
		for k < len(s) && isSpace(s[k]) {
			k++
		}
		e := k
		for e < len(s) && !isSpace(s[e]) && s[e] != '=' {
			e++
		}
		f := e
		for f < len(s) && isSpace(s[f]) {
			f++
		}
		if f < len(s) && s[f] == '=' && dsnKeys[strings.ToLower(s[k:e])] {
			return j
		}
	}
	return len(s)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// unquoteDSN returns a DSN value as libpq reads it: the text inside single
// quotes with backslash escapes removed; a bare value unchanged.
func unquoteDSN(v string) string {
	if len(v) < 2 || v[0] != '\'' {
		return v
	}
	v = strings.TrimSuffix(v[1:], "'")
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// Ambiguous reports whether conn is a URL whose user info a driver's URL
// parser (net/url, which pgx uses) reads differently from the user info
// running to the last '@': a password holding a space or one of
// " # % / < > ? @ [ \ ] ^ ` { | } written without percent-encoding (':' and
// the other printable ASCII characters read the same either way;
// TestAmbiguousCharacters). Such a string would have a driver try
// to resolve part of the password as a host name (pgx reads a raw '@' in
// the password as the end of the user info); callers refuse it with
// the hint of the returned text ("" when not ambiguous).
func Ambiguous(conn string) string {
	c := strings.TrimSpace(conn)
	m := schemeRE.FindStringSubmatch(c)
	if m == nil || !strings.HasPrefix(c[len(m[0]):], "//") {
		return ""
	}
	rest := c[len(m[0])+2:]
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return ""
	}
	info := rest[:at]
	_, pass, _ := strings.Cut(info, ":")
	// exact: u's user info is info, read the same by every parser.
	exact := func(u *url.URL) bool {
		if u == nil || u.User == nil {
			return false
		}
		got, _ := u.User.Password()
		want, derr := url.PathUnescape(pass)
		return derr == nil && got == want && u.User.String() != "" && !strings.ContainsAny(info, "/?#@ ")
	}
	u, err := url.Parse(c)
	if err != nil {
		if _, perr := url.Parse(m[0] + "//x@" + rest[at+1:]); perr != nil {
			// The part after the user info fails on its own (a bad
			// port…): the parser's own error says so, unless the user
			// info is wrong too.
			if ui, uerr := url.Parse(m[0] + "//" + info + "@x"); !strings.ContainsAny(info, " \"#%/<>?@[\\]^`{|}") || (uerr == nil && exact(ui)) {
				return ""
			}
		}
	}
	if err == nil && exact(u) {
		return ""
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 && q < at && strings.ContainsRune(rest[:q], '/') {
		// The last '@' is in the query (…/db?password=p@ss): name the
		// query, not the user info.
		return "the query (after '?') holds a character that must be percent-encoded in a URL " +
			"('@' as %40, '#' as %23, '%' as %25, a space as %20), or use a key=value connection string"
	}
	return "the user info (before the last '@') holds a character that must be percent-encoded in a URL " +
		"(a space or one of \" # % / < > ? @ [ \\ ] ^ ` { | }: write %20 %22 %23 %25 %2F %3C %3E %3F %40 %5B %5C %5D %5E %60 %7B %7C %7D), or use a key=value connection string"
}
