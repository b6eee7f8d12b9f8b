package redact

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// passwords returns one password per printable ASCII character and per
// URL-reserved character (RFC 3986 gen-delims and sub-delims, '%', space,
// quotes), each between two markers that appear nowhere else, plus one
// holding all of them.
func passwords() []string {
	var out []string
	all := ""
	for c := byte(' '); c <= '~'; c++ {
		out = append(out, "Zq7"+string(c)+"Wv9")
		all += string(c)
	}
	out = append(out, "Zq7"+all+"Wv9", "Zq7@@##//Wv9", "Zq7%zzWv9", "Zq7%41Wv9")
	return out
}

// leaks reports whether s shows any part of the password p: either marker.
func leaks(s string) bool { return strings.Contains(s, "Zq7") || strings.Contains(s, "Wv9") }

// forms returns connection strings carrying pw in every place a secret can
// be written: raw and percent-encoded URL user info, URL query parameters,
// quoted and bare DSN values.
func forms(pw string) map[string]string {
	q := strings.ReplaceAll(strings.ReplaceAll(pw, `\`, `\\`), `'`, `\'`)
	return map[string]string{
		"url raw":        "postgres://app:" + pw + "@db.example.com:5432/orders?sslmode=disable",
		"url encoded":    "postgres://app:" + url.PathEscape(pw) + "@db.example.com:5432/orders?sslmode=disable",
		"url userinfo":   "postgres://app:" + url.QueryEscape(pw) + "@db.example.com/orders",
		"query password": "postgres://db.example.com/orders?sslmode=disable&password=" + pw + "&application_name=x",
		"query encoded":  "postgres://db.example.com/orders?sslmode=disable&password=" + url.QueryEscape(pw),
		"tablestore":     "tablestore+http://127.0.0.1:8080?instance=i&access_key_secret=" + pw + "&access_key_id=" + pw,
		"dsn quoted":     "host=db.example.com user=app password='" + q + "' dbname=orders sslmode=disable",
		"dsn bare":       "host=db.example.com password=" + pw + " dbname=orders",
		"dsn spaced":     "host=db.example.com password = '" + q + "'",
		"opaque":         "postgres:app:" + pw + "@db.example.com",
		"token param":    "postgres://db.example.com/orders?auth_token=" + url.QueryEscape(pw),
	}
}

func TestConnNeverShowsSecret(t *testing.T) {
	for _, pw := range passwords() {
		for name, conn := range forms(pw) {
			got := Conn(conn)
			if leaks(got) {
				t.Errorf("%s %q: Conn = %q shows the password", name, pw, got)
			}
			err := Error(fmt.Errorf("parse %q: %s %s", conn, conn, url.PathEscape(pw)), conn)
			if leaks(err.Error()) {
				t.Errorf("%s %q: Error = %q shows the password", name, pw, err)
			}
		}
	}
}

func TestConnKeepsTheRest(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://app:S3cret#PW@host/db", "postgres://xxxxx"}, // ambiguous: scheme only
		{"postgres://app:S3cret%23PW@host/db", "postgres://app:xxxxx@host/db"},
		{"postgres://app:pa/ss@host:5433/db?sslmode=disable", "postgres://xxxxx"},
		{"postgres://app:pa@ss@host:5433/db?sslmode=disable", "postgres://app:xxxxx@host:5433/db?sslmode=disable"},
		{"postgres://host/db?sslmode=disable&password=p&application_name=a", "postgres://host/db?sslmode=disable&password=xxxxx&application_name=a"},
		{"postgres://host/db?sslmode=disable&password=p&x&application_name=a", "postgres://host/db?sslmode=disable&password=xxxxx&application_name=a"},
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"},
		{"host=h user=u password='a b\\'c' dbname=d", "host=h user=u password=xxxxx dbname=d"},
		{"host=h password=a b c dbname=d sslmode=require", "host=h password=xxxxx dbname=d sslmode=require"},
		{"sqlite:orders.db", "sqlite:orders.db"},
		{"sqlite:///var/lib/a@b.db", "sqlite:///var/lib/a@b.db"},
		{"tablestore+http://127.0.0.1:8080?instance=i&access_key_secret=s&access_key_id=k", "tablestore+http://127.0.0.1:8080?instance=i&access_key_secret=xxxxx&access_key_id=xxxxx"},
		{"postgres://host:5432/db#frag", "postgres://host:5432/db#xxxxx"},
		{"postgres://host/d b?x=1", "postgres://host"},
		{"postgres://ho st/db", "postgres://xxxxx"},
		{"just words", "(unreadable connection string)"},
		{"", ""},
	}
	for _, c := range cases {
		if got := Conn(c.in); got != c.want {
			t.Errorf("Conn(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestErrorKeepsChain(t *testing.T) {
	base := errors.New("boom postgres://u:Zq7Wv9@h/db")
	err := Error(base, "postgres://u:Zq7Wv9@h/db")
	if !errors.Is(err, base) || leaks(err.Error()) {
		t.Fatalf("Error = %v (Is %v)", err, errors.Is(err, base))
	}
	if Error(nil, "x") != nil {
		t.Fatal("Error(nil) != nil")
	}
}

func TestAmbiguous(t *testing.T) {
	for _, c := range []struct {
		in  string
		amb bool
	}{
		{"postgres://app:plain@host/db", false},
		{"postgres://app:a%23b@host/db", false},
		{"postgres://app:a@b@host/db", true},
		{"postgres://app:a#b@host/db", true},
		{"postgres://app:12/x@host/db", true},
		{"postgres://app:a b@host/db", true},
		{"postgres://app:a%zz@host/db", true},
		{"postgres://host/db", false},
		{"postgres://app:plain@host:54x2/db", false}, // a bad port is the parser's error to tell, not the user info's
		{"postgres://app:a#b@host:54x2/db", true},
		{"postgres://app:a%40b@host:port/db", false}, // encoded user info, a bad port: the port's error (fresh-user trial)
		{"postgres://app:a%40b@[::1:5432/db", false}, // encoded user info, a bad IPv6 host
		{"postgres://app:a%zz@host:port/db", true},   // a bad escape in the user info and a bad port: the user info first
		{"postgres://app:a@b@host:port/db", true},
		{"host=h password=x", false},
	} {
		if got := Ambiguous(c.in) != ""; got != c.amb {
			t.Errorf("Ambiguous(%q) = %v, want %v", c.in, got, c.amb)
		}
	}
}

// FuzzConn: whatever the password, as long as it cannot be read as the
// end of the user info plus a host ("@host" followed by a path), no
// rendering shows either marker around it.
func FuzzConn(f *testing.F) {
	for _, pw := range passwords() {
		f.Add(pw[3 : len(pw)-3])
	}
	f.Fuzz(func(t *testing.T, mid string) {
		if strings.ContainsAny(mid, "\x00\n") {
			return
		}
		pw := "Zq7" + mid + "Wv9"
		for name, conn := range forms(pw) {
			if strings.HasPrefix(name, "query") || name == "tablestore" || name == "token param" || strings.HasPrefix(name, "dsn") {
				// A value holding "&key=" or a quote is another parameter
				// by the syntax itself; those forms are checked with the
				// fixed passwords.
				continue
			}
			if got := Conn(conn); leaks(got) {
				t.Fatalf("%s: Conn(%q) = %q", name, conn, got)
			}
		}
	})
}

// TestAmbiguousCharacters: the characters Ambiguous refuses in a URL
// password are exactly the ones its hint lists, and every other printable
// character is read by net/url (pgx's parser) as written — ':' included.
// TestAmbiguousQuery: a URL whose only '@' is in its query (an
// unencoded password= parameter) is refused naming the query, not the
// user info (second fresh-user trial).
func TestAmbiguousQuery(t *testing.T) {
	hint := Ambiguous("postgres://app@h:5432/db?password=p@ss:w/rd")
	if !strings.Contains(hint, "the query (after '?')") || !strings.Contains(hint, "%40") {
		t.Errorf("hint %q does not name the query and %%40", hint)
	}
	for _, in := range []string{"postgres://app:p@ss@h/db?sslmode=disable", "postgres://app:pa?ss@h/db"} {
		if hint := Ambiguous(in); !strings.Contains(hint, "the user info") {
			t.Errorf("Ambiguous(%q) = %q, want the user info named", in, hint)
		}
	}
}

func TestAmbiguousCharacters(t *testing.T) {
	hint := Ambiguous("postgres://u:a#b@h/db")
	lo, hi := strings.Index(hint, "(a space or one of "), strings.Index(hint, ": write")
	if lo < 0 || hi < lo {
		t.Fatalf("hint lists no characters: %s", hint)
	}
	listed := map[byte]bool{' ': true}
	for _, f := range strings.Fields(hint[lo+len("(a space or one of ") : hi]) {
		listed[f[0]] = true
	}
	for c := byte(' '); c <= '~'; c++ {
		conn := "postgres://u:a" + string(c) + "b@h/db"
		refused := Ambiguous(conn) != ""
		if refused != listed[c] {
			t.Errorf("%q: refused %v, listed in the hint %v", c, refused, listed[c])
		}
		if refused {
			continue
		}
		u, err := url.Parse(conn)
		if err != nil {
			t.Errorf("%q: accepted, but net/url fails: %v", c, err)
			continue
		}
		if pw, _ := u.User.Password(); pw != "a"+string(c)+"b" || u.Host != "h" {
			t.Errorf("%q: accepted, but net/url reads password %q host %q", c, pw, u.Host)
		}
	}
}
