// The KIP-848 consumer group protocol with franz-go (kgo.ServerSideBalancer, which it uses only
// when the broker serves ConsumerGroupHeartbeat v1): member a joins and gets every partition,
// b joins and the partitions are split (a gives its half up before b gets it), b leaves and a
// gets them all back, offsets are committed, and a later member c reads only what came after.
// ConsumerGroupDescribe, which answers only for a consumer-protocol group, shows the members.
// Environment: BOOTSTRAP, TOPIC, GROUP. Prints one line per event and "OK" last; exits 1 on
// failure.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	partitions  = 4
	firstBatch  = 40
	secondBatch = 12
	deadline    = 60 * time.Second
)

var (
	bootstrap = os.Getenv("BOOTSTRAP")
	topic     = os.Getenv("TOPIC")
	group     = os.Getenv("GROUP")
)

// seen maps each value read to the partition and offset it was read at, across members.
type seen struct {
	mu     sync.Mutex
	values map[string]string
	err    error
}

func (s *seen) add(r *kgo.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	where := fmt.Sprintf("%d@%d", r.Partition, r.Offset)
	if before, ok := s.values[string(r.Value)]; ok && before != where {
		s.err = fmt.Errorf("%s read at %s and %s", r.Value, before, where)
	}
	s.values[string(r.Value)] = where
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.values)
}

// member is one consumer polling in its own goroutine; owned is its current assignment.
type member struct {
	name   string
	client *kgo.Client
	mu     sync.Mutex
	owned  map[int32]bool
	stop   context.CancelFunc
	done   chan struct{}
}

func (m *member) update(parts map[string][]int32, owned bool, what string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	list := append([]int32(nil), parts[topic]...)
	sort.Slice(list, func(i, j int) bool { return list[i] < list[j] })
	for _, p := range list {
		if owned {
			m.owned[p] = true
		} else {
			delete(m.owned, p)
		}
	}
	fmt.Printf("%s %s %v\n", m.name, what, list)
}

func (m *member) ownedCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.owned)
}

func (m *member) ownedSet() map[int32]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := map[int32]bool{}
	for p := range m.owned {
		set[p] = true
	}
	return set
}

func startMember(name string, records *seen) (*member, error) {
	m := &member{name: name, owned: map[int32]bool{}, done: make(chan struct{})}
	client, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, p map[string][]int32) {
			m.update(p, true, "assigned")
		}),
		// Commits what was read before the partitions move on, as apps without auto-commit must.
		kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, p map[string][]int32) {
			if len(p[topic]) > 0 {
				if err := c.CommitUncommittedOffsets(ctx); err != nil {
					fmt.Printf("%s commit on revoke failed: %v\n", name, err)
				}
			}
			m.update(p, false, "revoked")
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, p map[string][]int32) {
			m.update(p, false, "lost")
		}),
	)
	if err != nil {
		return nil, err
	}
	m.client = client
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			client.PollFetches(ctx).EachRecord(records.add)
		}
	}()
	return m, nil
}

// leave stops polling, commits what was read and leaves the group.
func (m *member) leave() error {
	m.stop()
	<-m.done
	err := m.client.CommitUncommittedOffsets(context.Background())
	m.client.Close()
	return err
}

func waitUntil(what string, done func() bool) error {
	end := time.Now().Add(deadline)
	for !done() {
		if time.Now().After(end) {
			return fmt.Errorf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Println("done: " + what)
	return nil
}

func produce(ctx context.Context, client *kgo.Client, from, count int) error {
	var records []*kgo.Record
	for i := from; i < from+count; i++ {
		value := "v-" + strconv.Itoa(i)
		records = append(records, &kgo.Record{Topic: topic, Partition: int32(i % partitions),
			Key: []byte("k"), Value: []byte(value)})
	}
	return client.ProduceSync(ctx, records...).FirstErr()
}

// describe asks ConsumerGroupDescribe, which fails for a group of the classic protocol.
func describe(ctx context.Context, client *kgo.Client, members int) error {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, client)
	if err != nil {
		return err
	}
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return fmt.Errorf("ConsumerGroupDescribe: %+v", resp.Groups)
	}
	g := resp.Groups[0]
	if len(g.Members) != members || g.AssignorName != "uniform" {
		return fmt.Errorf("described %d members, assignor %s", len(g.Members), g.AssignorName)
	}
	fmt.Printf("described %s epoch %d, %d members\n", g.State, g.Epoch, len(g.Members))
	return nil
}

func split(a, b *member) bool {
	both := a.ownedSet()
	for p := range b.ownedSet() {
		if both[p] {
			return false
		}
		both[p] = true
	}
	return a.ownedCount() == partitions/2 && b.ownedCount() == partitions/2 && len(both) == partitions
}

func run(ctx context.Context, client *kgo.Client) error {
	admin := kadm.NewClient(client)
	if _, err := admin.CreateTopic(ctx, partitions, -1, nil, topic); err != nil {
		return err
	}
	if err := produce(ctx, client, 0, firstBatch); err != nil {
		return err
	}
	records := &seen{values: map[string]string{}}
	a, err := startMember("a", records)
	if err != nil {
		return err
	}
	if err := waitUntil("a owns every partition", func() bool { return a.ownedCount() == partitions }); err != nil {
		return err
	}
	b, err := startMember("b", records)
	if err != nil {
		return err
	}
	if err := waitUntil("a and b split the partitions", func() bool { return split(a, b) }); err != nil {
		return err
	}
	if err := describe(ctx, client, 2); err != nil {
		return err
	}
	if err := waitUntil("every record read", func() bool { return records.count() == firstBatch }); err != nil {
		return err
	}
	if err := b.leave(); err != nil {
		return fmt.Errorf("b's commit: %w", err)
	}
	if err := waitUntil("a owns all again", func() bool { return a.ownedCount() == partitions }); err != nil {
		return err
	}
	if err := a.leave(); err != nil {
		return fmt.Errorf("a's commit: %w", err)
	}
	if records.err != nil {
		return records.err
	}
	if err := produce(ctx, client, firstBatch, secondBatch); err != nil {
		return err
	}
	later := &seen{values: map[string]string{}}
	c, err := startMember("c", later)
	if err != nil {
		return err
	}
	if err := waitUntil("c reads the new records", func() bool { return later.count() == secondBatch }); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond) // anything redelivered arrives now, and the check sees it
	if err := c.leave(); err != nil {
		return err
	}
	for value := range later.values {
		if n, _ := strconv.Atoi(strings.TrimPrefix(value, "v-")); n < firstBatch || later.count() != secondBatch {
			return fmt.Errorf("redelivered %s after the commit (%d read)", value, later.count())
		}
	}
	return later.err
}

func main() {
	client, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*deadline)
	defer cancel()
	if err := run(ctx, client); err != nil {
		fmt.Println("FAILED: " + err.Error())
		os.Exit(1)
	}
	fmt.Println("OK")
}
