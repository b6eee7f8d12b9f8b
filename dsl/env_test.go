package dsl

import (
	"errors"
	"testing"
)

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"PG_URL": "postgres://u:p@h/db", "EMPTY": "", "A_1": "x"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		in, want, err string
		is            error
	}{
		{in: "${PG_URL}", want: "postgres://u:p@h/db"},
		{in: "sqlite:${A_1}.db", want: "sqlite:x.db"},
		{in: "${MISSING:-sqlite:d.db}", want: "sqlite:d.db"},
		{in: "${EMPTY:-dflt}", want: "dflt"},
		{in: "${EMPTY}", want: ""},
		{in: "pa$$word$", want: "pa$word$"},
		{in: "$PG_URL and pa$s", want: "$PG_URL and pa$s"},
		{in: "$${PG_URL}", want: "${PG_URL}"},
		{in: "${NOPE}", err: "missing environment variable NOPE (set it, or write ${NOPE:-default})", is: ErrMissingEnv},
		{in: "${NOPE}${NADA}", err: "missing environment variable: NOPE, NADA (2 variables)", is: ErrMissingEnv},
		{in: "${PG_URL", err: "bad value: unterminated ${ at byte 0", is: ErrBadValue},
		{in: "${1X}", err: "bad value: bad variable reference ${1X}: a name is letters, digits and '_', not starting with a digit", is: ErrBadValue},
		{in: "${}", err: "bad value: bad variable reference ${}: a name is letters, digits and '_', not starting with a digit", is: ErrBadValue},
	}
	for _, tt := range tests {
		got, err := ExpandEnv(tt.in, lookup)
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err || !errors.Is(err, tt.is) {
				t.Errorf("ExpandEnv(%q) error %v, want %s", tt.in, err, tt.err)
			}
		case err != nil:
			t.Errorf("ExpandEnv(%q): %v", tt.in, err)
		case got != tt.want:
			t.Errorf("ExpandEnv(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
