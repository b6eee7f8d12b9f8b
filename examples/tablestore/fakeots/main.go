// Command fakeots serves the wire-level fake Tablestore (internal/otsfake)
// on a local port for the examples/tablestore walkthrough. It is test
// support, not part of sluice: sluice connects to it like to any Tablestore
// endpoint (tablestore+http://HOST:PORT?instance=NAME).
//
//	go run ./examples/tablestore/fakeots -addr 127.0.0.1:8123
//
// It creates the table "orders" (primary key id INTEGER) with its Stream
// enabled over -shards shards, writes a first round of changes, prints the
// environment variables to export, and serves until interrupted. Each line
// read from standard input (press Enter) writes another round of changes;
// the second round also splits a shard, so the next sluice run reads a
// parent shard to its end and then its children.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"

	"github.com/sluicedata/sluice/internal/otsfake"
)

const table = "orders"

func main() {
	addr := flag.String("addr", "127.0.0.1:8123", "listen address")
	shards := flag.Int("shards", 2, "shards of the table's stream")
	rows := flag.Int("rows", 10, "rows written by the first round")
	flag.Parse()
	if err := run(*addr, *shards, *rows); err != nil {
		log.Fatal(err)
	}
}

func run(addr string, shards, rows int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	srv := otsfake.NewUnstarted(otsfake.WithShards(shards))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Print(err)
		}
	}()
	endpoint := "http://" + ln.Addr().String()
	w := &writer{c: tablestore.NewClientWithConfig(endpoint, srv.Instance(), srv.AccessKeyID(), srv.AccessKeySecret(), "", nil),
		srv: srv, rows: rows, deleted: map[int64]bool{}}
	if err := w.createTable(); err != nil {
		return err
	}
	if err := w.round(1); err != nil {
		return err
	}

	fmt.Printf(`fake Tablestore serving %s (instance %q); table %q has a Stream with %d shards and round 1 of changes.

Export these, then run the job (see examples/tablestore/README.md):

  export TABLESTORE_URL='tablestore+http://%s?instance=%s'
  export TABLESTORE_ACCESS_KEY_ID='%s'
  export TABLESTORE_ACCESS_KEY_SECRET='%s'

Press Enter to write another round of changes; Ctrl-C to stop.
`, endpoint, srv.Instance(), table, shards, ln.Addr(), srv.Instance(), srv.AccessKeyID(), srv.AccessKeySecret())

	lines := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- struct{}{}
		}
	}()
	for n := 2; ; n++ {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return hs.Shutdown(sctx)
		case <-lines:
			if err := w.round(n); err != nil {
				log.Print(err)
			}
		}
	}
}

type writer struct {
	c       *tablestore.TableStoreClient
	srv     *otsfake.Server
	rows    int
	deleted map[int64]bool
}

func (w *writer) createTable() error {
	meta := &tablestore.TableMeta{TableName: table}
	meta.AddPrimaryKeyColumn("id", tablestore.PrimaryKeyType_INTEGER)
	_, err := w.c.CreateTable(&tablestore.CreateTableRequest{
		TableMeta:          meta,
		TableOption:        &tablestore.TableOption{TimeToAlive: -1, MaxVersion: 1},
		ReservedThroughput: &tablestore.ReservedThroughput{},
		StreamSpec:         &tablestore.StreamSpecification{EnableStream: true, ExpirationTime: 24},
	})
	return err
}

func pk(id int64) *tablestore.PrimaryKey {
	p := &tablestore.PrimaryKey{}
	p.AddPrimaryKeyColumn("id", id)
	return p
}

// round writes one round of changes. Round 1 puts rows 1..rows, updates
// two of them (one partially, removing a column) and deletes one; later
// rounds update every row's quantity, replace one row, add one row and
// delete one. Round 2 splits the first open shard first.
func (w *writer) round(n int) error {
	req := &tablestore.BatchWriteRowRequest{}
	if n == 1 {
		for i := 1; i <= w.rows; i++ {
			ch := &tablestore.PutRowChange{TableName: table, PrimaryKey: pk(int64(i))}
			ch.AddColumn("customer", fmt.Sprintf("customer-%d", i))
			ch.AddColumn("qty", int64(i))
			ch.AddColumn("price", fmt.Sprintf("%d.99", 10*i))
			ch.AddColumn("paid", false)
			ch.AddColumn("note", "not declared by the job: ignored")
			ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
			req.AddRowChange(ch)
		}
		if _, err := w.c.BatchWriteRow(req); err != nil {
			return err
		}
		if err := w.update(2, map[string]any{"paid": true}); err != nil {
			return err
		}
		if err := w.update(3, map[string]any{"qty": int64(30)}, "customer"); err != nil {
			return err
		}
		fmt.Printf("round 1: put rows 1..%d; update row 2 (paid) and row 3 (qty; customer removed); delete row 4\n", w.rows)
		return w.delete(4)
	}
	if n == 2 {
		infos, err := w.srv.Shards(table)
		if err != nil {
			return err
		}
		for _, sh := range infos {
			if !sh.Closed {
				l, r, err := w.srv.SplitShard(table, sh.ID)
				if err != nil {
					return err
				}
				fmt.Printf("round 2: split %s into %s and %s\n", sh.ID, l, r)
				break
			}
		}
	}
	for i := 1; i <= w.rows; i++ {
		if w.deleted[int64(i)] {
			continue
		}
		ch := &tablestore.UpdateRowChange{TableName: table, PrimaryKey: pk(int64(i))}
		ch.PutColumn("qty", int64(i*n))
		ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
		req.AddRowChange(ch)
	}
	if _, err := w.c.BatchWriteRow(req); err != nil {
		return err
	}
	put := &tablestore.PutRowChange{TableName: table, PrimaryKey: pk(1)}
	put.AddColumn("customer", fmt.Sprintf("replaced in round %d", n))
	put.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	if _, err := w.c.PutRow(&tablestore.PutRowRequest{PutRowChange: put}); err != nil {
		return err
	}
	id := int64(w.rows + n - 1)
	if err := w.update(id, map[string]any{"customer": fmt.Sprintf("new in round %d", n), "price": "5.00"}); err != nil {
		return err
	}
	gone := int64(5 + n)
	fmt.Printf("round %d: qty updated on every row; row 1 replaced by a PutRow; row %d added; row %d deleted\n", n, id, gone)
	return w.delete(gone)
}

func (w *writer) update(id int64, puts map[string]any, dels ...string) error {
	ch := &tablestore.UpdateRowChange{TableName: table, PrimaryKey: pk(id)}
	for _, k := range []string{"customer", "qty", "price", "paid"} {
		if v, ok := puts[k]; ok {
			ch.PutColumn(k, v)
		}
	}
	for _, k := range dels {
		ch.DeleteColumn(k)
	}
	ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	_, err := w.c.UpdateRow(&tablestore.UpdateRowRequest{UpdateRowChange: ch})
	return err
}

func (w *writer) delete(id int64) error {
	w.deleted[id] = true
	ch := &tablestore.DeleteRowChange{TableName: table, PrimaryKey: pk(id)}
	ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	_, err := w.c.DeleteRow(&tablestore.DeleteRowRequest{DeleteRowChange: ch})
	return err
}
