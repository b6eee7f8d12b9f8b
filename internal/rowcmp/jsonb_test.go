package rowcmp_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/internal/rowcmp"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestJSONBText: JSONBText gives each document the text PostgreSQL itself
// gives it as jsonb (the expected values are the server's own
// $1::jsonb::text), whatever the spacing, key order, duplicate keys,
// escapes and number forms; text that is not one JSON document is not
// taken.
func TestJSONBText(t *testing.T) {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, s := range []string{
		`{"a":1,"n":null}`, `{"a": 1, "n": null}`, ` { "b" : [1.50, null, true, false] , "a":"x" } `,
		`{"bb":1,"a":2,"ccc":{"z":[],"y":{}}}`, `{"a":1,"a":2}`, `[]`, `{}`, `[[1,2],[3,[4]]]`,
		`"caf\u00e9 \"q\" \\ \/ \n\t\r\b\f \u0001 ✓"`, `"plain"`, `null`, `true`, `0`, `-0`, `-0.0`,
		`1e2`, `1E+2`, `1.5e-3`, `-12.3400`, `1.0e1`, `12345678901234567890123456789.000000001`, `2.5E-10`, `100e-2`,
		`{"é":1,"e":2,"ee":3}`, `{"k": "\u2028\u2029<>&"}`,
	} {
		var want string
		if err := c.QueryRow(ctx, `SELECT $1::jsonb::text`, s).Scan(&want); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		got, ok := rowcmp.JSONBText(s)
		if !ok || got != want {
			t.Errorf("JSONBText(%s) = %q, %v; PostgreSQL's jsonb text %q", s, got, ok, want)
		}
	}
	for _, s := range []string{``, `{`, `{"a":1} x`, `[1,]`, `nan`} {
		if got, ok := rowcmp.JSONBText(s); ok {
			t.Errorf("JSONBText(%q) = %q, ok; want not JSON", s, got)
		}
	}
}
