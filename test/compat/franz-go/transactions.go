package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The transactions steps (see test/compat/support/scenario.ts): an aborted and a committed
// transaction on a topic of their own, a read_committed reader that must see only the committed
// records, then consume-transform-produce with a GroupTransactSession in the group <GROUP>-txn.
const (
	txnRecords   = 5
	txnEndOffset = 2*txnRecords + 2
	txnInputEnd  = 2*txnRecords + 1
	txnWait      = 30 * time.Second
)

var (
	txnTopic = topic + "-txn"
	txnGroup = group + "-txn"
)

func txnValues(prefixes ...string) []string {
	values := []string{}
	for _, prefix := range prefixes {
		for i := 0; i < txnRecords; i++ {
			values = append(values, fmt.Sprintf("%s %d", prefix, i))
		}
	}
	return values
}

// txnRecordsOf builds records for partition 0 of the transactions' topic.
func txnRecordsOf(values []string) []*kgo.Record {
	records := []*kgo.Record{}
	for _, value := range values {
		records = append(records, &kgo.Record{Topic: txnTopic, Partition: 0, Value: []byte(value)})
	}
	return records
}

func checkSeen(what string, seen, expected []string) error {
	if !slices.Equal(seen, expected) {
		return fmt.Errorf("%s: read_committed saw %q", what, seen)
	}
	return nil
}

func (s *scenario) transactions() (string, error) {
	ctx, cancel := context.WithTimeout(s.ctx, txnWait)
	defer cancel()
	if err := s.createAndWait(ctx, txnTopic, 1); err != nil {
		return "", err
	}
	producer, err := kgo.NewClient(connection(kgo.TransactionalID(topic+"-txn"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return "", err
	}
	defer producer.Close()
	for _, prefix := range []string{"aborted", "committed"} {
		if err := producer.BeginTransaction(); err != nil {
			return "", err
		}
		if err := producer.ProduceSync(ctx, txnRecordsOf(txnValues(prefix))...).FirstErr(); err != nil {
			return "", err
		}
		end := kgo.TryCommit
		if prefix == "aborted" {
			end = kgo.TryAbort
		}
		if err := producer.EndTransaction(ctx, end); err != nil {
			return "", err
		}
	}
	seen, err := readCommitted(ctx, txnRecords)
	if err == nil {
		err = checkSeen("after commit and abort", seen, txnValues("committed"))
	}
	if err != nil {
		return "", err
	}
	end, err := s.endOffset(ctx)
	if err != nil {
		return "", err
	}
	if end.Offset != txnEndOffset {
		return "", fmt.Errorf("end offset %d, not %d", end.Offset, txnEndOffset)
	}
	return fmt.Sprintf("%d committed seen, %d aborted not, end offset %d",
		txnRecords, txnRecords, end.Offset), nil
}

// endOffset lists the end of the transactions' partition, asking again while the answer is an
// error: on a cluster the broker kadm asks may not know the partition's leader for a moment yet.
func (s *scenario) endOffset(ctx context.Context) (kadm.ListedOffset, error) {
	for {
		ends, err := s.admin.ListEndOffsets(ctx, txnTopic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			end, _ := ends.Lookup(txnTopic, 0)
			return end, nil
		}
		if ctx.Err() != nil {
			return kadm.ListedOffset{}, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// consumeTransformProduce is franz-go's exactly-once loop, once: the GroupTransactSession reads
// the committed inputs as a read_committed group member, and End commits the outputs together
// with the group's offsets.
func (s *scenario) consumeTransformProduce() (string, error) {
	ctx, cancel := context.WithTimeout(s.ctx, txnWait)
	defer cancel()
	sess, err := kgo.NewGroupTransactSession(connection(
		kgo.TransactionalID(topic+"-ctp"), kgo.ConsumerGroup(txnGroup), kgo.ConsumeTopics(txnTopic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return "", err
	}
	defer sess.Close()
	inputs := []string{}
	for len(inputs) < txnRecords && ctx.Err() == nil {
		fetches := sess.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) { inputs = append(inputs, string(r.Value)) })
	}
	if err := checkSeen("the session", inputs, txnValues("committed")); err != nil {
		return "", err
	}
	if err := sess.Begin(); err != nil {
		return "", err
	}
	outputs := []string{}
	for _, input := range inputs {
		outputs = append(outputs, "out "+input)
	}
	if err := sess.ProduceSync(ctx, txnRecordsOf(outputs)...).FirstErr(); err != nil {
		return "", err
	}
	if committed, err := sess.End(ctx, kgo.TryCommit); err != nil || !committed {
		return "", fmt.Errorf("transaction not committed (%v)", err)
	}
	return s.checkTransformed(ctx)
}

func (s *scenario) checkTransformed(ctx context.Context) (string, error) {
	seen, err := readCommitted(ctx, 2*txnRecords)
	if err == nil {
		err = checkSeen("a new reader", seen, txnValues("committed", "out committed"))
	}
	if err != nil {
		return "", err
	}
	offsets, err := s.admin.FetchOffsets(ctx, txnGroup)
	if err != nil {
		return "", err
	}
	offset, _ := offsets.Lookup(txnTopic, 0)
	if offset.Err != nil || offset.At != txnInputEnd {
		return "", fmt.Errorf("group offset %d (%v), not %d", offset.At, offset.Err, txnInputEnd)
	}
	return fmt.Sprintf("%d transformed, group offset %d", txnRecords, offset.At), nil
}

// readCommitted reads the transactions' topic from the start with read_committed until it has
// `count` records, then polls once more so a record delivered late shows.
func readCommitted(ctx context.Context, count int) ([]string, error) {
	client, err := kgo.NewClient(connection(
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			txnTopic: {0: kgo.NewOffset().AtStart()},
		}))...)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	seen := []string{}
	poll := func(ctx context.Context) {
		client.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen = append(seen, string(r.Value)) })
	}
	for len(seen) < count && ctx.Err() == nil {
		poll(ctx)
	}
	if err := ctx.Err(); err != nil {
		return seen, fmt.Errorf("%d of %d records read: %w", len(seen), count, err)
	}
	late, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	poll(late)
	return seen, nil
}
