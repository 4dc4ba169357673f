// kafka-endtxn-probe measures how long one EndTxn over partitions that were never written
// holds other requests back (D82). A transactional id adds N fresh partitions with
// AddPartitionsToTxn v3 (transactions v1: no data is produced into them), then commits;
// meanwhile a second client produces one record every 10 ms to a partition that already
// exists and records each round trip. Printed as one JSON line: the EndTxn's own time and
// code, and the probe's longest and p99 round trip from the EndTxn's start to its answer.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func must(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap address")
	parts := flag.Int("partitions", 1000, "fresh partitions in the transaction")
	warm := flag.Duration("warm", 0, "wait this long after creating the topics (the spare pool fills)")
	flag.Parse()
	ctx := context.Background()
	v := kversion.Stable()
	v.SetMaxKeyVersion(24, 3) // AddPartitionsToTxn: the client form (v4+ is broker to broker)
	cl, err := kgo.NewClient(kgo.SeedBrokers(*brokers), kgo.MaxVersions(v))
	must(err, "client")
	defer cl.Close()
	probe, err := kgo.NewClient(kgo.SeedBrokers(*brokers), kgo.DefaultProduceTopic("endtxn-probe"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	must(err, "probe client")
	defer probe.Close()

	ct := kmsg.NewPtrCreateTopicsRequest()
	for _, t := range []struct {
		name string
		n    int32
	}{{"endtxn-wide", int32(*parts)}, {"endtxn-probe", 1}} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.name, t.n, 1
		ct.Topics = append(ct.Topics, rt)
	}
	ctr, err := ct.RequestWith(ctx, cl)
	must(err, "create topics")
	for _, t := range ctr.Topics {
		if t.ErrorCode != 0 {
			must(fmt.Errorf("code %d", t.ErrorCode), "create "+t.Topic)
		}
	}
	must(probe.ProduceSync(ctx, &kgo.Record{Value: []byte("first")}).FirstErr(), "first probe record")
	time.Sleep(*warm)

	ip := kmsg.NewPtrInitProducerIDRequest()
	tid := "endtxn-probe-tx"
	ip.TransactionalID, ip.TransactionTimeoutMillis, ip.ProducerID, ip.ProducerEpoch = &tid, 60000, -1, -1
	ipr, err := ip.RequestWith(ctx, cl)
	must(err, "init producer id")
	if ipr.ErrorCode != 0 {
		must(fmt.Errorf("code %d", ipr.ErrorCode), "init producer id")
	}
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = tid, ipr.ProducerID, ipr.ProducerEpoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic = "endtxn-wide"
	for p := 0; p < *parts; p++ {
		at.Partitions = append(at.Partitions, int32(p))
	}
	ap.Topics = []kmsg.AddPartitionsToTxnRequestTopic{at}
	apr, err := ap.RequestWith(ctx, cl)
	must(err, "add partitions")
	for _, t := range apr.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				must(fmt.Errorf("partition %d code %d", p.Partition, p.ErrorCode), "add partitions")
			}
		}
	}

	var mu sync.Mutex
	type sample struct {
		start time.Time
		took  time.Duration
	}
	var samples []sample
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 10000; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			t0 := time.Now()
			err := probe.ProduceSync(ctx, &kgo.Record{Value: []byte("probe")}).FirstErr()
			must(err, "probe produce")
			mu.Lock()
			samples = append(samples, sample{t0, time.Since(t0)})
			mu.Unlock()
		}
	}()
	time.Sleep(300 * time.Millisecond)
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = tid, ipr.ProducerID, ipr.ProducerEpoch, true
	t0 := time.Now()
	etr, err := et.RequestWith(ctx, cl)
	took := time.Since(t0)
	must(err, "end txn")
	time.Sleep(300 * time.Millisecond)
	close(stop)
	<-done

	var in []float64
	for _, s := range samples {
		// A probe round trip that overlapped the EndTxn.
		if s.start.Add(s.took).After(t0) && s.start.Before(t0.Add(took)) {
			in = append(in, float64(s.took.Microseconds())/1000)
		}
	}
	sort.Float64s(in)
	pick := func(q float64) float64 {
		if len(in) == 0 {
			return 0
		}
		return in[int(q*float64(len(in)-1))]
	}
	out := map[string]any{
		"partitions": *parts, "endtxn_ms": float64(took.Microseconds()) / 1000, "endtxn_code": etr.ErrorCode,
		"probes_during": len(in), "probe_max_ms": pick(1), "probe_p99_ms": pick(0.99), "probe_p50_ms": pick(0.5),
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
