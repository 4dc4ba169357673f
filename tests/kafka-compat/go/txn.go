package main

// The transaction scenarios: txn_commit, txn_abort, txn_fence, txn_ctp. The
// caller creates TOPIC with txnPartitions partitions (txn_fence: one), and
// for txn_ctp also TOPIC-out with txnPartitions; each scenario checks what it
// wrote with read_committed and read_uncommitted readers of its own, and the
// caller reads the topics again with librdkafka.
// tests/kafka-compat/test_transactions_clients.py describes the contract.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const txnPartitions = 3

// txnDeadline is tighter than deadline: a scenario makes up to five waits in
// a row, and a broker that gets transactions wrong should fail the test file
// in minutes, not hang it.
const txnDeadline = 30 * time.Second

func txnClient(e env, txid string, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(e.bootstrap), logTo(), kgo.ClientID(txid),
		kgo.TransactionalID(txid),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequestTimeoutOverhead(txnDeadline / 2),
		kgo.RecordDeliveryTimeout(txnDeadline),
	}, extra...)
	return kgo.NewClient(opts...)
}

// spread is what a topic holds per partition when value i went to partition
// i % partitions.
func spread(vals []string, partitions int) map[int32][]string {
	out := map[int32][]string{}
	for p := range partitions {
		out[int32(p)] = []string{}
	}
	for i, v := range vals {
		out[int32(i%partitions)] = append(out[int32(i%partitions)], v)
	}
	return out
}

// produceAll produces value i to partition i % partitions of topic (inside
// the client's open transaction, if it has one) and waits for every
// acknowledgement.
func produceAll(ctx context.Context, cl *kgo.Client, topic string, vals []string, partitions int) error {
	recs := make([]*kgo.Record, len(vals))
	for i, v := range vals {
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(v)}
	}
	pctx, cancel := context.WithTimeout(ctx, txnDeadline)
	defer cancel()
	if err := cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		return failf("produce: %v", err)
	}
	return nil
}

// endTxn ends the client's transaction, bounded by txnDeadline.
func endTxn(ctx context.Context, cl *kgo.Client, commit kgo.TransactionEndTry) error {
	ectx, cancel := context.WithTimeout(ctx, txnDeadline)
	defer cancel()
	return cl.EndTransaction(ectx, commit)
}

// txn runs one whole transaction that writes vals and ends with commit.
func txn(ctx context.Context, cl *kgo.Client, topic string, vals []string, partitions int, commit kgo.TransactionEndTry) error {
	if err := cl.BeginTransaction(); err != nil {
		return failf("begin: %v", err)
	}
	if err := produceAll(ctx, cl, topic, vals, partitions); err != nil {
		return err
	}
	if commit == kgo.TryAbort {
		// Nothing is buffered (produceAll waited for every record), but this
		// is franz-go's documented way to abort.
		actx, cancel := context.WithTimeout(ctx, txnDeadline)
		defer cancel()
		if err := cl.AbortBufferedRecords(actx); err != nil {
			return failf("abort buffered records: %v", err)
		}
	}
	if err := endTxn(ctx, cl, commit); err != nil {
		return failf("end transaction (commit %v): %v", commit, err)
	}
	return nil
}

// endOffsets asks ListOffsets for the end of every partition that the
// isolation level sees: the last stable offset for read_committed (1), the
// high watermark for read_uncommitted (0).
func endOffsets(ctx context.Context, cl *kgo.Client, topic string, partitions int, isolation int8) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = int32(p)
		rp.Timestamp = -1 // latest
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	rctx, cancel := context.WithTimeout(ctx, txnDeadline)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return nil, failf("ListOffsets: %v", err)
	}
	out := map[int32]int64{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, failf("ListOffsets %s[%d]: %v", rt.Topic, rp.Partition, err)
			}
			out[rp.Partition] = rp.Offset
		}
	}
	if len(out) != partitions {
		return nil, failf("ListOffsets answered %d partitions of %d: %v", len(out), partitions, out)
	}
	return out, nil
}

// readAll reads topic from the beginning, outside any group, with one
// isolation level, until it holds at least want values and every partition
// has been read up to the end that level sees (endOffsets). The client keeps
// control records so that the offset read reaches the end also when the last
// thing in a partition is a commit or abort marker; they are not values.
// The end is asked for again on every check: the commit markers, and with
// them the last stable offset, may land after EndTransaction returns.
func readAll(ctx context.Context, e env, topic string, partitions int, committed bool, want int) (map[int32][]string, error) {
	level, isolation, name := kgo.ReadUncommitted(), int8(0), "read_uncommitted"
	if committed {
		level, isolation, name = kgo.ReadCommitted(), 1, "read_committed"
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.bootstrap), logTo(), kgo.ClientID("franz-go-reader-"+name),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(level), kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	got := map[int32][]string{}
	next := map[int32]int64{}
	for p := range partitions {
		got[int32(p)] = []string{}
		next[int32(p)] = 0
	}
	total := 0
	var ends map[int32]int64
	end := time.Now().Add(txnDeadline)
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.Canceled) && !errors.Is(fe.Err, context.DeadlineExceeded) {
				return got, failf("%s fetch %s[%d]: %v", name, fe.Topic, fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				got[r.Partition] = append(got[r.Partition], string(r.Value))
				total++
			}
		})
		if total >= want {
			if ends, err = endOffsets(ctx, cl, topic, partitions, isolation); err != nil {
				return got, err
			}
			atEnd := true
			for p, o := range ends {
				atEnd = atEnd && next[p] >= o
			}
			if atEnd {
				return got, nil
			}
		}
		if time.Now().After(end) {
			return got, failf("%s read %d of %d values from %s in %v (read up to %v, ends %v): %v",
				name, total, want, topic, txnDeadline, next, ends, got)
		}
	}
}

func expectRead(ctx context.Context, e env, topic string, partitions int, committed bool, want map[int32][]string) error {
	n := 0
	for _, v := range want {
		n += len(v)
	}
	got, err := readAll(ctx, e, topic, partitions, committed, n)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(got, want) {
		level := "read_uncommitted"
		if committed {
			level = "read_committed"
		}
		return failf("%s read %v, want %v", level, got, want)
	}
	return nil
}

// txnCommit: 30 values over three partitions in one transaction, committed;
// read_committed sees exactly them.
func txnCommit(ctx context.Context, e env) error {
	cl, err := txnClient(e, e.topic+"-tid")
	if err != nil {
		return err
	}
	defer cl.Close()
	vals := values("t", 30)
	if err := txn(ctx, cl, e.topic, vals, txnPartitions, kgo.TryCommit); err != nil {
		return err
	}
	return expectRead(ctx, e, e.topic, txnPartitions, true, spread(vals, txnPartitions))
}

// txnAbort: three transactions of one producer over three partitions: a-*
// committed, b-* acknowledged (so in the log) and then aborted, c-*
// committed. read_committed sees a and c, read_uncommitted a, b and c.
func txnAbort(ctx context.Context, e env) error {
	cl, err := txnClient(e, e.topic+"-tid")
	if err != nil {
		return err
	}
	defer cl.Close()
	a, b, c := values("a", 6), values("b", 6), values("c", 6)
	for _, step := range []struct {
		vals   []string
		commit kgo.TransactionEndTry
	}{{a, kgo.TryCommit}, {b, kgo.TryAbort}, {c, kgo.TryCommit}} {
		if err := txn(ctx, cl, e.topic, step.vals, txnPartitions, step.commit); err != nil {
			return err
		}
	}
	if err := expectRead(ctx, e, e.topic, txnPartitions, true, spread(append(append([]string{}, a...), c...), txnPartitions)); err != nil {
		return err
	}
	all := spread(a, txnPartitions)
	for _, more := range [][]string{b, c} {
		for p, v := range spread(more, txnPartitions) {
			all[p] = append(all[p], v...)
		}
	}
	return expectRead(ctx, e, e.topic, txnPartitions, false, all)
}

// txnFence: zombie fencing on a one-partition topic. Producer 1 begins and
// writes zombie-* (acknowledged); producer 2 initialises the same
// transactional id (InitProducerId, which franz-go otherwise does lazily at
// the first produce), which aborts producer 1's transaction and bumps the
// epoch; producer 1's commit fails with kerr.ProducerFenced (Kafka answers
// EndTxn with PRODUCER_FENCED, with and without KIP-890 part 2); producer 2
// commits new-*. read_committed sees only new-*, read_uncommitted both:
// the zombie's records were written and are hidden by the abort, not lost.
func txnFence(ctx context.Context, e env) error {
	txid := e.topic + "-tid"
	zombie, fresh := values("zombie", 3), values("new", 3)
	p1, err := txnClient(e, txid)
	if err != nil {
		return err
	}
	defer p1.Close()
	if err := p1.BeginTransaction(); err != nil {
		return failf("producer 1 begin: %v", err)
	}
	if err := produceAll(ctx, p1, e.topic, zombie, 1); err != nil {
		return err
	}
	p2, err := txnClient(e, txid)
	if err != nil {
		return err
	}
	defer p2.Close()
	ictx, cancel := context.WithTimeout(ctx, txnDeadline)
	defer cancel()
	if _, _, err := p2.ProducerID(ictx); err != nil {
		return failf("producer 2 InitProducerId: %v", err)
	}
	err = endTxn(ctx, p1, kgo.TryCommit)
	if err == nil {
		return failf("producer 1 committed after producer 2 initialised its transactional id")
	}
	if !errors.Is(err, kerr.ProducerFenced) {
		return failf("producer 1's commit failed with %v, want %v", err, kerr.ProducerFenced)
	}
	if err := txn(ctx, p2, e.topic, fresh, 1, kgo.TryCommit); err != nil {
		return fmt.Errorf("producer 2: %w", err)
	}
	if err := expectRead(ctx, e, e.topic, 1, true, map[int32][]string{0: fresh}); err != nil {
		return err
	}
	return expectRead(ctx, e, e.topic, 1, false, map[int32][]string{0: append(append([]string{}, zombie...), fresh...)})
}

// groupOffsets asks the group coordinator (OffsetFetch, require_stable) for
// the group's committed offsets on the first partitions of topic; -1 where
// none is committed.
func groupOffsets(ctx context.Context, cl *kgo.Client, group, topic string, partitions int) (map[int32]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	req.RequireStable = true
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic = topic
	for p := range partitions {
		t.Partitions = append(t.Partitions, int32(p))
	}
	req.Topics = append(req.Topics, t)
	rctx, cancel := context.WithTimeout(ctx, txnDeadline)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return nil, failf("OffsetFetch: %v", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, err
			}
			out[rp.Partition] = rp.Offset
		}
	}
	return out, nil
}

// txnCtp: consume-transform-produce, exactly once. in-0..in-29 written (not
// transactionally) over TOPIC's three partitions; a GroupTransactSession in
// GROUP (read_committed; a transactional group client never autocommits)
// consumes them and, in one transaction, writes t:in-i to the same partition
// of TOPIC-out; End(TryCommit) sends the consumed offsets into the
// transaction (AddOffsetsToTxn, TxnOffsetCommit) and commits. The group's
// committed offsets are then the end of the input and the output holds
// exactly the 30 transformed values.
func txnCtp(ctx context.Context, e env) error {
	const m = 30
	out := e.topic + "-out"
	in := values("in", m)
	plain, err := kgo.NewClient(kgo.SeedBrokers(e.bootstrap), logTo(), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer plain.Close()
	if err := produceAll(ctx, plain, e.topic, in, txnPartitions); err != nil {
		return err
	}

	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(e.bootstrap), logTo(), kgo.ClientID("franz-go-ctp"),
		kgo.TransactionalID(e.topic+"-tid"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumerGroup(e.group), kgo.ConsumeTopics(e.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.RequestTimeoutOverhead(txnDeadline/2),
	)
	if err != nil {
		return err
	}
	defer sess.Close()
	if err := sess.Begin(); err != nil {
		return failf("begin: %v", err)
	}
	n := 0
	end := time.Now().Add(txnDeadline)
	for n < m {
		if time.Now().After(end) {
			return failf("consumed %d of %d input records in %v", n, m, txnDeadline)
		}
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := sess.PollFetches(pctx)
		cancel()
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.Canceled) && !errors.Is(fe.Err, context.DeadlineExceeded) {
				return failf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
			}
		}
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, &kgo.Record{Topic: out, Partition: r.Partition, Value: append([]byte("t:"), r.Value...)})
		})
		if len(recs) == 0 {
			continue
		}
		n += len(recs)
		sctx, cancel := context.WithTimeout(ctx, txnDeadline)
		err := sess.ProduceSync(sctx, recs...).FirstErr()
		cancel()
		if err != nil {
			return failf("transactional produce: %v", err)
		}
	}
	if n != m {
		return failf("consumed %d input records, want %d", n, m)
	}
	ectx, cancel := context.WithTimeout(ctx, txnDeadline)
	defer cancel()
	committed, err := sess.End(ectx, kgo.TryCommit)
	if err != nil {
		return failf("End(TryCommit): %v", err)
	}
	if !committed {
		return failf("End(TryCommit) aborted the transaction (a rebalance during it?)")
	}

	want := map[int32]int64{}
	for p := range txnPartitions {
		want[int32(p)] = m / txnPartitions
	}
	ends, err := endOffsets(ctx, plain, e.topic, txnPartitions, 1)
	if err != nil {
		return err
	}
	if !maps.Equal(ends, want) {
		return failf("the input's end offsets are %v, want %v", ends, want)
	}
	// Kafka answers a require_stable OffsetFetch with UNSTABLE_OFFSET_COMMIT
	// until the coordinator has written the transaction's marker to
	// __consumer_offsets, which may be after EndTxn returns.
	var got map[int32]int64
	var lastErr error
	if err := waitFor(func() bool {
		got, lastErr = groupOffsets(ctx, plain, e.group, e.topic, txnPartitions)
		return lastErr == nil && maps.Equal(got, want)
	}, fmt.Sprintf("the group's committed offsets to be the end of the input %v", want), txnDeadline); err != nil {
		return failf("%v: last OffsetFetch answered %v (error %v)", err, got, lastErr)
	}
	transformed := make([]string, m)
	for i, v := range in {
		transformed[i] = "t:" + v
	}
	return expectRead(ctx, e, out, txnPartitions, true, spread(transformed, txnPartitions))
}
