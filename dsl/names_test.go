package dsl

import (
	"fmt"
	"testing"
)

func ExampleUnquoteName() {
	for _, s := range []string{"orders_stream", " `group` ", "`a``b`", "`group"} {
		n, err := UnquoteName(s)
		fmt.Printf("%q %v\n", n, err)
	}
	// Output:
	// "orders_stream" <nil>
	// "group" <nil>
	// "a`b" <nil>
	// "" name `group: a backquoted name is `name` (write `` for a backquote inside)
}

func TestUnquoteNameRefuses(t *testing.T) {
	for _, s := range []string{"`", "``", "`a`b`", "`a`b"} {
		if n, err := UnquoteName(s); err == nil {
			t.Errorf("UnquoteName(%q) = %q, want an error", s, n)
		}
	}
}
