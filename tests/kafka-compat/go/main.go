// Command franz-go-compat is the franz-go client of Baton's Kafka
// compatibility suite: it runs one scenario with github.com/twmb/franz-go
// against a broker and exits 0 on success, 1 with a "FAIL scenario: reason"
// line on stderr when the broker misbehaves, 2 on bad usage.
//
//	franz-go-compat SCENARIO BOOTSTRAP TOPIC GROUP
//
// Scenarios: produce, consume, commit, idempotent, group_rebalance,
// static_member (test_clients.py), and the transaction scenarios txn_commit,
// txn_abort, txn_fence, txn_ctp (test_transactions_clients.py). The values
// each one writes or expects, and what the pytest caller checks afterwards
// with another client, are the same for the Java program; those two files
// describe that contract.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// deadline bounds any one wait inside a scenario.
const deadline = 60 * time.Second

// env is where a scenario runs: the broker, its topic and its consumer group.
type env struct {
	bootstrap, topic, group string
}

// failure is a broken expectation; its text is the whole report.
type failure string

func (f failure) Error() string { return string(f) }

func failf(format string, args ...any) error { return failure(fmt.Sprintf(format, args...)) }

// waitFor polls cond every 100 ms until it holds, or fails naming what.
func waitFor(cond func() bool, what string, timeout time.Duration) error {
	end := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(end) {
			return failf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// logTo keeps the client's warnings and errors on stderr, which the caller
// shows when a scenario fails.
func logTo() kgo.Opt {
	return kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil))
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: franz-go-compat SCENARIO BOOTSTRAP TOPIC GROUP")
		os.Exit(2)
	}
	scenario := os.Args[1]
	e := env{bootstrap: os.Args[2], topic: os.Args[3], group: os.Args[4]}
	scenarios := map[string]func(context.Context, env) error{
		"produce":         produce,
		"consume":         consume,
		"commit":          commit,
		"idempotent":      idempotent,
		"group_rebalance": groupRebalance,
		"static_member":   staticMember,
		"txn_commit":      txnCommit,
		"txn_abort":       txnAbort,
		"txn_fence":       txnFence,
		"txn_ctp":         txnCtp,
	}
	run, ok := scenarios[scenario]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown scenario", scenario)
		os.Exit(2)
	}
	// Every scenario's waits are bounded by deadline; this bounds the whole.
	ctx, cancel := context.WithTimeout(context.Background(), 3*deadline)
	defer cancel()
	if err := run(ctx, e); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL %s: %v\n", scenario, err)
		os.Exit(1)
	}
	fmt.Println("ok", scenario)
}
