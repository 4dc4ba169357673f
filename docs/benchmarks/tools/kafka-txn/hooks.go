package main

// What the driver sees of each request (a franz-go HookBrokerE2E) and the
// -timeline-slow-ms diagnosis: where in the window the slow commits and slow
// requests fall, in 100 ms steps.

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// timeline: where in the window the slow commits and slow requests fall, in 100 ms
// steps, to tell a periodic stall (a checkpoint, a GC) from a tail spread evenly.
type timeline struct {
	start atomic.Int64 // window start, unix nanos; 0 = not measuring
	mu    sync.Mutex
	steps map[int]*step
}

type step struct {
	Commits int            `json:"commits"`
	Slow    int            `json:"slow"`
	MaxMs   float64        `json:"max_ms"`
	Reqs    map[string]int `json:"slow_requests,omitempty"`
}

func (t *timeline) at() (*step, bool) {
	s0 := t.start.Load()
	if s0 == 0 || *timelineMs <= 0 {
		return nil, false
	}
	i := int((time.Now().UnixNano() - s0) / int64(100*time.Millisecond))
	if i < 0 || i > 100000 {
		return nil, false
	}
	st := t.steps[i]
	if st == nil {
		st = &step{}
		t.steps[i] = st
	}
	return st, true
}

func (t *timeline) commit(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st, ok := t.at(); ok {
		ms := float64(d) / 1e6
		st.Commits++
		if ms > *timelineMs {
			st.Slow++
		}
		st.MaxMs = math.Max(st.MaxMs, math.Round(ms*1000)/1000)
	}
}

func (t *timeline) request(name string, d time.Duration) {
	if float64(d)/1e6 <= *timelineMs/2 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if st, ok := t.at(); ok {
		if st.Reqs == nil {
			st.Reqs = map[string]int{}
		}
		st.Reqs[name]++
	}
}

func (t *timeline) summary() [][]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out [][]any
	for i := 0; i < 100000 && len(out) < len(t.steps); i++ {
		if st, ok := t.steps[i]; ok {
			out = append(out, []any{float64(i) / 10, st})
		}
	}
	return out
}

var tl = &timeline{steps: map[int]*step{}}

// ---------------------------------------------------------------- request hook

var apiNames = map[int16]string{0: "Produce", 1: "Fetch", 8: "OffsetCommit", 9: "OffsetFetch", 12: "Heartbeat", 22: "InitProducerId", 24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 28: "TxnOffsetCommit"}

type reqHook struct {
	on  *atomic.Bool
	mu  sync.Mutex
	lat map[int16]*samples
}

func (h *reqHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if !h.on.Load() || e2e.Err() != nil {
		return
	}
	if _, ok := apiNames[key]; !ok || key == 1 { // Fetch waits by design (max wait): not a latency
		return
	}
	h.mu.Lock()
	s := h.lat[key]
	if s == nil {
		s = &samples{}
		h.lat[key] = s
	}
	h.mu.Unlock()
	s.add(e2e.DurationE2E())
	tl.request(apiNames[key], e2e.DurationE2E())
}
