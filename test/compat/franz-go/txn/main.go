// Transactions with franz-go, run by test/e2e/transactions-clients.test.ts: a transactional
// producer commits and aborts, a GroupTransactSession copies every record of IN_TOPIC to
// OUT_TOPIC ("out-<value>") exactly once, then read_committed and read_uncommitted consumers
// read back. Prints one JSON line:
// {"committed": [...], "uncommitted": [...], "copied": [...]}.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	bootstrap, topic := os.Getenv("BOOTSTRAP"), os.Getenv("TOPIC")
	in, out := os.Getenv("IN_TOPIC"), os.Getenv("OUT_TOPIC")
	inputs, _ := strconv.Atoi(os.Getenv("INPUTS"))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	producer, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.TransactionalID("franz-tx"),
		kgo.DefaultProduceTopic(topic))
	must(err)
	for _, txn := range []struct {
		values []string
		commit kgo.TransactionEndTry
	}{{[]string{"c1", "c2"}, kgo.TryCommit}, {[]string{"a1"}, kgo.TryAbort}, {[]string{"c3"}, kgo.TryCommit}} {
		must(producer.BeginTransaction())
		for _, v := range txn.values {
			must(producer.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr())
		}
		must(producer.EndTransaction(ctx, txn.commit))
	}
	producer.Close()

	copyExactlyOnce(ctx, bootstrap, in, out, inputs)
	result := map[string][]string{
		"committed":   readAll(ctx, bootstrap, topic, kgo.ReadCommitted()),
		"uncommitted": readAll(ctx, bootstrap, topic, kgo.ReadUncommitted()),
		"copied":      readAll(ctx, bootstrap, out, kgo.ReadCommitted()),
	}
	encoded, _ := json.Marshal(result)
	fmt.Println(string(encoded))
}

// copyExactlyOnce is franz-go's consume-transform-produce: one transaction per poll, the
// group's offsets committed inside it.
func copyExactlyOnce(ctx context.Context, bootstrap, in, out string, inputs int) {
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(bootstrap),
		kgo.TransactionalID("franz-gts"), kgo.ConsumerGroup("franz-gts"), kgo.ConsumeTopics(in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic(out))
	must(err)
	defer sess.Close()
	copied := 0
	for copied < inputs {
		fetches := sess.PollFetches(ctx)
		must(ctx.Err())
		must(sess.Begin())
		n := 0
		fetches.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, kgo.StringRecord("out-"+string(r.Value)), nil)
			n++
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		must(err)
		if committed {
			copied += n
		}
	}
}

func readAll(ctx context.Context, bootstrap, topic string, level kgo.IsolationLevel) []string {
	client, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(level), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	must(err)
	defer client.Close()
	values := []string{}
	for {
		pollCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		fetches := client.PollFetches(pollCtx)
		cancel()
		if pollCtx.Err() != nil && fetches.NumRecords() == 0 {
			break
		}
		fetches.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	sort.Strings(values)
	return values
}
