package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareEarliest sets the share group's share.auto.offset.reset to earliest with an
// IncrementalAlterConfigs on the GROUP resource (kadm has no call for group configs), so
// that its members read the records produced before they joined.
func shareEarliest(ctx context.Context, cl *kgo.Client, group string) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	resource := kmsg.NewIncrementalAlterConfigsRequestResource()
	resource.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	resource.ResourceName = group
	config := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	config.Name = "share.auto.offset.reset"
	config.Op = kmsg.IncrementalAlterConfigOpSet
	earliest := "earliest"
	config.Value = &earliest
	resource.Configs = append(resource.Configs, config)
	req.Resources = append(req.Resources, resource)
	resp, err := req.RequestWith(ctx, cl)
	check(err, "altering the share group's config")
	for _, r := range resp.Resources {
		check(kerr.ErrorForCode(r.ErrorCode), "altering the share group's config")
	}
}

// shareProduce sends values[i] under key(i) to topic in one ProduceSync and waits for
// every one.
func shareProduce(ctx context.Context, cl *kgo.Client, topic string, values []string) {
	records := make([]*kgo.Record, len(values))
	for i, v := range values {
		records[i] = &kgo.Record{Topic: topic, Key: []byte(key(i)), Value: []byte(v)}
	}
	check(cl.ProduceSync(ctx, records...).FirstErr(), "producing")
}

func shareMember(bootstrap, group, topic, clientID string, opts ...kgo.Opt) *kgo.Client {
	return newClient(bootstrap, append([]kgo.Opt{
		kgo.ClientID(clientID), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
	}, opts...)...)
}

// waitFor polls want every 50 ms until it holds, failing with what was awaited once ctx ends.
func waitFor(ctx context.Context, what string, want func() bool) {
	for !want() {
		select {
		case <-ctx.Done():
			fail("waiting for " + what + ": " + ctx.Err().Error())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type shareDescribed struct {
	State       string `json:"state"`
	Members     int    `json:"members"`
	EpochsMatch bool   `json:"epochs_match"` // every member at the group's epoch
	Assigned    int    `json:"assigned"`     // partitions assigned to some member
}

func describeShare(ctx context.Context, adm *kadm.Client, group string) shareDescribed {
	d, err := tryDescribeShare(ctx, adm, group)
	check(err, "describing the share group")
	return d
}

// tryDescribeShare is describeShare returning the error (GROUP_ID_NOT_FOUND before the
// first member's heartbeat).
func tryDescribeShare(ctx context.Context, adm *kadm.Client, group string) (shareDescribed, error) {
	described, err := adm.DescribeShareGroups(ctx, group)
	if err != nil {
		return shareDescribed{}, err
	}
	g := described[group]
	if g.Err != nil {
		return shareDescribed{}, g.Err
	}
	d := shareDescribed{State: g.GroupState, Members: len(g.Members), EpochsMatch: true}
	for _, m := range g.Members {
		d.EpochsMatch = d.EpochsMatch && m.MemberEpoch == g.GroupEpoch
	}
	for _, partitions := range g.AssignedPartitions() {
		d.Assigned += len(partitions)
	}
	return d, nil
}

type shareOffset struct {
	Start int64 `json:"start"`
	Lag   int64 `json:"lag"`
}

// shareOffsets is DescribeShareGroupOffsets for the group: per "topic-partition" the
// share-partition start offset and the lag.
func shareOffsets(ctx context.Context, adm *kadm.Client, group string) map[string]shareOffset {
	described, err := adm.DescribeShareGroupOffsets(ctx, group)
	check(err, "describing the share group's offsets")
	g := described[group]
	check(g.Err, "describing the share group's offsets")
	offsets := map[string]shareOffset{}
	for topic, partitions := range g.Offsets {
		for partition, o := range partitions {
			check(o.Err, "describing the share group's offsets")
			offsets[fmt.Sprintf("%s-%d", topic, partition)] = shareOffset{Start: o.StartOffset, Lag: o.Lag}
		}
	}
	return offsets
}

type shareConsumeResult struct {
	Distinct          int                    `json:"distinct"`
	Duplicates        int                    `json:"duplicates"`
	PerMember         []int                  `json:"per_member"`
	MaxDeliveryCount  int32                  `json:"max_delivery_count"`
	Matching          bool                   `json:"matching"`
	Described         shareDescribed         `json:"described"`
	StateAfterClose   string                 `json:"state_after_close"`
	OffsetsAfterClose map[string]shareOffset `json:"offsets_after_close"`
	Seconds           float64                `json:"seconds"`
}

// kgoShareConsume: MEMBERS franz-go share consumers join GROUP on TOPIC; once the group
// is stable with every partition assigned, COUNT keyed records are produced and the
// members read them, accepting each implicitly (kgo accepts a poll's records on the next
// poll). After every record was seen they poll a second more (a record delivered twice
// would show), accept and flush what they hold, and close.
func kgoShareConsume(ctx context.Context, bootstrap, topic, group string, members, count int) any {
	admin := newClient(bootstrap, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	defer admin.Close()
	adm := kadm.NewClient(admin)
	shareEarliest(ctx, admin, group)
	topics, err := adm.ListTopics(ctx, topic)
	check(err, "listing the topic")
	check(topics.Error(), "listing the topic")
	partitions := len(topics[topic].Partitions)

	result := shareConsumeResult{PerMember: make([]int, members), Matching: true}
	seen := map[string]int{}
	var mu sync.Mutex
	clients := make([]*kgo.Client, members)
	for i := range clients {
		clients[i] = shareMember(bootstrap, group, topic, fmt.Sprintf("go-share-%d", i))
	}
	stop := make(chan struct{})
	var polling sync.WaitGroup
	for i, cl := range clients {
		polling.Add(1)
		go func() {
			defer polling.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				pollCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				fetches := cl.PollRecords(pollCtx, 200)
				cancel()
				fetches.EachError(func(t string, p int32, err error) {
					if err != context.DeadlineExceeded && err != context.Canceled {
						fail(fmt.Sprintf("share fetch of %s[%d]: %v", t, p, err))
					}
				})
				mu.Lock()
				fetches.EachRecord(func(r *kgo.Record) {
					seen[string(r.Key)]++
					result.PerMember[i]++
					result.MaxDeliveryCount = max(result.MaxDeliveryCount, r.DeliveryCount())
					var n int
					if _, err := fmt.Sscanf(string(r.Key), "key-%d", &n); err != nil || string(r.Value) != value(n) {
						result.Matching = false
					}
				})
				mu.Unlock()
			}
		}()
	}
	waitFor(ctx, "a stable share group with every partition assigned", func() bool {
		d, err := tryDescribeShare(ctx, adm, group)
		return err == nil && d.State == "Stable" && d.Members == members && d.EpochsMatch && d.Assigned >= partitions
	})
	start := time.Now()
	values := make([]string, count)
	for i := range values {
		values[i] = value(i)
	}
	shareProduce(ctx, admin, topic, values)
	waitFor(ctx, "every record", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == count
	})
	result.Seconds = time.Since(start).Seconds()
	time.Sleep(time.Second)
	close(stop)
	polling.Wait()
	result.Described = describeShare(ctx, adm, group)
	for _, cl := range clients {
		cl.MarkAcks(kgo.AckAccept)
		check(cl.FlushAcks(ctx), "flushing the acknowledgements")
		cl.Close()
	}
	for _, n := range seen {
		result.Distinct++
		result.Duplicates += n - 1
	}
	result.StateAfterClose = describeShare(ctx, adm, group).State
	result.OffsetsAfterClose = shareOffsets(ctx, adm, group)
	return result
}

type shareAcksResult struct {
	DeliveryCounts map[string][]int32     `json:"delivery_counts"`
	AckErrors      []string               `json:"ack_errors"`
	Offsets        map[string]shareOffset `json:"offsets_after_close"`
}

// kgoShareAcks: one member acknowledges explicitly with Record.Ack: v0 and v1 are
// released on their first delivery and accepted on the next, v2 and v3 rejected, v4
// accepted, and v5 released every time, until the delivery count limit archives it. The
// member polls two seconds past the last delivery it waits for; every delivery of every
// record is reported with its delivery count.
func kgoShareAcks(ctx context.Context, bootstrap, topic, group string) any {
	admin := newClient(bootstrap)
	defer admin.Close()
	adm := kadm.NewClient(admin)
	shareEarliest(ctx, admin, group)
	shareProduce(ctx, admin, topic, []string{"v0", "v1", "v2", "v3", "v4", "v5"})

	result := shareAcksResult{DeliveryCounts: map[string][]int32{}, AckErrors: []string{}}
	var mu sync.Mutex
	cl := shareMember(bootstrap, group, topic, "go-share-acks",
		kgo.ShareAckCallback(func(_ *kgo.Client, results kgo.ShareAckResults) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range results {
				if r.Err != nil {
					result.AckErrors = append(result.AckErrors, r.Err.Error())
				}
			}
		}))
	done := func() bool {
		c := result.DeliveryCounts
		return len(c["v0"]) == 2 && len(c["v1"]) == 2 && len(c["v2"]) == 1 && len(c["v3"]) == 1 &&
			len(c["v4"]) == 1 && len(c["v5"]) == 3
	}
	var quiet time.Time // when done first held
	for quiet.IsZero() || time.Since(quiet) < 2*time.Second {
		if ctx.Err() != nil {
			fail(fmt.Sprintf("deliveries so far %v: %v", result.DeliveryCounts, ctx.Err()))
		}
		pollCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fetches := cl.PollRecords(pollCtx, 100)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			count := r.DeliveryCount()
			result.DeliveryCounts[v] = append(result.DeliveryCounts[v], count)
			switch {
			case v == "v2" || v == "v3":
				r.Ack(kgo.AckReject)
			case v == "v5" || ((v == "v0" || v == "v1") && count == 1):
				r.Ack(kgo.AckRelease)
			default:
				r.Ack(kgo.AckAccept)
			}
		})
		if fetches.NumRecords() > 0 {
			check(cl.FlushAcks(ctx), "flushing the acknowledgements")
		}
		if quiet.IsZero() && done() {
			quiet = time.Now()
		}
	}
	cl.Close()
	sort.Strings(result.AckErrors)
	result.Offsets = shareOffsets(ctx, adm, group)
	return result
}

type shareExpiryResult struct {
	First  map[string][]int32 `json:"first"`
	Second map[string][]int32 `json:"second"`
}

// kgoShareLockExpiry: member A polls the three records of TOPIC and holds them without
// acknowledging (its fetching paused, so it acquires nothing more); once their
// acquisition locks expire (group.share.record.lock.duration.ms) member B is delivered
// them with delivery count 2 and accepts them. A then closes.
func kgoShareLockExpiry(ctx context.Context, bootstrap, topic, group string) any {
	admin := newClient(bootstrap)
	defer admin.Close()
	shareEarliest(ctx, admin, group)
	shareProduce(ctx, admin, topic, []string{"v0", "v1", "v2"})
	result := shareExpiryResult{First: map[string][]int32{}, Second: map[string][]int32{}}
	read := func(cl *kgo.Client, into map[string][]int32, want int) {
		n := 0
		waitFor(ctx, "three records", func() bool {
			pollCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fetches := cl.PollRecords(pollCtx, 100)
			cancel()
			fetches.EachRecord(func(r *kgo.Record) {
				into[string(r.Value)] = append(into[string(r.Value)], r.DeliveryCount())
				n++
			})
			return n >= want
		})
	}
	// kgo closes a connection idle for ConnIdleTimeout (20 s), and the broker releases what
	// a closed share session held: keep it open past the lock duration, so that the lock
	// expiring is what hands the records over.
	a := shareMember(bootstrap, group, topic, "go-share-holder", kgo.ConnIdleTimeout(time.Minute))
	read(a, result.First, 3)
	a.PauseFetchTopics(topic)
	b := shareMember(bootstrap, group, topic, "go-share-taker")
	read(b, result.Second, 3)
	b.MarkAcks(kgo.AckAccept)
	check(b.FlushAcks(ctx), "flushing the acknowledgements")
	b.Close()
	a.Close()
	return result
}
