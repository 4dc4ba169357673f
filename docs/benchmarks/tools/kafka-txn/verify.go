// The verification of a run: the output read with read_committed, checked
// against what the group committed (see main.go, step 4).

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// readAll reads partitions 0..n-1 of topic from the start; per partition it
// stops once done(partition, record) says so for a record; it gives up after
// timeout and returns how many partitions never finished.
func readAll(ctx context.Context, topic string, n int, committed bool, timeout time.Duration,
	each func(*kgo.Record), need map[int32]bool) (int, error) {
	offs := map[string]map[int32]kgo.Offset{topic: {}}
	for p := 0; p < n; p++ {
		offs[topic][int32(p)] = kgo.NewOffset().AtStart()
	}
	opts := append(baseOpts("verify"), kgo.ConsumePartitions(offs))
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	} else {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return n, err
	}
	defer cl.Close()
	deadline := time.Now().Add(timeout)
	for len(need) > 0 && time.Now().Before(deadline) {
		pc, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pc)
		cancel()
		var perr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && perr == nil {
				perr = fmt.Errorf("reading %s[%d]: %w", t, p, err)
			}
		})
		if perr != nil {
			return len(need), perr
		}
		fs.EachRecord(each)
	}
	return len(need), nil
}

func verify(ctx context.Context, in, out, group string) verifyResult {
	start := time.Now()
	res := verifyResult{Seeded: *messages}
	fail := func(err error) verifyResult {
		res.Error = err.Error()
		res.Summary = "verification could not finish: " + err.Error()
		res.Seconds = time.Since(start).Seconds()
		return res
	}
	admin, err := kgo.NewClient(append(baseOpts("verify-admin"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))...)
	if err != nil {
		return fail(err)
	}
	defer admin.Close()
	committedOff, err := groupOffsets(ctx, admin, group, in, *partitions)
	if err != nil {
		return fail(err)
	}
	inEnd, err := listOffsets(ctx, admin, in, *partitions, false)
	if err != nil {
		return fail(err)
	}
	// Sentinels: one non-transactional record per output partition, after
	// everything the workers wrote. A read_committed reader that reaches it
	// has seen every committed output of that partition.
	sentinel := []byte("sentinel-" + group)
	for p := 0; p < *partitions; p++ {
		admin.Produce(ctx, &kgo.Record{Topic: out, Partition: int32(p), Value: sentinel}, func(_ *kgo.Record, err error) {
			if err != nil {
				res.Error = "sentinel: " + err.Error()
			}
		})
	}
	if err := admin.Flush(ctx); err != nil {
		return fail(err)
	}
	if res.Error != "" {
		return fail(errors.New(res.Error))
	}

	// Input: (partition, offset) -> id, below each partition's end.
	type loc struct {
		p int32
		o int64
	}
	inputID := map[loc]int{}
	seenIn := map[int]bool{}
	needIn := map[int32]bool{}
	for p, e := range inEnd {
		if e > 0 {
			needIn[p] = true
		}
	}
	left, err := readAll(ctx, in, *partitions, false, 120*time.Second, func(r *kgo.Record) {
		id, ok := idOf(r.Value)
		if !ok {
			res.BadValue++
		} else {
			if seenIn[id] {
				res.InputDupIDs++
			}
			seenIn[id] = true
			inputID[loc{r.Partition, r.Offset}] = id
		}
		res.InputRead++
		if r.Offset+1 >= inEnd[r.Partition] {
			delete(needIn, r.Partition)
		}
	}, needIn)
	if err != nil {
		return fail(err)
	}
	if left > 0 {
		return fail(fmt.Errorf("input: %d partitions not read to their end in 120 s", left))
	}
	expected := map[int]int32{} // id -> partition
	for l, id := range inputID {
		if l.o < committedOff[l.p] {
			expected[id] = l.p
		} else {
			res.Remaining++
		}
	}
	res.CommittedInputs = len(expected)

	// Output, read_committed, up to the sentinels.
	count := map[int]int{}
	needOut := map[int32]bool{}
	for p := 0; p < *partitions; p++ {
		needOut[int32(p)] = true
	}
	left, err = readAll(ctx, out, *partitions, true, 120*time.Second, func(r *kgo.Record) {
		if string(r.Value) == string(sentinel) {
			delete(needOut, r.Partition)
			return
		}
		res.OutputRead++
		id, ok := idOf(r.Value)
		if !ok {
			res.BadValue++
			return
		}
		count[id]++
		if p, ok := expected[id]; ok && p != r.Partition && count[id] == 1 {
			res.WrongPartition++
		}
	}, needOut)
	if err != nil {
		return fail(err)
	}
	res.SentinelsMissing = left
	for id := range expected {
		switch c := count[id]; {
		case c == 0:
			res.Missing++
		case c == 1:
			res.Exact++
		default:
			res.Duplicated++
		}
	}
	for id := range count {
		if _, ok := expected[id]; !ok {
			res.Unexpected++
		}
	}
	res.OK = left == 0 && res.Missing == 0 && res.Duplicated == 0 && res.Unexpected == 0 &&
		res.WrongPartition == 0 && res.BadValue == 0 && res.InputDupIDs == 0 && res.InputRead == *messages &&
		(*duration > 0 || res.Remaining == 0)
	verdict := "exactly-once ok"
	if !res.OK {
		verdict = "exactly-once FAILED"
	}
	res.Summary = fmt.Sprintf("%s: %d seeded, %d read back from the input, %d committed by the group, %d remaining; %d outputs read_committed: %d exactly once, %d missing, %d duplicated, %d unexpected, %d in the wrong partition; %d partitions without their sentinel",
		verdict, *messages, res.InputRead, res.CommittedInputs, res.Remaining, res.OutputRead, res.Exact, res.Missing, res.Duplicated, res.Unexpected, res.WrongPartition, left)
	res.Seconds = time.Since(start).Seconds()
	return res
}

// ---------------------------------------------------------------- main
