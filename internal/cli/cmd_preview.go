package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sinks/stdout"
)

func init() {
	register(verb{name: "preview", usage: "[--conn URL] [--limit N] STREAM", short: "show a stream's pending changes with metadata columns, without consuming them", run: cmdPreview})
}

func cmdPreview(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "preview")
	conn := fs.String("conn", "", "connection URL")
	limit := fs.Int("limit", 100, "show at most N changes")
	format := fs.String("format", "table", "table or jsonl")
	rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("%w: name one stream", errUsage)
	}
	r := newRunner(e, *conn)
	defer r.Close()
	b, err := r.Backend(ctx, "")
	if err != nil {
		return err
	}
	src, ok := b.(runner.Source)
	if !ok {
		return fmt.Errorf("%w: %s", runner.ErrNotSource, b.Scheme())
	}
	info, err := src.Stream(ctx, plan.Source{Stream: unquoteName(rest[0])})
	if err != nil {
		return err
	}
	rd, err := src.Changes(ctx, info, info.Offset, runner.ReadOptions{BatchSize: *limit + 1})
	if err != nil {
		return err
	}
	defer rd.Close()
	schema := cdc.StreamSchema(info.TableSchema)
	var rows [][]any
	more := false
	for len(rows) <= *limit {
		batch, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		for _, ch := range batch {
			if len(rows) == *limit {
				more = true
				break
			}
			row := append([]any{ch.Op.String(), ch.CommitVersion, ch.CommitTime}, ch.Row...)
			rows = append(rows, row)
		}
		if more {
			break
		}
	}
	if *format == "jsonl" {
		return stdout.JSONL(e.stdout, schema.Columns, rows)
	}
	if err := stdout.Table(e.stdout, schema.Columns, rows); err != nil {
		return err
	}
	if more {
		fmt.Fprintf(e.stdout, "(first %d pending changes shown; more are pending)\n", *limit)
	} else {
		fmt.Fprintf(e.stdout, "(%d pending changes; offset %s; nothing consumed)\n", len(rows), info.Offset)
	}
	return nil
}

// unquoteName takes a stream name as written on the command line: bare
// (orders_stream) or backquoted as in sluice's dialect (`group`, with “
// for a backquote inside).
func unquoteName(s string) string {
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' {
		return strings.ReplaceAll(s[1:len(s)-1], "``", "`")
	}
	return s
}
