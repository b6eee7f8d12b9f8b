package dsl

import (
	"fmt"
	"strings"
)

// ExpandEnv replaces ${VAR} in s with lookup(VAR), and ${VAR:-default} with
// the default when VAR is unset or empty. "$$" stands for a single "$"; any
// other "$" is kept as written (so a password such as "pa$s" needs no
// escaping). lookup is usually os.LookupEnv; package dsl never reads the
// environment itself.
//
// Every unset variable without a default is named in one error wrapping
// ErrMissingEnv; a malformed reference ("${", "${}", "${1X}") is an error
// wrapping ErrBadValue. The error never contains a variable's value.
func ExpandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	var missing []string
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '{':
		default:
			b.WriteByte(c)
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", fmt.Errorf("%w: unterminated ${ at byte %d", ErrBadValue, i)
		}
		ref := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validEnvName(name) {
			return "", fmt.Errorf("%w: bad variable reference ${%s}: a name is letters, digits and '_', not starting with a digit", ErrBadValue, ref)
		}
		v, ok := lookup(name)
		switch {
		case hasDef && (!ok || v == ""):
			v = def
		case !ok:
			missing = append(missing, name)
		}
		b.WriteString(v)
		i += 2 + end
	}
	switch len(missing) {
	case 0:
		return b.String(), nil
	case 1:
		return "", fmt.Errorf("%w %s (set it, or write ${%s:-default})", ErrMissingEnv, missing[0], missing[0])
	}
	return "", fmt.Errorf("%w: %s (%d variables)", ErrMissingEnv, strings.Join(missing, ", "), len(missing))
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
