// Command tablestore measures sluice consuming a Tablestore table's Stream
// (from the wire-level fake server, internal/otsfake, through the real SDK)
// into a SQLite merge sink, side by side with the seed's raw SDK loop that
// reads the same records and discards them (the ceiling), and prints
// records per second, peak RSS and the ratio.
//
//	go run ./bench/tablestore                          # 1,000,000 records over 200,000 keys, 4 shards, 3 rounds
//	go run ./bench/tablestore -quick                   # 300,000 records over 60,000 keys (about a minute on a quiet machine)
//	go run ./bench/tablestore -records 100000 -keys 20000 -rounds 5 -cpuprofile sluice.prof
//
// The raw loop and sluice alternate over -rounds rounds; the table shows
// medians (fastest–slowest) and the load average, every round checks the
// SQLite target against the fake's final table (each key's every column,
// and a hash of all columns of all rows), and a last line for a collector
// program reads SUMMARY<TAB>path<TAB>ratio median<TAB>min<TAB>max<TAB>baseline<TAB>sluice's
// peak RSS MB (the consume phase's high-water mark with -fake-apart, the
// default; the ratio is sluice's records/s over the raw loop's in the same
// round).
//
// The records are written with BatchWriteRow, 200 rows per call: a PutRow
// for each key first, then a deterministic random mix of PutRow (replacing
// the row, sometimes with fewer columns), UpdateRow (some columns set, some
// deleted; also on deleted keys, which recreates the row) and DeleteRow.
// Attribute columns: customer STRING, qty INTEGER, price STRING (read as
// DECIMAL(10,2)), paid BOOLEAN; primary key id INTEGER.
//
// A fake server lives in memory, so each contender runs in its own child
// process (this program re-executed) that builds its own fake server with
// the same data and then times only the consume phase:
//
//	fake    builds the data and exits: the RSS of the fake (plus the writer) alone
//	raw     ListStream → DescribeStream → GetShardIterator → GetStreamRecord
//	        (Limit 1000, as sluice's page size) over every shard until
//	        NextShardIterator is nil or the shard is caught up, records discarded
//	sluice  Runner.RunJob of `source: {stream: orders, columns: …}` with a
//	        tablestore+http connection into `sink: {table: orders_copy, mode:
//	        merge, keys: [id], connection: sqlite:DIR/copy.db}`; afterwards
//	        (untimed) every key's row in SQLite is compared with GetRow on the
//	        fake, so the run is checked for correctness, not only speed
//
// Peak RSS is reported twice: "peak RSS" is the child's getrusage maxrss
// (whole life: fake, build and consume); "consume peak" is the high-water
// mark of the consume phase alone (VmHWM after resetting it through
// /proc/self/clear_refs once the fake is built and the heap collected), next
// to "base", the RSS at the start of the consume phase (mostly the fake).
//
// In process, the fake's live heap also sets the Go GC's target (GOGC=100:
// about twice the live heap), so a contender's peak grows by about the
// fake's heap whatever the contender itself allocates, and subtracting the
// fake's RSS does not isolate the contender. With -fake-apart each
// contender's fake server runs in a grandchild process (built and served
// there, reached over loopback as before): "base" and "consume peak" are
// then the contender's own. (The "peak RSS" column, from wait4, is then the
// larger of the child and its fake server's process.)
package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"

	"github.com/sluicedata/sluice/bench/internal/machine"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/otsfake"
	"github.com/sluicedata/sluice/runner"
	_ "github.com/sluicedata/sluice/sources/sqlite"
	_ "github.com/sluicedata/sluice/sources/tablestore"
)

const table = "orders"

// endpoint is where a fake server answers, in this process or another.
type endpoint struct {
	URL, Instance, ID, Secret string
}

func endpointOf(srv *otsfake.Server) endpoint {
	return endpoint{srv.URL(), srv.Instance(), srv.AccessKeyID(), srv.AccessKeySecret()}
}

var (
	records = flag.Int("records", 1_000_000, "stream records to consume")
	keys    = flag.Int("keys", 200_000, "distinct primary keys")
	shards  = flag.Int("shards", 4, "shards of the table's stream")
	batch   = flag.Int("batch", runner.DefaultBatchSize, "batch size of the sluice run")
	apart   = flag.Bool("fake-apart", true, "serve each contender's fake server from a separate process (a grandchild), so the contender's RSS is its own; false: in the contender's process")
	rounds  = flag.Int("rounds", 3, "rounds; each runs the raw loop and sluice in turn, the table shows medians")
	quick   = flag.Bool("quick", false, "300,000 records over 60,000 keys (about a minute)")
	cpuprof = flag.String("cpuprofile", "", "write the CPU profile of the sluice run of the last round to this file")
	mode    = flag.String("mode", "", "internal: run one child (fake, raw, sluice, serve)")
	dir     = flag.String("dir", "", "internal: scratch directory of the sluice child")
)

type result struct {
	BuildSeconds float64 `json:"build_seconds"`
	Seconds      float64 `json:"seconds"`
	Records      int64   `json:"records"`
	BaseKB       int64   `json:"base_kb"`    // VmRSS at the start of the consume phase
	ConsumeKB    int64   `json:"consume_kb"` // VmHWM of the consume phase (0 if unknown)
	Verified     int     `json:"verified"`   // keys compared (sluice)
	Present      int     `json:"present"`    // rows present in the fake's final state
	Hash         string  `json:"hash"`       // of all columns of every row, equal on both sides (sluice)
	Note         string  `json:"note,omitempty"`
}

func main() {
	flag.Parse()
	if *mode != "" {
		r, err := childMain(context.Background(), *mode)
		if err != nil {
			fmt.Fprintln(os.Stderr, *mode+":", err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	if err := parent(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func parent() error {
	if *quick {
		*records, *keys = 300_000, 60_000
	}
	d, err := os.MkdirTemp("", "sluice-bench-ots-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(d)
	fmt.Printf("%d records over %d keys, %d shards, BatchWriteRow 200 rows per call; each child builds its own fake server\n",
		*records, *keys, *shards)
	fmt.Printf("load average at start: %s\n", machine.LoadAvg())
	fake, fakeRSS, err := child("fake", d, "")
	if err != nil {
		return fmt.Errorf("fake: %w", err)
	}
	fmt.Printf("fake built in %.1fs\n", fake.BuildSeconds)
	type runs struct {
		res []result
		rss []int64
	}
	got := map[string]*runs{"raw": {}, "sluice": {}}
	n := max(*rounds, 1)
	for round := range n {
		for _, m := range []string{"raw", "sluice"} {
			prof := ""
			if m == "sluice" && round == n-1 {
				prof = *cpuprof
			}
			res, rss, err := child(m, d, prof)
			if err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
			got[m].res = append(got[m].res, res)
			got[m].rss = append(got[m].rss, rss)
		}
	}
	names := map[string]string{
		"raw":    "seed's raw SDK loop (records discarded)",
		"sluice": fmt.Sprintf("sluice run → SQLite merge (batch %d)", *batch),
	}
	fmt.Println()
	fmt.Printf("medians of %d rounds (raw and sluice in turn); range: fastest and slowest round\n", n)
	fmt.Printf("%-42s %9s %13s %11s %10s %10s %10s %8s\n", "contender", "seconds", "range", "records/s", "peak RSS", "base", "consume pk", "ratio")
	fmt.Printf("%-42s %9s %13s %11s %8dMB %10s %10s %8s\n", "fake server alone (build only)", "-", "-", "-", fakeRSS/1024, "-", "-", "-")
	rate := func(r result) float64 { return float64(r.Records) / r.Seconds }
	var ratios []float64
	for i := range n {
		ratios = append(ratios, rate(got["sluice"].res[i])/rate(got["raw"].res[i]))
	}
	rawMed, _, _ := median(secondsOf(got["raw"].res))
	for _, m := range []string{"raw", "sluice"} {
		r := got[m]
		med, lo, hi := median(secondsOf(r.res))
		rss, base, consume := slices.Max(r.rss), int64(0), int64(0)
		for _, x := range r.res {
			base, consume = max(base, x.BaseKB), max(consume, x.ConsumeKB)
		}
		fmt.Printf("%-42s %9.2f %13s %11.0f %8dMB %8dMB %8dMB %7.2fx\n", names[m], med, fmt.Sprintf("%.2f–%.2f", lo, hi),
			float64(*records)/med, rss/1024, base/1024, consume/1024, rawMed/med)
	}
	rm, rl, rh := median(ratios)
	fmt.Printf("\nsluice/raw ratio: %.3f (rounds %.3f–%.3f)\n", rm, rl, rh)
	s := got["sluice"].res[n-1]
	fmt.Printf("correctness, every round: SQLite orders_copy equals the fake's final table in every column (GetRow on all %d keys; %d rows present; hash of all columns %s)\n", s.Verified, s.Present, s.Hash)
	if *apart {
		fmt.Println("fake servers in separate processes: base and consume pk are the contenders' own; peak RSS is max(contender, its fake's process)")
	} else {
		fmt.Println("fake servers in process: base ≈ the fake; consume pk includes the fake and the GC headroom its heap causes")
	}
	if s.Note != "" {
		fmt.Printf("sluice: %s\n", s.Note)
	}
	fmt.Printf("load average at end: %s\n", machine.LoadAvg())
	// The contender's own peak: with the fake apart, the consume phase's
	// high-water mark (the wait4 maxrss is the larger of the contender and
	// its fake's process).
	var own int64
	for i, x := range got["sluice"].res {
		if *apart && x.ConsumeKB > 0 {
			own = max(own, x.ConsumeKB)
		} else {
			own = max(own, got["sluice"].rss[i])
		}
	}
	fmt.Printf("SUMMARY\tTablestore → SQLite merge, %d records\t%.3f\t%.3f\t%.3f\traw SDK loop\t%d\n", *records, rm, rl, rh, own/1024)
	return nil
}

func secondsOf(rs []result) []float64 {
	var out []float64
	for _, r := range rs {
		out = append(out, r.Seconds)
	}
	return out
}

// median returns the median, minimum and maximum of xs.
func median(xs []float64) (med, lo, hi float64) {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n := len(xs)
	return (xs[(n-1)/2] + xs[n/2]) / 2, xs[0], xs[n-1]
}

// loadAvg returns /proc/loadavg's three load averages ("?" if unknown).

// child runs one mode in a child process and returns its result and peak
// RSS (getrusage maxrss, KiB).
func child(m, d, prof string) (result, int64, error) {
	cmd := exec.Command(os.Args[0], "-mode", m, "-dir", d, "-fake-apart="+strconv.FormatBool(*apart), "-records", fmt.Sprint(*records),
		"-keys", fmt.Sprint(*keys), "-shards", fmt.Sprint(*shards), "-batch", fmt.Sprint(*batch), "-cpuprofile", prof)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, 0, err
	}
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		return result{}, 0, fmt.Errorf("child output %q: %w", out, err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return r, ru.Maxrss, nil
}

func childMain(ctx context.Context, m string) (result, error) {
	t0 := time.Now()
	var ep endpoint
	if m == "fake" || m == "serve" || !*apart {
		srv := otsfake.New(otsfake.WithShards(*shards))
		defer srv.Close()
		ep = endpointOf(srv)
		if err := build(ep); err != nil {
			return result{}, fmt.Errorf("build: %w", err)
		}
	} else {
		// The fake server in a grandchild: it builds the data, prints its
		// endpoint and serves until its standard input closes.
		cmd := exec.Command(os.Args[0], "-mode", "serve", "-records", fmt.Sprint(*records),
			"-keys", fmt.Sprint(*keys), "-shards", fmt.Sprint(*shards))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return result{}, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return result{}, err
		}
		if err := cmd.Start(); err != nil {
			return result{}, err
		}
		defer func() { in.Close(); cmd.Wait() }()
		if err := json.NewDecoder(out).Decode(&ep); err != nil {
			return result{}, fmt.Errorf("fake server process: %w", err)
		}
	}
	res := result{BuildSeconds: time.Since(t0).Seconds()}
	switch m {
	case "fake":
		return res, nil
	case "serve":
		if err := json.NewEncoder(os.Stdout).Encode(ep); err != nil {
			return result{}, err
		}
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	// Start the consume phase from a collected heap and a reset high-water
	// mark, so that its peak is its own.
	runtime.GC()
	debug.FreeOSMemory()
	resetHWM := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	res.BaseKB = procStatus("VmRSS")
	t1 := time.Now()
	var err error
	switch m {
	case "raw":
		res.Records, err = rawLoop(ep)
	case "sluice":
		if *cpuprof != "" {
			f, perr := os.Create(*cpuprof)
			if perr != nil {
				return result{}, perr
			}
			defer f.Close()
			if perr := pprof.StartCPUProfile(f); perr != nil {
				return result{}, perr
			}
		}
		res.Records, err = sluiceRun(ctx, ep)
		pprof.StopCPUProfile()
	default:
		err = fmt.Errorf("unknown mode %q", m)
	}
	if err != nil {
		return result{}, err
	}
	res.Seconds = time.Since(t1).Seconds()
	if resetHWM {
		res.ConsumeKB = procStatus("VmHWM")
	}
	if res.Records != int64(*records) {
		return result{}, fmt.Errorf("read %d records, want %d", res.Records, *records)
	}
	if m == "sluice" {
		res.Verified, res.Present, res.Hash, err = verify(ctx, ep)
		if err != nil {
			return result{}, fmt.Errorf("verify: %w", err)
		}
	}
	return res, nil
}

// procStatus returns a "kB" field of /proc/self/status (0 if unknown).
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

func sdkClient(ep endpoint) *tablestore.TableStoreClient {
	return tablestore.NewClientWithConfig(ep.URL, ep.Instance, ep.ID, ep.Secret, "",
		tablestore.NewDefaultTableStoreConfig())
}

func pk(id int64) *tablestore.PrimaryKey {
	p := &tablestore.PrimaryKey{}
	p.AddPrimaryKeyColumn("id", id)
	return p
}

// build creates the table with its Stream and writes the records: the
// same ones in every child (seeded generator).
func build(ep endpoint) error {
	c := sdkClient(ep)
	meta := &tablestore.TableMeta{TableName: table}
	meta.AddPrimaryKeyColumn("id", tablestore.PrimaryKeyType_INTEGER)
	if _, err := c.CreateTable(&tablestore.CreateTableRequest{TableMeta: meta,
		TableOption:        &tablestore.TableOption{TimeToAlive: -1, MaxVersion: 1},
		ReservedThroughput: &tablestore.ReservedThroughput{},
		StreamSpec:         &tablestore.StreamSpecification{EnableStream: true, ExpirationTime: 24}}); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(5, 1))
	present := make([]bool, *keys)
	inBatch := map[int]bool{}
	n := 0
	for n < *records {
		req := &tablestore.BatchWriteRowRequest{}
		clear(inBatch)
		for i := 0; i < 200 && n < *records; i++ {
			// One change per key per batch, as the service requires.
			k := n
			if n >= *keys {
				for k = rng.IntN(*keys); inBatch[k]; k = rng.IntN(*keys) {
				}
			}
			inBatch[k] = true
			id := int64(k)
			p := rng.IntN(100)
			switch {
			case !present[k] && p < 80, present[k] && p < 20:
				// PutRow: full row, or (1 in 8) without price and paid,
				// which a PutRow makes NULL.
				ch := &tablestore.PutRowChange{TableName: table, PrimaryKey: pk(id)}
				ch.AddColumn("customer", "customer-"+strconv.Itoa(rng.IntN(50_000)))
				ch.AddColumn("qty", int64(rng.IntN(1000)))
				if rng.IntN(8) != 0 {
					ch.AddColumn("price", price(rng))
					ch.AddColumn("paid", rng.IntN(2) == 0)
				}
				ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
				req.AddRowChange(ch)
				present[k] = true
			case p < 75:
				// UpdateRow: a partial row; on a deleted key (20%) it
				// recreates the row with only these columns.
				ch := &tablestore.UpdateRowChange{TableName: table, PrimaryKey: pk(id)}
				touched := 0
				for touched == 0 {
					if rng.IntN(2) == 0 {
						ch.PutColumn("qty", int64(rng.IntN(1000)))
						touched++
					}
					if rng.IntN(2) == 0 {
						ch.PutColumn("price", price(rng))
						touched++
					}
					if rng.IntN(3) == 0 {
						ch.PutColumn("paid", rng.IntN(2) == 0)
						touched++
					}
					switch rng.IntN(10) {
					case 0:
						ch.DeleteColumn("customer")
						touched++
					case 1:
						ch.PutColumn("customer", "renamed-"+strconv.Itoa(rng.IntN(50_000)))
						touched++
					}
				}
				ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
				req.AddRowChange(ch)
				present[k] = true
			default:
				ch := &tablestore.DeleteRowChange{TableName: table, PrimaryKey: pk(id)}
				ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
				req.AddRowChange(ch)
				present[k] = false
			}
			n++
		}
		resp, err := c.BatchWriteRow(req)
		if err != nil {
			return err
		}
		for _, rs := range resp.TableToRowsResult {
			for _, r := range rs {
				if !r.IsSucceed {
					return fmt.Errorf("BatchWriteRow row %d: %s %s", r.Index, r.Error.Code, r.Error.Message)
				}
			}
		}
	}
	return nil
}

func price(rng *rand.Rand) string {
	return fmt.Sprintf("%d.%02d", rng.IntN(100_000), rng.IntN(100))
}

// rawLoop is the seed's loop over every shard, records discarded.
func rawLoop(ep endpoint) (int64, error) {
	c := sdkClient(ep)
	name := table
	ls, err := c.ListStream(&tablestore.ListStreamRequest{TableName: &name})
	if err != nil {
		return 0, err
	}
	if len(ls.Streams) == 0 {
		return 0, errors.New("no stream")
	}
	sid := ls.Streams[0].Id
	desc, err := c.DescribeStream(&tablestore.DescribeStreamRequest{StreamId: sid})
	if err != nil {
		return 0, err
	}
	if len(desc.Shards) != *shards {
		return 0, fmt.Errorf("%d shards, want %d", len(desc.Shards), *shards)
	}
	var got int64
	limit := int32(1000)
	for _, sh := range desc.Shards {
		it, err := c.GetShardIterator(&tablestore.GetShardIteratorRequest{StreamId: sid, ShardId: sh.SelfShard})
		if err != nil {
			return 0, err
		}
		iter := it.ShardIterator
		for iter != nil {
			resp, err := c.GetStreamRecord(&tablestore.GetStreamRecordRequest{ShardIterator: iter, Limit: &limit})
			if err != nil {
				return 0, err
			}
			got += int64(len(resp.Records)) // discarded
			if len(resp.Records) == 0 {
				break // caught up (open shard)
			}
			iter = resp.NextShardIterator
		}
	}
	return got, nil
}

func sluiceRun(ctx context.Context, ep endpoint) (int64, error) {
	os.Setenv("TABLESTORE_ACCESS_KEY_ID", ep.ID)
	os.Setenv("TABLESTORE_ACCESS_KEY_SECRET", ep.Secret)
	conn := "tablestore+http://" + strings.TrimPrefix(ep.URL, "http://") + "?instance=" + ep.Instance
	db := filepath.Join(*dir, "copy.db")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(db + suffix)
	}
	job, err := dsl.ParseJob("bench.yaml", []byte(`
name: bench_tablestore
source:
  stream: orders
  columns:
    customer: STRING
    qty: BIGINT
    price: DECIMAL(10,2)
    paid: BOOLEAN
sink: {table: orders_copy, mode: merge, keys: [id], connection: 'sqlite:`+db+`'}
`))
	if err != nil {
		return 0, err
	}
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("SLUICE_LOG") == "debug" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	r := &runner.Runner{Log: log, Conn: conn, BatchSize: *batch}
	defer r.Close()
	res, err := r.RunJob(ctx, job)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, v := range res.Stats.Read {
		n += v
	}
	return n, nil
}

// cells is one row as compared: nil for a missing column.
type cells struct {
	customer *string
	qty      *int64
	cents    *int64
	paid     *bool
}

func (c cells) String() string {
	f := func(p any) string {
		switch v := p.(type) {
		case *string:
			if v != nil {
				return strconv.Quote(*v)
			}
		case *int64:
			if v != nil {
				return strconv.FormatInt(*v, 10)
			}
		case *bool:
			if v != nil {
				return strconv.FormatBool(*v)
			}
		}
		return "NULL"
	}
	return fmt.Sprintf("{customer %s, qty %s, price(cents) %s, paid %s}", f(c.customer), f(c.qty), f(c.cents), f(c.paid))
}

func (c cells) equal(o cells) bool { return c.String() == o.String() }

func centsOf(s string) (int64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	return int64(math.Round(f * 100)), nil
}

// verify compares every key's row in the SQLite target with GetRow on the
// fake. It returns the keys compared and the rows present.
func verify(ctx context.Context, ep endpoint) (int, int, string, error) {
	d, err := sql.Open("sqlite", filepath.Join(*dir, "copy.db"))
	if err != nil {
		return 0, 0, "", err
	}
	defer d.Close()
	got := map[int64]cells{}
	rows, err := d.QueryContext(ctx, `SELECT id, customer, qty, CAST(price AS TEXT), paid FROM orders_copy`)
	if err != nil {
		return 0, 0, "", err
	}
	for rows.Next() {
		var id int64
		var cust, pr sql.NullString
		var qty sql.NullInt64
		var paid sql.NullBool
		if err := rows.Scan(&id, &cust, &qty, &pr, &paid); err != nil {
			rows.Close()
			return 0, 0, "", err
		}
		var c cells
		if cust.Valid {
			c.customer = &cust.String
		}
		if qty.Valid {
			c.qty = &qty.Int64
		}
		if pr.Valid {
			v, err := centsOf(pr.String)
			if err != nil {
				rows.Close()
				return 0, 0, "", fmt.Errorf("id %d: price %q: %w", id, pr.String, err)
			}
			c.cents = &v
		}
		if paid.Valid {
			c.paid = &paid.Bool
		}
		got[id] = c
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, "", err
	}

	c := sdkClient(ep)
	type mismatch struct {
		id   int64
		want string
		got  string
	}
	var (
		mu       sync.Mutex
		bad      []mismatch
		present  int
		fakeRows = map[int64]cells{}
		firstE   error
		wg       sync.WaitGroup
		next     = make(chan int64, 1024)
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range next {
				resp, err := c.GetRow(&tablestore.GetRowRequest{SingleRowQueryCriteria: &tablestore.SingleRowQueryCriteria{
					TableName: table, PrimaryKey: pk(id), MaxVersion: 1}})
				var want cells
				exists := false
				if err == nil && resp.PrimaryKey.PrimaryKeys != nil {
					exists = true
					for _, col := range resp.Columns {
						switch col.ColumnName {
						case "customer":
							v := col.Value.(string)
							want.customer = &v
						case "qty":
							v := col.Value.(int64)
							want.qty = &v
						case "price":
							v, perr := centsOf(col.Value.(string))
							if perr != nil {
								err = fmt.Errorf("price %q: %w", col.Value, perr)
								break
							}
							want.cents = &v
						case "paid":
							v := col.Value.(bool)
							want.paid = &v
						}
					}
				}
				mu.Lock()
				if err != nil {
					if firstE == nil {
						firstE = fmt.Errorf("GetRow %d: %w", id, err)
					}
					mu.Unlock()
					continue
				}
				g, ok := got[id]
				switch {
				case exists:
					present++
					fakeRows[id] = want
					if !ok {
						bad = append(bad, mismatch{id, want.String(), "(missing)"})
					} else if !g.equal(want) {
						bad = append(bad, mismatch{id, want.String(), g.String()})
					}
				case ok:
					bad = append(bad, mismatch{id, "(absent)", g.String()})
				}
				mu.Unlock()
			}
		}()
	}
	for id := range int64(*keys) {
		next <- id
	}
	close(next)
	wg.Wait()
	if firstE != nil {
		return 0, 0, "", firstE
	}
	for id := range got {
		if id < 0 || id >= int64(*keys) {
			bad = append(bad, mismatch{id, "(out of range)", got[id].String()})
		}
	}
	if len(bad) > 0 {
		msg := fmt.Sprintf("%d of %d keys differ; first ones:", len(bad), *keys)
		for _, m := range bad[:min(5, len(bad))] {
			msg += fmt.Sprintf("\n  id %d: fake %s, sqlite %s", m.id, m.want, m.got)
		}
		return 0, 0, "", errors.New(msg)
	}
	// Both tables as one hash of all columns of every row, in key order:
	// equal hashes say the tables are equal in every column's content.
	hg, hf := tableHash(got), tableHash(fakeRows)
	if hg != hf {
		return 0, 0, "", fmt.Errorf("hash of all columns: SQLite %s, fake %s", hg, hf)
	}
	return *keys, present, hg, nil
}

// tableHash is the SHA-256 of the rows (id and every column, NULL apart
// from any value) in id order, as hex.
func tableHash(rows map[int64]cells) string {
	ids := slices.Sorted(maps.Keys(rows))
	h := sha256.New()
	for _, id := range ids {
		fmt.Fprintf(h, "%d\t%s\n", id, rows[id])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
