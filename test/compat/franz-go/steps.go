package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// scenario holds what the steps share: the admin client, the live group members and how many
// records were produced.
type scenario struct {
	ctx      context.Context
	admin    *kadm.Client
	members  []*member
	produced int64
}

func (s *scenario) run() {
	if securityProtocol != "" {
		run("wrong-password", wrongPassword)
	}
	run("create-topic", s.createTopic)
	run("produce-gzip", func() (string, error) { return s.produce("gzip", kgo.GzipCompression()) })
	run("produce-zstd", func() (string, error) { return s.produce("zstd", kgo.ZstdCompression()) })
	run("consume-group", s.consumeGroup)
	run("commit", s.commit)
	closeMembers(s.members)
	run("restart-no-redelivery", s.restart)
	run("describe-group", s.describeGroup)
	closeMembers(s.members)
	run("list-offsets", s.listOffsets)
	run("transactions", s.transactions)
	run("consume-transform-produce", s.consumeTransformProduce)
	run("delete-topic", s.deleteTopic)
}

func (s *scenario) createTopic() (string, error) {
	return "", s.createAndWait(s.ctx, topic, partitionCount)
}

// createAndWait creates a topic with the broker's default.replication.factor (-1) and lists it
// until every partition shows.
func (s *scenario) createAndWait(ctx context.Context, name string, partitions int) error {
	created, err := s.admin.CreateTopic(ctx, int32(partitions), -1, nil, name)
	if err == nil {
		err = created.Err
	}
	if err != nil {
		return err
	}
	// Metadata reaches the other brokers of a cluster a moment after CreateTopics is answered
	// (as in Kafka), so a user lists the new topic until every partition shows, for a while:
	// longer than kgo's metadata min age (5 s), since a first answer without the topic can be
	// served again from the client's cache until then (a 5 s wait failed once in CI).
	got := 0
	for attempt := 0; attempt < 150; attempt++ {
		details, err := s.admin.ListTopics(ctx, name)
		if err != nil {
			return err
		}
		if got = len(details[name].Partitions); got == partitions && allLed(details[name]) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("topic has %d partitions (or one has no leader)", got)
}

// allLed says whether every partition of the topic has a leader: a broker that has the new
// topic but not yet its LeaderAndIsr lists it leaderless, and offsets asked there fail.
func allLed(detail kadm.TopicDetail) bool {
	for _, partition := range detail.Partitions {
		if partition.Err != nil || partition.Leader < 0 {
			return false
		}
	}
	return true
}

func (s *scenario) produce(codec string, compression kgo.CompressionCodec) (string, error) {
	producer, err := kgo.NewClient(connection(kgo.ProducerBatchCompression(compression))...)
	if err != nil {
		return "", err
	}
	defer producer.Close()
	ctx, cancel := context.WithTimeout(s.ctx, 60*time.Second)
	defer cancel()
	if err := producer.ProduceSync(ctx, recordsFor(codec)...).FirstErr(); err != nil {
		return "", err
	}
	s.produced += recordsPerCodec
	return fmt.Sprintf("%d records", recordsPerCodec), nil
}

func (s *scenario) consumeGroup() (string, error) {
	members, err := startMembers()
	s.members = members
	if err != nil {
		return "", err
	}
	if err := waitFor("both members to be assigned", restartTimeout, members, func() bool {
		_, assigned, _ := snapshot(members)
		return assigned
	}); err != nil {
		return "", err
	}
	expected := len(codecs) * recordsPerCodec
	if err := waitFor(fmt.Sprintf("%d records", expected), consumeTimeout, members, func() bool {
		records, _, _ := snapshot(members)
		return len(records) >= expected
	}); err != nil {
		return "", err
	}
	time.Sleep(500 * time.Millisecond) // Anything delivered twice arrives now, and the check sees it.
	records, _, _ := snapshot(members)
	if problems := verifyConsumed(records); len(problems) > 0 {
		return "", fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	counts := make([]string, 0, len(members))
	for _, m := range members {
		m.mu.Lock()
		counts = append(counts, fmt.Sprintf("member %d: %d", m.index, len(m.records)))
		m.mu.Unlock()
	}
	return strings.Join(counts, ", "), nil
}

func (s *scenario) commit() (string, error) {
	for _, m := range s.members {
		if err := m.client.CommitUncommittedOffsets(s.ctx); err != nil {
			return "", err
		}
	}
	committed, err := s.admin.FetchOffsets(s.ctx, group)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return "", err
	}
	ends, err := s.admin.ListEndOffsets(s.ctx, topic)
	if err != nil {
		return "", err
	}
	for partition := int32(0); partition < partitionCount; partition++ {
		offset, _ := committed.Lookup(topic, partition)
		end, _ := ends.Lookup(topic, partition)
		if offset.At != end.Offset {
			return "", fmt.Errorf("partition %d: committed %d, end %d", partition, offset.At, end.Offset)
		}
	}
	return "", nil
}

func (s *scenario) restart() (string, error) {
	members, err := startMembers()
	s.members = members
	if err != nil {
		return "", err
	}
	if err := waitFor("both members to be assigned", restartTimeout, members, func() bool {
		_, assigned, _ := snapshot(members)
		return assigned
	}); err != nil {
		return "", err
	}
	if err := produceSentinels(s.ctx); err != nil {
		return "", fmt.Errorf("producing the sentinels: %w", err)
	}
	s.produced += sentinelCount
	if err := waitFor("the sentinels", restartTimeout, members, func() bool {
		records, _, _ := snapshot(members)
		count := 0
		for _, record := range records {
			if isSentinel(record) {
				count++
			}
		}
		return count >= sentinelCount
	}); err != nil {
		return "", err
	}
	records, _, _ := snapshot(members)
	again := 0
	for _, record := range records {
		if !isSentinel(record) {
			again++
		}
	}
	if again > 0 {
		return "", fmt.Errorf("%d records delivered again after the restart", again)
	}
	return "", nil
}

// produceSentinels writes one record to each partition, chosen explicitly.
func produceSentinels(ctx context.Context) error {
	producer, err := kgo.NewClient(connection(kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return err
	}
	defer producer.Close()
	records := make([]*kgo.Record, 0, sentinelCount)
	for partition := int32(0); partition < sentinelCount; partition++ {
		records = append(records, &kgo.Record{
			Topic:     topic,
			Partition: partition,
			Key:       []byte(fmt.Sprintf("sentinel-%d", partition)),
			Value:     []byte("sentinel"),
		})
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return producer.ProduceSync(ctx, records...).FirstErr()
}

func (s *scenario) describeGroup() (string, error) {
	described, err := s.admin.DescribeGroups(s.ctx, group)
	if err == nil {
		err = described.Error()
	}
	if err != nil {
		return "", err
	}
	g := described[group]
	if g.State != "Stable" {
		return "", fmt.Errorf("group state %s", g.State)
	}
	if len(g.Members) != 2 {
		return "", fmt.Errorf("%d members", len(g.Members))
	}
	if g.ProtocolType != "consumer" {
		return "", fmt.Errorf("protocol type %s", g.ProtocolType)
	}
	listed, err := s.admin.ListGroups(s.ctx)
	if err != nil {
		return "", err
	}
	if _, ok := listed[group]; !ok {
		return "", fmt.Errorf("ListGroups does not show the group")
	}
	assigned := make([][]int32, 0, len(g.Members))
	for _, m := range g.Members {
		var partitions []int32
		if consumer, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range consumer.Topics {
				if t.Topic == topic {
					partitions = append(partitions, t.Partitions...)
				}
			}
		}
		assigned = append(assigned, partitions)
	}
	summary, err := checkAssignments(assigned)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, %s, partitions %s", g.State, g.Protocol, summary), nil
}

func (s *scenario) listOffsets() (string, error) {
	starts, err := s.admin.ListStartOffsets(s.ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return "", err
	}
	ends, err := s.admin.ListEndOffsets(s.ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return "", err
	}
	var total int64
	latest := make([]string, 0, partitionCount)
	for partition := int32(0); partition < partitionCount; partition++ {
		start, _ := starts.Lookup(topic, partition)
		end, _ := ends.Lookup(topic, partition)
		if start.Offset != 0 {
			return "", fmt.Errorf("partition %d: earliest %d", partition, start.Offset)
		}
		total += end.Offset
		latest = append(latest, fmt.Sprint(end.Offset))
	}
	if total != s.produced {
		return "", fmt.Errorf("latest offsets add up to %d, produced %d", total, s.produced)
	}
	return "earliest 0, latest " + strings.Join(latest, "/"), nil
}

func (s *scenario) deleteTopic() (string, error) {
	deleted, err := s.admin.DeleteTopics(s.ctx, topic)
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		return "", err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		topics, err := s.admin.ListTopics(s.ctx)
		if err == nil && !topics.Has(topic) {
			return "", nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("topic still listed 10 s after DeleteTopics")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkAssignments checks DescribeGroups' assignments, one list of the topic's partitions per
// member: two members, each with some, every partition owned exactly once (see scenario.ts).
func checkAssignments(assigned [][]int32) (string, error) {
	if len(assigned) != 2 {
		return "", fmt.Errorf("%d member assignments", len(assigned))
	}
	owned := map[int32]int{}
	parts := make([]string, 0, len(assigned))
	for _, partitions := range assigned {
		if len(partitions) == 0 {
			return "", fmt.Errorf("assignments %v", assigned)
		}
		sorted := slices.Sorted(slices.Values(partitions))
		texts := make([]string, 0, len(sorted))
		for _, partition := range sorted {
			owned[partition]++
			texts = append(texts, fmt.Sprint(partition))
		}
		parts = append(parts, strings.Join(texts, "+"))
	}
	for partition := int32(0); partition < partitionCount; partition++ {
		if owned[partition] != 1 {
			return "", fmt.Errorf("assignments %v", assigned)
		}
	}
	if len(owned) != partitionCount {
		return "", fmt.Errorf("assignments %v", assigned)
	}
	return strings.Join(parts, " / "), nil
}
