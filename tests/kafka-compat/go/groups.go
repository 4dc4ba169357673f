package main

// The consumer-group scenarios: group_rebalance and static_member. The caller
// creates the topic with 3 (group_rebalance) or 2 (static_member) partitions.
// franz-go's default balancer is cooperative-sticky, so these run the
// incremental (two-round) rebalance against the broker's classic protocol.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// member is one group member polling in its own goroutine; the callbacks
// keep its current assignment and the values it consumed.
type member struct {
	name     string
	cl       *kgo.Client
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	assigned map[int32]bool
	seen     map[string]bool
	revokes  int // rebalances that took partitions away from this member
	err      error
}

func newMember(ctx context.Context, e env, name, instance string) (*member, error) {
	m := &member{name: name, done: make(chan struct{}), assigned: map[int32]bool{}, seen: map[string]bool{}}
	opts := []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range a[e.topic] {
				m.assigned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { m.drop(r[e.topic], true) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) { m.drop(l[e.topic], false) }),
	}
	if instance != "" {
		opts = append(opts, kgo.InstanceID(instance))
	}
	cl, err := groupClient(e, name, opts...)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	mctx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	go m.run(mctx)
	return m, nil
}

func (m *member) drop(parts []int32, revoked bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if revoked && len(parts) > 0 && len(m.assigned) > 0 {
		m.revokes++
	}
	for _, p := range parts {
		delete(m.assigned, p)
	}
}

func (m *member) run(ctx context.Context) {
	defer close(m.done)
	for ctx.Err() == nil {
		fs := m.cl.PollFetches(ctx)
		if fs.IsClientClosed() {
			return
		}
		m.mu.Lock()
		for _, fe := range fs.Errors() {
			if m.err == nil && !errors.Is(fe.Err, context.Canceled) && !errors.Is(fe.Err, context.DeadlineExceeded) {
				m.err = fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) { m.seen[string(r.Value)] = true })
		m.mu.Unlock()
	}
}

func (m *member) get() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.assigned))
}

func (m *member) revokeCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.revokes
}

// generation is the group generation this member last joined. A
// cooperative rebalance may leave a member's partitions alone, so its
// assignment alone cannot tell that the group rebalanced; a new generation can.
func (m *member) generation() int32 {
	_, gen := m.cl.GroupMetadata()
	return gen
}

func (m *member) String() string { return fmt.Sprintf("%s%v", m.name, m.get()) }

// leave stops polling and closes the client: a dynamic member sends
// LeaveGroup, a static one does not. It fails if a fetch had failed.
func (m *member) leave() error {
	m.cancel()
	closed := make(chan struct{})
	go func() {
		<-m.done
		m.cl.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		return failf("%s did not close within 30 s", m.name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return failf("%s: %v", m.name, m.err)
	}
	return nil
}

// covers: every partition 0..n-1 is owned by exactly one member and every
// member owns one.
func covers(ms []*member, n int) bool {
	var owned []int32
	for _, m := range ms {
		a := m.get()
		if len(a) == 0 {
			return false
		}
		owned = append(owned, a...)
	}
	slices.Sort(owned)
	want := make([]int32, n)
	for i := range want {
		want[i] = int32(i)
	}
	return slices.Equal(owned, want)
}

func sawAll(ms []*member, vals []string) bool {
	seen := map[string]bool{}
	for _, m := range ms {
		m.mu.Lock()
		maps.Copy(seen, m.seen)
		m.mu.Unlock()
	}
	for _, v := range vals {
		if !seen[v] {
			return false
		}
	}
	return true
}

// onePerPartition writes prefix-p to each partition p of 0..n-1.
func onePerPartition(ctx context.Context, e env, prefix string, n int) ([]string, error) {
	var vals []string
	for p := 0; p < n; p++ {
		v := fmt.Sprintf("%s-%d", prefix, p)
		if _, err := send(ctx, e, []string{v}, int32(p), false); err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	return vals, nil
}

// groupRebalance: three members share three partitions; one closes
// (LeaveGroup); the other two get all three and consume what is written
// after the rebalance.
func groupRebalance(ctx context.Context, e env) (err error) {
	var ms []*member
	defer func() {
		for _, m := range ms {
			_ = m.leave() // cleanup after the verdict; the verdict stands
		}
	}()
	for i := 0; i < 3; i++ {
		m, err := newMember(ctx, e, fmt.Sprintf("m%d", i), "")
		if err != nil {
			return err
		}
		ms = append(ms, m)
	}
	one := func() bool {
		for _, m := range ms {
			if len(m.get()) != 1 {
				return false
			}
		}
		return covers(ms, 3)
	}
	if err := waitFor(one, fmt.Sprintf("three members with one partition each %v", ms), deadline); err != nil {
		return err
	}
	before, err := onePerPartition(ctx, e, "before", 3)
	if err != nil {
		return err
	}
	if err := waitFor(func() bool { return sawAll(ms, before) }, fmt.Sprint("the three members to consume ", before), deadline); err != nil {
		return err
	}
	last := ms[2]
	ms = ms[:2]
	if err := last.leave(); err != nil {
		return err
	}
	if err := waitFor(func() bool { return covers(ms, 3) }, fmt.Sprintf("the two left to share all three partitions %v", ms), deadline); err != nil {
		return err
	}
	after, err := onePerPartition(ctx, e, "after", 3)
	if err != nil {
		return err
	}
	return waitFor(func() bool { return sawAll(ms, after) }, fmt.Sprint("the two left to consume ", after), deadline)
}

// staticMember: group.instance.id. b joins first and leads (a restarted
// leader reassigns); a joins and takes one partition; a closes (a static
// member sends no LeaveGroup) and restarts with the same instance id within
// the session timeout: it gets its partition back and b goes through no
// rebalance (same generation, nothing revoked).
func staticMember(ctx context.Context, e env) error {
	var ms []*member
	defer func() {
		for _, m := range ms {
			_ = m.leave()
		}
	}()
	b, err := newMember(ctx, e, "m1", "static-b")
	if err != nil {
		return err
	}
	ms = append(ms, b)
	if err := waitFor(func() bool { return slices.Equal(b.get(), []int32{0, 1}) }, "the first static member to own both partitions", deadline); err != nil {
		return err
	}
	a, err := newMember(ctx, e, "m0", "static-a")
	if err != nil {
		return err
	}
	if err := waitFor(func() bool { return covers([]*member{a, b}, 2) }, "two static members with one partition each", deadline); err != nil {
		_ = a.leave()
		return err
	}
	pa, pb, bRevokes, bGen := a.get(), b.get(), b.revokeCount(), b.generation()
	if err := a.leave(); err != nil {
		return err
	}
	a2, err := newMember(ctx, e, "m2", "static-a")
	if err != nil {
		return err
	}
	ms = append(ms, a2)
	if err := waitFor(func() bool { return slices.Equal(a2.get(), pa) }, fmt.Sprintf("the restarted static member to get %v back", pa), 20*time.Second); err != nil {
		return err
	}
	time.Sleep(1500 * time.Millisecond) // a rebalance, had there been one, would show by now
	if got, n, gen := b.get(), b.revokeCount(), b.generation(); !slices.Equal(got, pb) || n != bRevokes || gen != bGen {
		return failf("the other member was rebalanced: it owned %v after %d revokes in generation %d, now %v after %d in generation %d",
			pb, bRevokes, bGen, got, n, gen)
	}
	return nil
}
