package main

// The single-partition scenarios: produce, consume, commit, idempotent.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func values(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// send produces every value with acks=all (to partition when it is >= 0,
// else where the partitioner puts it) and returns the acknowledged records
// in send order.
func send(ctx context.Context, e env, vals []string, partition int32, idempotent bool) ([]*kgo.Record, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(e.bootstrap), logTo(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(e.topic),
		// As the Java and librdkafka producers do, let Metadata create a
		// topic the producer names (franz-go asks not to by default).
		kgo.AllowAutoTopicCreation(),
	}
	if idempotent {
		// Idempotence is franz-go's default, with up to five requests in
		// flight. Small batches: the broker sees a run of pipelined batches
		// with rising sequence numbers, not one batch.
		opts = append(opts, kgo.ProducerBatchMaxBytes(512))
	} else {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, len(vals))
	for i, v := range vals {
		recs[i] = &kgo.Record{Value: []byte(v), Partition: max(partition, 0)}
	}
	pctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	if err := cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		return nil, failf("produce: %v", err)
	}
	return recs, nil
}

// pollN polls until n records arrived (or the deadline passed).
func pollN(ctx context.Context, cl *kgo.Client, n int) ([]*kgo.Record, error) {
	var got []*kgo.Record
	pctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	for len(got) < n && pctx.Err() == nil {
		fs := cl.PollFetches(pctx)
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.Canceled) && !errors.Is(fe.Err, context.DeadlineExceeded) {
				return got, failf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
			}
		}
		got = append(got, fs.Records()...)
	}
	return got, nil
}

func valuesOf(recs []*kgo.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

// produce: acks=all, idempotence off: 50 values p-0..p-49, acknowledged at
// rising offsets. The caller reads them back with another client.
func produce(ctx context.Context, e env) error {
	recs, err := send(ctx, e, values("p", 50), -1, false)
	if err != nil {
		return err
	}
	for i := 1; i < len(recs); i++ {
		a, b := recs[i-1], recs[i]
		if a.Partition == b.Partition && a.Offset >= b.Offset {
			return failf("offsets do not rise in send order: %d@%d then %d@%d", a.Partition, a.Offset, b.Partition, b.Offset)
		}
	}
	return nil
}

// consume: the caller wrote c-0..c-49; read them from the start of the
// topic, outside any group (a direct consumer: ListOffsets and Fetch).
func consume(ctx context.Context, e env) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.bootstrap), logTo(), kgo.ClientID("franz-go-consume"),
		kgo.ConsumeTopics(e.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	want := values("c", 50)
	recs, err := pollN(ctx, cl, len(want))
	if err != nil {
		return err
	}
	if got := valuesOf(recs); !slices.Equal(got, want) {
		return failf("read %v, want %v", got, want)
	}
	return nil
}

func groupClient(e env, clientID string, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(e.bootstrap), logTo(), kgo.ClientID(clientID),
		kgo.ConsumeTopics(e.topic), kgo.ConsumerGroup(e.group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(10 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
	}, extra...)
	return kgo.NewClient(opts...)
}

// committedOffset asks the group coordinator (OffsetFetch) for the group's
// committed offset on partition 0 of the topic.
func committedOffset(ctx context.Context, e env) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.bootstrap), logTo())
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = e.group
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic = e.topic
	t.Partitions = []int32{0}
	req.Topics = append(req.Topics, t)
	rctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return 0, failf("OffsetFetch: %v", err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, failf("OffsetFetch answered %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return 0, failf("OffsetFetch partition error %d", p.ErrorCode)
	}
	return p.Offset, nil
}

// commit: a synchronous commit, then a new member of the group resumes from
// it: a-0..a-9 consumed and committed (offset 10, checked with OffsetFetch),
// then b-0..b-4 appended and read by a fresh client starting at offset 10,
// which commits 15. The caller checks 15 with another client.
func commit(ctx context.Context, e env) error {
	if _, err := send(ctx, e, values("a", 10), 0, false); err != nil {
		return err
	}
	// One group member's turn: poll n records, commit them synchronously,
	// close (a dynamic member sends LeaveGroup).
	member := func(id string, n int) ([]*kgo.Record, error) {
		cl, err := groupClient(e, id, kgo.DisableAutoCommit())
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		recs, err := pollN(ctx, cl, n)
		if err != nil {
			return recs, err
		}
		cctx, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		if err := cl.CommitUncommittedOffsets(cctx); err != nil {
			return recs, failf("%s commit: %v", id, err)
		}
		return recs, nil
	}
	recs, err := member("franz-go-c1", 10)
	if err != nil {
		return err
	}
	if got := valuesOf(recs); !slices.Equal(got, values("a", 10)) {
		return failf("first member read %v", got)
	}
	if off, err := committedOffset(ctx, e); err != nil || off != 10 {
		return failf("committed offset after the first member is %d (%v), want 10", off, err)
	}
	if _, err := send(ctx, e, values("b", 5), 0, false); err != nil {
		return err
	}
	recs, err = member("franz-go-c2", 5)
	if err != nil {
		return err
	}
	if len(recs) == 0 || recs[0].Offset != 10 {
		return failf("the second member did not resume at offset 10: %v", valuesOf(recs))
	}
	if got := valuesOf(recs); !slices.Equal(got, values("b", 5)) {
		return failf("second member read %v", got)
	}
	return nil
}

// idempotent: the idempotent producer with pipelined batches: i-0..i-199
// land at 200 consecutive offsets, each once. The caller reads them back
// with another client and checks there are no duplicates.
func idempotent(ctx context.Context, e env) error {
	recs, err := send(ctx, e, values("i", 200), -1, true)
	if err != nil {
		return err
	}
	base := recs[0].Offset
	for i, r := range recs {
		if r.Partition != recs[0].Partition || r.Offset != base+int64(i) {
			return failf("record %d acknowledged at %d@%d, want offset %d", i, r.Partition, r.Offset, base+int64(i))
		}
	}
	return nil
}
