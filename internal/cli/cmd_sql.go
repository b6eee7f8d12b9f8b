package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sinks/stdout"
)

func init() {
	register(verb{name: "sql", usage: "[--conn URL] (-f FILE | STATEMENT)", short: "execute statements (table streams, DDL, DML, SELECT) and print result sets", run: cmdSQL})
}

func cmdSQL(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "sql")
	conn := fs.String("conn", "", "connection URL")
	file := fs.String("f", "", "read statements from `FILE` (- for standard input)")
	format := fs.String("format", "table", "result format: table or jsonl")
	rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	var name, text string
	switch {
	case *file != "" && len(rest) > 0:
		return fmt.Errorf("%w: give -f FILE or a statement, not both", errUsage)
	case *file == "-":
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			return err
		}
		name, text = "<stdin>", string(b)
	case *file != "":
		b, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		name, text = *file, string(b)
	case len(rest) > 0:
		name, text = "<command line>", strings.Join(rest, " ")
	default:
		return fmt.Errorf("%w: give -f FILE or a statement", errUsage)
	}
	if *format != "table" && *format != "jsonl" {
		return fmt.Errorf("%w: --format is table or jsonl", errUsage)
	}
	r := newRunner(e, *conn)
	defer r.Close()
	return r.ExecScript(ctx, "", name, text, func(_ dsl.Statement, rs *runner.ResultSet) error {
		switch {
		case rs == nil:
			return nil
		case *format == "jsonl":
			return stdout.JSONL(e.stdout, rs.Columns, rs.Rows)
		default:
			return stdout.Table(e.stdout, rs.Columns, rs.Rows)
		}
	})
}
