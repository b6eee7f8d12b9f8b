package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
)

func init() { register(newSQLCmd) }

// sqlFlags are the flags of `sluice sql`.
type sqlFlags struct {
	conn   string
	file   string
	format string
	wide   bool
}

func newSQLCmd(e *env) *cobra.Command {
	var f sqlFlags
	c := &cobra.Command{
		Use:   "sql [flags] (-f FILE | STATEMENT)",
		Short: "execute statements (table streams, DDL, DML, SELECT) and print result sets",
		Long: "Execute statements in sluice's dialect — CREATE TABLE STREAM, SHOW TABLE STREAMS,\n" +
			"ALTER TABLE … SET PROPERTIES ('change_tracking' = 'true'), DDL, DML and SELECT — from the\n" +
			"command line or a file, and print each result set. A SELECT of a stream does not consume it.\n" +
			"In a table, a statement without a result set prints one line: ok, or the rows it changed;\n" +
			"cells longer than " + fmt.Sprint(maxCell) + " columns are cut with … (--wide prints them whole).\n" +
			"SHOW TABLE STREAMS adds each stream's pending_changes.",
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdSQL(cmd.Context(), e, f, args)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.conn, "conn", "", "connection `URL`")
	fl.StringVarP(&f.file, "file", "f", "", "read statements from `FILE` (- for standard input)")
	fl.StringVar(&f.format, "format", "table", "result `FORMAT`: table, jsonl or csv")
	fl.BoolVar(&f.wide, "wide", false, "print long cells whole in tables")
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
	if err := checkFormat(f.format, "table", "jsonl", "csv"); err != nil {
		return err
	}
	r := newRunner(e, f.conn)
	defer r.Close()
	var (
		vtext  func(any, cdc.Type) string
		vtDone bool
	)
	return r.ExecScript(ctx, "", name, text, func(st dsl.Statement, rs *runner.ResultSet) error {
		if _, ok := st.(*dsl.ShowStreams); ok && rs != nil {
			warns, err := addPending(ctx, r, rs)
			if err != nil {
				return err
			}
			for _, w := range warns {
				fmt.Fprintf(e.stderr, "sluice sql: %s\n", w)
			}
			if f.format == "table" {
				describeOffsets(rs)
			}
		}
		switch {
		case rs != nil && rs.Columns != nil:
			if !vtDone {
				// The backend ExecScript opened (the runner caches it).
				b, err := r.Backend(runner.WithCreate(ctx, runner.CreateAll), "")
				if err != nil {
					return err
				}
				if vtext, err = valueText(ctx, b); err != nil {
					return err
				}
				vtDone = true
			}
			return printRows(e.stdout, f.format, f.wide, rs.Columns, rs.Rows, vtext)
		case f.format != "table":
			// jsonl and csv carry result sets only.
			return nil
		case rs != nil:
			_, err := fmt.Fprintln(e.stdout, plural(rs.Affected, "row"))
			return err
		default:
			_, err := fmt.Fprintln(e.stdout, "ok")
			return err
		}
	})
}

// addPending appends a pending_changes column to a SHOW TABLE STREAMS
// result: each stream's count from DESCRIBE TABLE STREAM (which reads, and
// does not consume, its pending changes). A stream whose changes cannot be
// read (stale, its table dropped) gets NULL and a warning naming it and
// why, so that one such stream does not hide the others; only a cancelled
// context fails the listing.
func addPending(ctx context.Context, r *runner.Runner, rs *runner.ResultSet) (warnings []string, err error) {
	name := colIndex(rs.Columns, "name")
	if name < 0 {
		return nil, nil
	}
	rs.Columns = append(slices.Clip(rs.Columns), cdc.Column{Name: "pending_changes", Type: cdc.TypeBigInt})
	for i, row := range rs.Rows {
		stream, _ := row[name].(string)
		var n any
		q := "DESCRIBE TABLE STREAM `" + strings.ReplaceAll(stream, "`", "``") + "`"
		err := r.ExecScript(ctx, "", "<show table streams>", q, func(_ dsl.Statement, d *runner.ResultSet) error {
			if c := colIndex(d.Columns, "pending_changes"); c >= 0 && len(d.Rows) == 1 {
				n = d.Rows[0][c]
			}
			return nil
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			warnings = append(warnings, fmt.Sprintf("pending changes of %s: %v", stream, err))
			n = nil
		}
		rs.Rows[i] = append(slices.Clip(row), n)
	}
	return warnings, nil
}

// describeOffsets replaces the raw offsets of a SHOW TABLE STREAMS result
// with offsetText's words ("change 17", "batch 2"), for a table; jsonl and
// csv keep the raw form.
func describeOffsets(rs *runner.ResultSet) {
	c := colIndex(rs.Columns, "offset")
	if c < 0 {
		return
	}
	for _, row := range rs.Rows {
		if raw, ok := row[c].(string); ok {
			row[c] = offsetText(cdc.SingleOffset(raw), time.Time{})
		}
	}
}

// colIndex is the index of the column named name, or -1.
func colIndex(cols []cdc.Column, name string) int {
	return slices.IndexFunc(cols, func(c cdc.Column) bool { return c.Name == name })
}

// plural is "1 row", "3 rows".
func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
