package redact

import "testing"

func TestSQL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"UPDATE t SET v = 'secret' WHERE id = 42", "UPDATE t SET v = ? WHERE id = ?"},
		{"INSERT INTO \"order\" (\"user\", pw) VALUES ('a''b', E'x\\'y', 3.5e-3, $1)", "INSERT INTO \"order\" (\"user\", pw) VALUES (?, ?, ?, $1)"},
		{"SELECT $$dollar 'quoted'$$, $tag$x$y$tag$ FROM t1", "SELECT ?, ? FROM t1"},
		{"SELECT 1 -- password=hunter2\nFROM t /* token abc */ WHERE c=.5", "SELECT ? FROM t WHERE c=?"},
		{"  select\n\tnow()  ", "select now()"},
		{"SELECT e'\\\\' || 'tail'", "SELECT ? || ?"},
		{"SELECT col2, 'unterminated", "SELECT col2, ?"},
		{"ALTER TABLE t2 ADD COLUMN c3 int", "ALTER TABLE t2 ADD COLUMN c3 int"},
	}
	for _, c := range cases {
		if got := SQL(c.in); got != c.want {
			t.Errorf("SQL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	long := "SELECT " + string(make([]byte, 0))
	for range 100 {
		long += "abc, "
	}
	if got := SQL(long); len([]rune(got)) != SQLMaxLen+1 || got[len(got)-len("…"):] != "…" {
		t.Errorf("long statement: %d runes, want %d ending in …", len([]rune(got)), SQLMaxLen+1)
	}
}
