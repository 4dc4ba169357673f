// kafka-txn: the exactly-once consume-transform-produce pipeline through a
// Kafka client (franz-go's GroupTransactSession), against any Kafka broker
// (Baton's Kafka listener or Apache Kafka), with the same code and flags.
//
//  1. seed: creates an input and an output topic (-partitions each) and
//     produces -messages records to the input (-value-size B values; the
//     value starts with the record's unique id, id i goes to partition
//     i % partitions), idempotent, acks=all.
//  2. pipeline: -workers GroupTransactSessions in one consumer group on the
//     input (read_committed, RequireStable offsets). Each transaction polls
//     up to -k records, produces one output record per input record (same
//     partition, same key and value) to the output topic and ends with
//     session.End(TryCommit), which flushes, sends the offsets
//     (AddOffsetsToTxn + TxnOffsetCommit), heartbeats and EndTxn-s. Closed
//     loop by default; -rate R paces the transactions (open loop, R tx/s
//     over all workers, each worker on its own fixed schedule).
//  3. measure: after every worker has committed once and -warmup seconds
//     more, a window of -duration seconds: committed transactions in it,
//     the latency of End (the commit: flush + offsets + heartbeat + EndTxn),
//     poll-to-committed, and each request type's round trip (client hook).
//  4. verify: after the workers are closed, a sentinel record is produced
//     (non-transactionally) into every output partition; a read_committed
//     reader reads the output up to the sentinels and the input up to its end.
//     The records the group committed (input offsets below the group's
//     committed offsets) must each appear in the output exactly once, in
//     the same partition; no other output may exist.
//
// Prints one JSON line on stdout (also appended to -json-out if given);
// progress and client warnings go to stderr. Exit status 0 when the run
// finished and the verification passed, 1 otherwise.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

var (
	brokers     = flag.String("brokers", "127.0.0.1:9092", "seed brokers, comma separated")
	label       = flag.String("label", "", "label in the JSON line (e.g. baton, kafka)")
	runID       = flag.String("run", "", "run id: topics kt-<run>-in / -out, group kt-<run>, transactional ids kt-<run>-w<i> (default: a timestamp)")
	partitions  = flag.Int("partitions", 200, "partitions of the input and of the output topic")
	messages    = flag.Int("messages", 200000, "records seeded into the input topic")
	valueSize   = flag.Int("value-size", 256, "bytes per value (the id is its first 12 bytes)")
	k           = flag.Int("k", 1, "records per transaction (consumed and produced)")
	workers     = flag.Int("workers", 16, "GroupTransactSessions (group members, transactional producers)")
	duration    = flag.Float64("duration", 20, "measured window in seconds; 0 = run until every seeded record is committed")
	warmup      = flag.Float64("warmup", 3, "seconds after every worker's first commit before the window starts")
	rate        = flag.Float64("rate", 0, "open loop: transactions per second over all workers (0 = closed loop)")
	txnTimeout  = flag.Duration("txn-timeout", 40*time.Second, "transaction.timeout.ms")
	maxSeconds  = flag.Float64("max-seconds", 600, "hard bound on the whole program")
	jsonOut     = flag.String("json-out", "", "append the JSON line to this file too")
	logLevel    = flag.String("log", "warn", "franz-go log level on stderr: none, error, warn, info, debug")
	skipSeed    = flag.Bool("no-seed", false, "do not create or seed topics (they exist from an earlier -run)")
	skipVerify  = flag.Bool("no-verify", false, "skip the verification")
	txnV1       = flag.Bool("txn-v1", false, "cap Produce at v11, TxnOffsetCommit and EndTxn at v4, so the client runs transactions v1 (AddPartitionsToTxn, AddOffsetsToTxn) even where the broker offers KIP-890 part 2")
	serverPid   = flag.Int("server-pid", 0, "the broker's pid on this machine: its CPU in the window is reported")
	timelineMs  = flag.Float64("timeline-slow-ms", 0, "diagnosis: with > 0, the JSON gains a timeline of the window in 100 ms steps: commits, commits slower than this, the slowest, and requests slower than half of it by API")
	fillWait    = flag.Duration("fill-wait", time.Millisecond, "with -k > 1: how long a transaction waits for more records when the first poll gave fewer than k")
	topicPrefix = "kt-"
)

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kafka-txn %s: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func kgoLogLevel() kgo.LogLevel {
	switch *logLevel {
	case "none":
		return kgo.LogLevelNone
	case "error":
		return kgo.LogLevelError
	case "info":
		return kgo.LogLevelInfo
	case "debug":
		return kgo.LogLevelDebug
	}
	return kgo.LogLevelWarn
}

func baseOpts(who string) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(*brokers, ",")...),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgoLogLevel(), func() string { return "[" + who + "] " })),
	}
	if *txnV1 {
		v := kversion.Stable()
		v.SetMaxKeyVersion(int16(kmsg.Produce), 11)
		v.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 4)
		v.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
		opts = append(opts, kgo.MaxVersions(v))
	}
	return opts
}

// ---------------------------------------------------------------- samples

type samples struct {
	mu sync.Mutex
	v  []time.Duration
}

func (s *samples) add(d time.Duration) { s.mu.Lock(); s.v = append(s.v, d); s.mu.Unlock() }

type pct struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
}

// Exact percentiles over every sample (nearest rank).
func (s *samples) summary() pct {
	s.mu.Lock()
	v := append([]time.Duration(nil), s.v...)
	s.mu.Unlock()
	if len(v) == 0 {
		return pct{}
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(v)))) - 1
		if i < 0 {
			i = 0
		}
		return ms(v[i])
	}
	var sum time.Duration
	for _, d := range v {
		sum += d
	}
	return pct{N: len(v), Mean: ms(sum / time.Duration(len(v))), P50: at(0.50), P90: at(0.90), P99: at(0.99), P999: at(0.999), Max: ms(v[len(v)-1])}
}

// ---------------------------------------------------------------- admin

func request(ctx context.Context, cl *kgo.Client, req kmsg.Request) (kmsg.Response, error) {
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return cl.Request(c, req)
}

func createTopic(ctx context.Context, cl *kgo.Client, name string, n int) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = name
	t.NumPartitions = int32(n)
	t.ReplicationFactor = 1
	req.Topics = append(req.Topics, t)
	resp, err := request(ctx, cl, req)
	if err != nil {
		return fmt.Errorf("CreateTopics %s: %w", name, err)
	}
	for _, rt := range resp.(*kmsg.CreateTopicsResponse).Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			msg := ""
			if rt.ErrorMessage != nil {
				msg = " (" + *rt.ErrorMessage + ")"
			}
			return fmt.Errorf("CreateTopics %s: %w%s", name, err, msg)
		}
	}
	// Wait until metadata shows every partition with a leader.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		mreq.Topics = append(mreq.Topics, mt)
		if r, err := request(ctx, cl, mreq); err == nil {
			for _, tt := range r.(*kmsg.MetadataResponse).Topics {
				ok := tt.ErrorCode == 0 && len(tt.Partitions) == n
				for _, p := range tt.Partitions {
					if p.ErrorCode != 0 || p.Leader < 0 {
						ok = false
					}
				}
				if ok {
					return nil
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("topic %s: not every partition has a leader after 60 s", name)
}

// listOffsets: the end offset of every partition (read_committed: the last stable offset).
func listOffsets(ctx context.Context, cl *kgo.Client, topic string, n int, committed bool) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	if committed {
		req.IsolationLevel = 1
	}
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	for p := 0; p < n; p++ {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = int32(p)
		rp.Timestamp = -1
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	resps := cl.RequestSharded(ctx, req)
	out := map[int32]int64{}
	for _, sr := range resps {
		if sr.Err != nil {
			return nil, fmt.Errorf("ListOffsets %s: %w", topic, sr.Err)
		}
		for _, rt := range sr.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return nil, fmt.Errorf("ListOffsets %s[%d]: %w", topic, rp.Partition, err)
				}
				out[rp.Partition] = rp.Offset
			}
		}
	}
	if len(out) != n {
		return nil, fmt.Errorf("ListOffsets %s: %d of %d partitions answered", topic, len(out), n)
	}
	return out, nil
}

func groupOffsets(ctx context.Context, cl *kgo.Client, group, topic string, n int) (map[int32]int64, error) {
	for attempt := 0; attempt < 50; attempt++ {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = group
		req.RequireStable = true
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic = topic
		for p := 0; p < n; p++ {
			t.Partitions = append(t.Partitions, int32(p))
		}
		req.Topics = append(req.Topics, t)
		// Sent to the group coordinator by the client.
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := cl.Request(c, req)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("OffsetFetch: %w", err)
		}
		r := resp.(*kmsg.OffsetFetchResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnstableOffsetCommit) {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			return nil, fmt.Errorf("OffsetFetch: %w", err)
		}
		out := map[int32]int64{}
		unstable := false
		for _, rt := range r.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					if errors.Is(err, kerr.UnstableOffsetCommit) {
						unstable = true
						continue
					}
					return nil, fmt.Errorf("OffsetFetch %s[%d]: %w", topic, rp.Partition, err)
				}
				o := rp.Offset
				if o < 0 {
					o = 0
				}
				out[rp.Partition] = o
			}
		}
		if unstable {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for p := 0; p < n; p++ {
			if _, ok := out[int32(p)]; !ok {
				out[int32(p)] = 0
			}
		}
		return out, nil
	}
	return nil, errors.New("OffsetFetch: UNSTABLE_OFFSET_COMMIT for 10 s after every worker closed")
}

// apiVersions: the broker's max version of the APIs the pipeline uses, and its finalized features.
func apiVersions(ctx context.Context, cl *kgo.Client) map[string]any {
	out := map[string]any{}
	resp, err := request(ctx, cl, kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		out["error"] = err.Error()
		return out
	}
	r := resp.(*kmsg.ApiVersionsResponse)
	for _, a := range r.ApiKeys {
		if name, ok := apiNames[a.ApiKey]; ok {
			out[name] = a.MaxVersion
		}
	}
	for _, f := range r.FinalizedFeatures {
		out["feature:"+f.Name] = f.MaxVersionLevel
	}
	return out
}

// ---------------------------------------------------------------- seed

func valueFor(id int) []byte {
	v := make([]byte, *valueSize)
	copy(v, fmt.Sprintf("%012d", id))
	for i := 12; i < len(v); i++ {
		v[i] = 'a' + byte((id+i)%26)
	}
	return v
}

func idOf(v []byte) (int, bool) {
	if len(v) < 12 {
		return 0, false
	}
	id, err := strconv.Atoi(string(v[:12]))
	return id, err == nil
}

func seed(ctx context.Context, in, out string) (float64, error) {
	cl, err := kgo.NewClient(append(baseOpts("seed"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(2*time.Millisecond),
	)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, in, *partitions); err != nil {
		return 0, err
	}
	if err := createTopic(ctx, cl, out, *partitions); err != nil {
		return 0, err
	}
	start := time.Now()
	var failed atomic.Int64
	var firstErr atomic.Value
	for i := 0; i < *messages; i++ {
		r := &kgo.Record{Topic: in, Partition: int32(i % *partitions), Key: []byte(fmt.Sprintf("%012d", i)), Value: valueFor(i)}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	if n := failed.Load(); n > 0 {
		return 0, fmt.Errorf("seeding: %d records failed, first: %v", n, firstErr.Load())
	}
	secs := time.Since(start).Seconds()
	logf("seeded %d records into %s (%d partitions) in %.1f s", *messages, in, *partitions, secs)
	return secs, nil
}

// ---------------------------------------------------------------- pipeline

type runState struct {
	measuring    atomic.Bool
	stop         atomic.Bool
	winCommitted atomic.Int64 // transactions committed inside the window
	winMsgs      atomic.Int64
	winAborted   atomic.Int64
	allCommitted atomic.Int64
	allMsgs      atomic.Int64
	allAborted   atomic.Int64
	late         atomic.Int64 // open loop: transactions begun > 1 ms after due (in window)
	rebased      atomic.Int64 // open loop: a worker > 1 s behind dropped its missed slots (in window)
	emptyPolls   atomic.Int64 // polls that gave nothing (in window)
	firstCommit  []atomic.Bool
	commitLat    samples // End(TryCommit) duration, committed ones, in window
	txnLat       samples // first poll returned -> committed
	dueLat       samples // open loop: due instant -> committed
	errMu        sync.Mutex
	errs         map[string]int
}

func (st *runState) noteErr(s string) {
	st.errMu.Lock()
	defer st.errMu.Unlock()
	if len(st.errs) < 50 {
		st.errs[s]++
	} else if _, ok := st.errs[s]; ok {
		st.errs[s]++
	}
}

// pacer: one worker's open-loop schedule, a transaction due every interval.
// A worker more than a second behind (start-up, a rebalance, a stall) drops
// the slots it missed and starts again from now, so it never bursts to catch
// up; the drops are counted (rebased).
type pacer struct {
	interval time.Duration
	next     time.Time
}

func worker(ctx context.Context, st *runState, i int, sess *kgo.GroupTransactSession, out string, pace *pacer) {
	for !st.stop.Load() && ctx.Err() == nil {
		var dueAt time.Time
		if pace != nil {
			now := time.Now()
			if behind := now.Sub(pace.next); behind > time.Second {
				if st.measuring.Load() {
					st.rebased.Add(1)
				}
				pace.next = now
			}
			dueAt = pace.next
			pace.next = pace.next.Add(pace.interval)
			if d := time.Until(dueAt); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return
				}
				if st.stop.Load() {
					return
				}
			} else if -d > time.Millisecond && st.measuring.Load() {
				st.late.Add(1)
			}
		}
		pc, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := sess.PollRecords(pc, *k)
		cancel()
		if fs.IsClientClosed() {
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				st.noteErr(fmt.Sprintf("poll %s[%d]: %v", t, p, err))
			}
		})
		recs := fs.Records()
		polled := time.Now()
		for len(recs) > 0 && len(recs) < *k {
			fc, cancel := context.WithTimeout(ctx, *fillWait)
			more := sess.PollRecords(fc, *k-len(recs))
			cancel()
			if more.IsClientClosed() {
				break
			}
			r := more.Records()
			if len(r) == 0 {
				break
			}
			recs = append(recs, r...)
		}
		if len(recs) == 0 {
			if st.measuring.Load() {
				st.emptyPolls.Add(1)
			}
			continue
		}
		if err := sess.Begin(); err != nil {
			st.noteErr("Begin: " + err.Error())
			time.Sleep(10 * time.Millisecond)
			continue
		}
		for _, r := range recs {
			o := &kgo.Record{Topic: out, Partition: r.Partition, Key: r.Key, Value: r.Value}
			sess.Produce(ctx, o, func(_ *kgo.Record, err error) {
				if err != nil {
					st.noteErr("produce: " + err.Error())
				}
			})
		}
		inWindow := st.measuring.Load()
		t0 := time.Now()
		ec, cancel2 := context.WithTimeout(context.Background(), 60*time.Second)
		committed, err := sess.End(ec, kgo.TryCommit)
		cancel2()
		done := time.Now()
		if err != nil {
			st.noteErr("End: " + err.Error())
		}
		if committed {
			if !st.firstCommit[i].Load() {
				st.firstCommit[i].Store(true)
			}
			st.allCommitted.Add(1)
			st.allMsgs.Add(int64(len(recs)))
			if inWindow && st.measuring.Load() {
				st.winCommitted.Add(1)
				st.winMsgs.Add(int64(len(recs)))
				st.commitLat.add(done.Sub(t0))
				tl.commit(done.Sub(t0))
				st.txnLat.add(done.Sub(polled))
				if pace != nil {
					st.dueLat.add(done.Sub(dueAt))
				}
			}
		} else {
			st.allAborted.Add(1)
			if inWindow && st.measuring.Load() {
				st.winAborted.Add(1)
			}
			if err == nil {
				st.noteErr("End: not committed (rebalance or failed transaction; aborted and rewound)")
			}
		}
		if *duration == 0 && st.allMsgs.Load() >= int64(*messages) {
			st.stop.Store(true)
		}
	}
}

// ---------------------------------------------------------------- verify

type verifyResult struct {
	Seeded           int     `json:"seeded"`
	InputRead        int     `json:"input_read"`
	InputDupIDs      int     `json:"input_duplicate_ids"`
	CommittedInputs  int     `json:"committed_inputs"`
	Remaining        int     `json:"remaining_inputs"`
	OutputRead       int     `json:"output_read"`
	Exact            int     `json:"exactly_once"`
	Missing          int     `json:"missing"`
	Duplicated       int     `json:"duplicated"`
	Unexpected       int     `json:"unexpected"`
	WrongPartition   int     `json:"wrong_partition"`
	BadValue         int     `json:"bad_value"`
	SentinelsMissing int     `json:"sentinels_missing"`
	OK               bool    `json:"ok"`
	Summary          string  `json:"summary"`
	Error            string  `json:"error,omitempty"`
	Seconds          float64 `json:"seconds"`
}

func main() {
	flag.Parse()
	if *runID == "" {
		*runID = strconv.FormatInt(time.Now().UnixNano()/1e6, 36)
	}
	if *k < 1 || *workers < 1 || *partitions < 1 || *valueSize < 12 {
		fmt.Fprintln(os.Stderr, "kafka-txn: -k, -workers, -partitions must be >= 1, -value-size >= 12")
		os.Exit(2)
	}
	ctx, cancelAll := context.WithTimeout(context.Background(), time.Duration(*maxSeconds*float64(time.Second)))
	defer cancelAll()
	in, out, group := topicPrefix+*runID+"-in", topicPrefix+*runID+"-out", topicPrefix+*runID

	result := map[string]any{
		"label": *label, "brokers": *brokers, "run": *runID, "k": *k, "workers": *workers,
		"partitions": *partitions, "messages": *messages, "value_size": *valueSize,
		"duration_s": *duration, "warmup_s": *warmup, "rate_target": *rate,
		"client": "franz-go v1.22.3 GroupTransactSession", "txn_v1_forced": *txnV1,
		"gomaxprocs": runtime.GOMAXPROCS(0),
	}
	exit := 0
	emit := func() {
		b, _ := json.Marshal(result)
		fmt.Println(string(b))
		if *jsonOut != "" {
			if f, err := os.OpenFile(*jsonOut, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				f.Write(append(b, '\n'))
				f.Close()
			}
		}
		os.Exit(exit)
	}

	{
		cl, err := kgo.NewClient(baseOpts("versions")...)
		if err == nil {
			result["broker_api_max_versions"] = apiVersions(ctx, cl)
			cl.Close()
		}
	}

	if !*skipSeed {
		secs, err := seed(ctx, in, out)
		if err != nil {
			result["error"] = "seed: " + err.Error()
			exit = 1
			emit()
		}
		result["seed_s"] = math.Round(secs*100) / 100
	}

	st := &runState{errs: map[string]int{}, firstCommit: make([]atomic.Bool, *workers)}
	hook := &reqHook{on: &st.measuring, lat: map[int16]*samples{}}
	var assigned atomic.Int64
	sessions := make([]*kgo.GroupTransactSession, *workers)
	for i := range sessions {
		s, err := kgo.NewGroupTransactSession(append(baseOpts(fmt.Sprintf("w%d", i)),
			kgo.TransactionalID(fmt.Sprintf("%s-w%d", group, i)),
			kgo.TransactionTimeout(*txnTimeout),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(in),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.ProducerLinger(0),
			kgo.WithHooks(hook),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				assigned.Add(int64(len(m[in])))
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				assigned.Add(-int64(len(m[in])))
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				assigned.Add(-int64(len(m[in])))
			}),
		)...)
		if err != nil {
			result["error"] = fmt.Sprintf("NewGroupTransactSession w%d: %v", i, err)
			exit = 1
			emit()
		}
		sessions[i] = s
	}

	var wg sync.WaitGroup
	startAll := time.Now()
	for i, s := range sessions {
		var d *pacer
		if *rate > 0 {
			interval := time.Duration(float64(*workers) / *rate * float64(time.Second))
			// Stagger the workers' schedules over one interval.
			d = &pacer{interval: interval, next: startAll.Add(time.Duration(i) * interval / time.Duration(*workers))}
		}
		wg.Add(1)
		go func(i int, s *kgo.GroupTransactSession, d *pacer) {
			defer wg.Done()
			worker(ctx, st, i, s, out, d)
		}(i, s, d)
	}

	// Start of the window: every worker committed once, then the warm-up.
	readyBy := time.Now().Add(120 * time.Second)
	for time.Now().Before(readyBy) && ctx.Err() == nil && !st.stop.Load() {
		all := true
		for i := range st.firstCommit {
			if !st.firstCommit[i].Load() {
				all = false
				break
			}
		}
		if all {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	result["startup_s"] = math.Round(time.Since(startAll).Seconds()*100) / 100
	notReady := 0
	for i := range st.firstCommit {
		if !st.firstCommit[i].Load() {
			notReady++
		}
	}
	if notReady > 0 {
		result["warning"] = fmt.Sprintf("%d workers had not committed once 120 s after start (no partitions, or failing)", notReady)
	}
	time.Sleep(time.Duration(*warmup * float64(time.Second)))
	result["assigned_at_window_start"] = assigned.Load()
	cpu0 := sampleCPU()
	winStart := time.Now()
	tl.start.Store(winStart.UnixNano())
	st.measuring.Store(true)
	if *duration > 0 {
		select {
		case <-time.After(time.Duration(*duration * float64(time.Second))):
		case <-ctx.Done():
		}
		st.measuring.Store(false)
		st.stop.Store(true)
	} else {
		for !st.stop.Load() && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		st.measuring.Store(false)
	}
	window := time.Since(winStart).Seconds()
	tl.start.Store(0)
	cpu1 := sampleCPU()
	logf("window closed after %.1f s; stopping workers", window)
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(90 * time.Second):
		result["error"] = "workers did not stop within 90 s of the window's end"
		exit = 1
	}
	var cwg sync.WaitGroup
	for _, s := range sessions {
		cwg.Add(1)
		go func(s *kgo.GroupTransactSession) { defer cwg.Done(); s.Close() }(s)
	}
	cwg.Wait()

	wc := st.winCommitted.Load()
	result["window_s"] = math.Round(window*1000) / 1000
	result["committed_txns"] = wc
	result["committed_msgs"] = st.winMsgs.Load()
	result["aborted_txns"] = st.winAborted.Load()
	result["tx_per_s"] = math.Round(float64(wc)/window*10) / 10
	result["window_cpu"] = cpuSummary(cpu0, cpu1, window, wc)
	result["msg_per_s"] = math.Round(float64(st.winMsgs.Load())/window*10) / 10
	if wc > 0 {
		result["msgs_per_txn"] = math.Round(float64(st.winMsgs.Load())/float64(wc)*100) / 100
	}
	result["total_committed_txns"] = st.allCommitted.Load()
	result["total_committed_msgs"] = st.allMsgs.Load()
	result["total_aborted_txns"] = st.allAborted.Load()
	result["empty_polls"] = st.emptyPolls.Load()
	result["commit"] = st.commitLat.summary()
	if *timelineMs > 0 {
		result["timeline"] = tl.summary()
		result["window_start_unix_ms"] = winStart.UnixMilli()
	}
	result["poll_to_commit"] = st.txnLat.summary()
	if *rate > 0 {
		result["due_to_commit"] = st.dueLat.summary()
		result["late_starts"] = st.late.Load()
		result["rebased"] = st.rebased.Load()
	}
	reqs := map[string]pct{}
	for key, s := range hook.lat {
		reqs[apiNames[key]] = s.summary()
	}
	result["requests"] = reqs
	st.errMu.Lock()
	if len(st.errs) > 0 {
		result["errors_whole_run"] = st.errs
	}
	st.errMu.Unlock()
	if *duration > 0 && st.emptyPolls.Load() > int64(*workers)*2 && st.allMsgs.Load() >= int64(*messages) {
		result["warning"] = "the input ran out during the window: the rate is understated; seed more (-messages)"
	}
	logf("%d committed transactions in %.1f s (%.0f tx/s), commit p50 %.2f ms p99 %.2f ms",
		wc, window, float64(wc)/window, st.commitLat.summary().P50, st.commitLat.summary().P99)

	if !*skipVerify {
		v := verify(ctx, in, out, group)
		result["verify"] = v
		logf("%s", v.Summary)
		if !v.OK {
			exit = 1
		}
	}
	emit()
}

// ---------------------------------------------------------------- cpu

type cpuSample struct {
	self, server    float64 // seconds of user+system time
	busy, total     float64 // machine: busy and all jiffies
	serverOK, sysOK bool
}

var clkTck = 100.0 // USER_HZ; Linux reports /proc times in it (100 on every usual build)
