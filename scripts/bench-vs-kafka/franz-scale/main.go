// franz-go group consumer for the partition scale workloads of scripts/bench-vs-kafka.ts: one
// consumer in a new group subscribed to every topic ^PREFIX[0-9]+$ by regular expression,
// reading from the earliest offsets until it has RECORDS records.
//
//	franz-scale BROKERS PREFIX RECORDS GROUP
//
// franz-go looks up the assigned partitions' offsets with one OffsetFetch and one ListOffsets
// request per broker and keeps one Fetch in flight per broker, so its start-up on 10,000
// partitions is milliseconds of client CPU, where librdkafka 2.0's costs seconds
// (docs/scaling.md). The clock starts at the assignment (the OnPartitionsAssigned callback), as
// rdkafka-scale's does: the group's join is not counted, the offset look-ups and every fetch are.
// One JSON line goes to stdout with the same keys as rdkafka-scale consume.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// As rdkafka-scale: give up when no record came for this long.
const idleTimeout = 60 * time.Second

type result struct {
	Records           int64   `json:"records"`
	Bytes             int64   `json:"bytes"`
	Seconds           float64 `json:"seconds"`
	Failed            int64   `json:"failed"`
	AssignedSeconds   float64 `json:"assigned_seconds"`
	FirstRecordSecond float64 `json:"first_record_seconds"`
	AfterFirstSeconds float64 `json:"after_first_seconds"`
	ClientCPUSeconds  float64 `json:"client_cpu_seconds"`
}

func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return -1
	}
	seconds := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return seconds(usage.Utime) + seconds(usage.Stime)
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: franz-scale BROKERS PREFIX RECORDS GROUP")
		os.Exit(2)
	}
	records, err := strconv.ParseInt(os.Args[3], 10, 64)
	if err != nil || records <= 0 {
		fmt.Fprintln(os.Stderr, "franz-scale: RECORDS must be a positive integer")
		os.Exit(2)
	}
	var assignedMu sync.Mutex
	var assignedAt time.Time
	client, err := kgo.NewClient(
		kgo.SeedBrokers(os.Args[1]),
		kgo.ConsumerGroup(os.Args[4]),
		kgo.ConsumeRegex(),
		kgo.ConsumeTopics("^"+os.Args[2]+"[0-9]+$"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		// The Java consumer's and librdkafka's default; franz-go's is 5 s.
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			assignedMu.Lock()
			if assignedAt.IsZero() {
				assignedAt = time.Now()
			}
			assignedMu.Unlock()
		}),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "franz-scale:", err)
		os.Exit(1)
	}
	subscribed := time.Now()
	var count, bytes int64
	var first, last time.Time
	lastProgress := subscribed
	for count < records {
		ctx, cancel := context.WithTimeout(context.Background(), idleTimeout)
		fetches := client.PollFetches(ctx)
		cancel()
		fetches.EachError(func(topic string, partition int32, err error) {
			if err != context.DeadlineExceeded {
				fmt.Fprintf(os.Stderr, "consume error %s[%d]: %v\n", topic, partition, err)
			}
		})
		n := int64(0)
		fetches.EachRecord(func(r *kgo.Record) {
			n++
			bytes += int64(len(r.Value))
		})
		if n == 0 {
			if time.Since(lastProgress) > idleTimeout {
				break
			}
			continue
		}
		last = time.Now()
		lastProgress = last
		if count == 0 {
			first = last
		}
		count += n
	}
	assignedMu.Lock()
	assigned := assignedAt
	assignedMu.Unlock()
	out := result{Records: count, Bytes: bytes, Failed: records - count, AssignedSeconds: -1,
		FirstRecordSecond: -1, ClientCPUSeconds: cpuSeconds()}
	if !assigned.IsZero() {
		out.AssignedSeconds = assigned.Sub(subscribed).Seconds()
	}
	if count > 0 {
		out.Seconds = last.Sub(assigned).Seconds()
		out.FirstRecordSecond = first.Sub(subscribed).Seconds()
		out.AfterFirstSeconds = last.Sub(first).Seconds()
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
	client.Close()
	if count < records {
		os.Exit(1)
	}
}
