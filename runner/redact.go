package runner

import (
	"net/url"
	"regexp"
	"strings"
)

var dsnPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('[^']*'|\S+)`)

// Redact returns a connection string with its password (URL user info or a
// key=value DSN's password=) replaced by "xxxxx", for plans, logs and
// errors.
func Redact(conn string) string {
	if u, err := url.Parse(conn); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return strings.Replace(u.String(), "xxxxx", "xxxxx", 1)
		}
	}
	if u, err := url.Parse(conn); err == nil && u.RawQuery != "" {
		q := u.Query()
		changed := false
		for k := range q {
			if strings.EqualFold(k, "password") || strings.EqualFold(k, "secret") {
				q.Set(k, "xxxxx")
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
			conn = u.String()
		}
	}
	return dsnPassword.ReplaceAllString(conn, "${1}xxxxx")
}
