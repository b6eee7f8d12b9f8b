package cli

import (
	"context"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sinks/stdout"
)

func init() { register(newSQLCmd) }

// sqlFlags are the flags of `sluice sql`.
type sqlFlags struct {
	conn   string
	file   string
	format string
}

func newSQLCmd(e *env) *cobra.Command {
	var f sqlFlags
	c := &cobra.Command{
		Use:   "sql [flags] (-f FILE | STATEMENT)",
		Short: "execute statements (table streams, DDL, DML, SELECT) and print result sets",
		Long: "Execute statements in sluice's dialect — CREATE TABLE STREAM, SHOW TABLE STREAMS,\n" +
			"ALTER TABLE … SET PROPERTIES ('change_tracking' = 'true'), DDL, DML and SELECT — from the\n" +
			"command line or a file, and print each result set. A SELECT of a stream does not consume it.",
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdSQL(cmd.Context(), e, f, args)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.conn, "conn", "", "connection `URL`")
	fl.StringVarP(&f.file, "file", "f", "", "read statements from `FILE` (- for standard input)")
	fl.StringVar(&f.format, "format", "table", "result `FORMAT`: table or jsonl")
	_ = c.MarkFlagFilename("file", "sql")
	return c
}

func cmdSQL(ctx context.Context, e *env, f sqlFlags, rest []string) error {
	var name, text string
	switch {
	case f.file != "" && len(rest) > 0:
		return usageErr("give -f FILE or a statement, not both")
	case f.file == "-":
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			return err
		}
		name, text = "<stdin>", string(b)
	case f.file != "":
		b, err := os.ReadFile(f.file)
		if err != nil {
			return err
		}
		name, text = f.file, string(b)
	case len(rest) > 0:
		name, text = "<command line>", strings.Join(rest, " ")
	default:
		return usageErr("give -f FILE or a statement")
	}
	if f.format != "table" && f.format != "jsonl" {
		return usageErr("--format is table or jsonl")
	}
	r := newRunner(e, f.conn)
	defer r.Close()
	return r.ExecScript(ctx, "", name, text, func(_ dsl.Statement, rs *runner.ResultSet) error {
		switch {
		case rs == nil:
			return nil
		case f.format == "jsonl":
			return stdout.JSONL(e.stdout, rs.Columns, rs.Rows)
		default:
			return stdout.Table(e.stdout, rs.Columns, rs.Rows)
		}
	})
}
