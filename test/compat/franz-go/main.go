// The compatibility scenario with franz-go (kgo and kadm), as an ordinary user writes it: default
// client options (so the producer is idempotent), a consumer group per member, kadm for topics,
// groups and offsets. Same contract as test/compat/support/scenario.ts: one JSON line per step.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	partitionCount  = 3
	recordsPerCodec = 10_000
	keyCount        = 100
	sentinelCount   = partitionCount
	consumeTimeout  = 90 * time.Second
	restartTimeout  = 45 * time.Second
)

var (
	bootstrap = os.Getenv("BOOTSTRAP")
	topic     = os.Getenv("TOPIC")
	group     = os.Getenv("GROUP")
	codecs    = []string{"gzip", "zstd"}
	dependsOn = map[string][]string{
		"produce-gzip":              {"create-topic"},
		"produce-zstd":              {"create-topic"},
		"consume-group":             {"produce-gzip", "produce-zstd"},
		"commit":                    {"consume-group"},
		"restart-no-redelivery":     {"consume-group", "commit"},
		"describe-group":            {"restart-no-redelivery"},
		"list-offsets":              {"produce-gzip", "produce-zstd"},
		"transactions":              {"create-topic"},
		"consume-transform-produce": {"transactions"},
		"delete-topic":              {"create-topic"},
	}
	failed   = map[string]bool{}
	valueSeq = regexp.MustCompile(`^value (\d+) of `)
)

func emit(line map[string]any) {
	encoded, _ := json.Marshal(line)
	fmt.Println(string(encoded))
}

// run runs one step and prints its line; a step whose dependency failed is skipped.
func run(step string, body func() (string, error)) {
	if only := os.Getenv("ONLY_STEPS"); only != "" && !slices.Contains(strings.Split(only, ","), step) {
		return
	}
	for _, dependency := range dependsOn[step] {
		if failed[dependency] {
			failed[step] = true
			emit(map[string]any{"step": step, "skipped": "skipped (after " + dependency + " failed)"})
			return
		}
	}
	started := time.Now()
	detail, err := body()
	ms := time.Since(started).Milliseconds()
	if err != nil {
		failed[step] = true
		emit(map[string]any{"step": step, "ok": false, "ms": ms, "error": err.Error()})
		return
	}
	line := map[string]any{"step": step, "ok": true, "ms": ms}
	if detail != "" {
		line["detail"] = detail
	}
	emit(line)
}

func keyFor(seq int) string { return fmt.Sprintf("key-%d", seq%keyCount) }
func valueFor(seq int) string {
	return fmt.Sprintf("value %d of %s %s", seq, keyFor(seq), strings.Repeat("abcdefghij", 8))
}
func codecFor(seq int) string {
	if seq < recordsPerCodec {
		return "gzip"
	}
	return "zstd"
}

func recordsFor(codec string) []*kgo.Record {
	first := 0
	if codec == "zstd" {
		first = recordsPerCodec
	}
	records := make([]*kgo.Record, 0, recordsPerCodec)
	for seq := first; seq < first+recordsPerCodec; seq++ {
		records = append(records, &kgo.Record{
			Topic: topic,
			Key:   []byte(keyFor(seq)),
			Value: []byte(valueFor(seq)),
			Headers: []kgo.RecordHeader{
				{Key: "seq", Value: []byte(strconv.Itoa(seq))},
				{Key: "codec", Value: []byte(codec)},
			},
		})
	}
	return records
}

type consumed struct {
	member    int
	partition int32
	key       string
	value     string
	headers   [][2]string
}

func isSentinel(record consumed) bool { return strings.HasPrefix(record.key, "sentinel-") }

// verifyConsumed returns the problems with what the group consumed; see scenario.ts.
func verifyConsumed(records []consumed) []string {
	var problems []string
	seen := map[int]bool{}
	lastSeq := map[string]int{}
	partitionOfKey := map[string]int32{}
	perMember := map[int]int{}
	for _, record := range records {
		perMember[record.member]++
		match := valueSeq.FindStringSubmatch(record.value)
		if match == nil {
			problems = append(problems, "unexpected record key="+record.key)
			continue
		}
		seq, _ := strconv.Atoi(match[1])
		if record.key != keyFor(seq) || record.value != valueFor(seq) {
			problems = append(problems, fmt.Sprintf("record %d: key %s or value differs", seq, record.key))
		}
		want := [][2]string{{"seq", strconv.Itoa(seq)}, {"codec", codecFor(seq)}}
		if fmt.Sprint(record.headers) != fmt.Sprint(want) {
			problems = append(problems, fmt.Sprintf("record %d: headers %v", seq, record.headers))
		}
		if seen[seq] {
			problems = append(problems, fmt.Sprintf("record %d delivered twice", seq))
		}
		seen[seq] = true
		memberKey := fmt.Sprintf("%d/%s", record.member, record.key)
		if last, ok := lastSeq[memberKey]; ok && seq <= last {
			problems = append(problems, fmt.Sprintf("key %s: record %d after %d", record.key, seq, last))
		}
		lastSeq[memberKey] = seq
		if partition, ok := partitionOfKey[record.key]; ok && partition != record.partition {
			problems = append(problems,
				fmt.Sprintf("key %s in partitions %d and %d", record.key, partition, record.partition))
		}
		partitionOfKey[record.key] = record.partition
	}
	if expected := len(codecs) * recordsPerCodec; len(seen) != expected {
		problems = append(problems, fmt.Sprintf("%d of %d records missing", expected-len(seen), expected))
	}
	for member := 0; member < 2; member++ {
		if perMember[member] == 0 {
			problems = append(problems, fmt.Sprintf("member %d received no records", member))
		}
	}
	if len(problems) > 5 {
		problems = append(problems[:5], fmt.Sprintf("... %d problems in all", len(problems)))
	}
	return problems
}

// member is one consumer of the group, polling in its own goroutine until stopped.
type member struct {
	index    int
	client   *kgo.Client
	mu       sync.Mutex
	records  []consumed
	assigned bool
	lastErr  error
	stop     context.CancelFunc
	done     chan struct{}
}

func startMember(index int) (*member, error) {
	m := &member{index: index, done: make(chan struct{})}
	client, err := kgo.NewClient(connection(
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			m.mu.Lock()
			m.assigned = true
			m.mu.Unlock()
		}),
	)...)
	if err != nil {
		return nil, err
	}
	m.client = client
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go m.poll(ctx)
	return m, nil
}

func (m *member) poll(ctx context.Context) {
	defer close(m.done)
	for ctx.Err() == nil {
		fetches := m.client.PollFetches(ctx)
		m.mu.Lock()
		for _, fetchErr := range fetches.Errors() {
			if !errors.Is(fetchErr.Err, context.Canceled) {
				m.lastErr = fetchErr.Err
			}
		}
		fetches.EachRecord(func(record *kgo.Record) {
			headers := make([][2]string, 0, len(record.Headers))
			for _, header := range record.Headers {
				headers = append(headers, [2]string{header.Key, string(header.Value)})
			}
			m.records = append(m.records,
				consumed{m.index, record.Partition, string(record.Key), string(record.Value), headers})
		})
		m.mu.Unlock()
	}
}

// close stops polling and leaves the group.
func (m *member) close() {
	m.stop()
	<-m.done
	m.client.Close()
}

func snapshot(members []*member) (records []consumed, allAssigned bool, lastErr error) {
	allAssigned = true
	for _, m := range members {
		m.mu.Lock()
		records = append(records, m.records...)
		allAssigned = allAssigned && m.assigned
		if m.lastErr != nil {
			lastErr = m.lastErr
		}
		m.mu.Unlock()
	}
	return records, allAssigned, lastErr
}

func waitFor(what string, timeout time.Duration, members []*member, done func() bool) error {
	deadline := time.Now().Add(timeout)
	for !done() {
		if time.Now().After(deadline) {
			_, _, lastErr := snapshot(members)
			if lastErr != nil {
				return fmt.Errorf("timed out after %v waiting for %s; last client error: %w",
					timeout, what, lastErr)
			}
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func startMembers() ([]*member, error) {
	var members []*member
	for index := 0; index < 2; index++ {
		m, err := startMember(index)
		if err != nil {
			return members, err
		}
		members = append(members, m)
	}
	return members, nil
}

func closeMembers(members []*member) {
	for _, m := range members {
		m.close()
	}
}

func franzVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/twmb/franz-go" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

func main() {
	emit(map[string]any{"client": "franz-go", "version": franzVersion()})
	ctx := context.Background()
	adminClient, err := kgo.NewClient(connection()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	admin := kadm.NewClient(adminClient)
	defer admin.Close()
	s := &scenario{ctx: ctx, admin: admin}
	s.run()
}
