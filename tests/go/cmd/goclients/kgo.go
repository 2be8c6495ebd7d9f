package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func codecOf(name string) kgo.CompressionCodec {
	switch name {
	case "none":
		return kgo.NoCompression()
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	fail("unknown codec " + name)
	return kgo.NoCompression()
}

func newClient(bootstrap string, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers(bootstrap)...)}, opts...)...)
	check(err, "creating a kgo client")
	return cl
}

// errName is the Kafka error name of err (PRODUCER_FENCED), else its text.
func errName(err error) string {
	var kafkaErr *kerr.Error
	if errors.As(err, &kafkaErr) {
		return kafkaErr.Message
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

type kgoProduced struct {
	Produced   int   `json:"produced"`
	ProducerID int64 `json:"producer_id"`
	// Every offset the produce promises reported came back on the same record.
	OffsetsMatch bool   `json:"offsets_match"`
	Group        string `json:"group,omitempty"`
	*readBack
}

func kgoProduceConsume(ctx context.Context, bootstrap, topic, codec string, count int, protocol string) any {
	producer := newClient(bootstrap,
		kgo.ClientID("go-kgo-producer"),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), // with idempotence, kgo's default
		kgo.ProducerBatchCompression(codecOf(codec)),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	defer producer.Close()
	sent := map[string]int64{} // key -> offset the broker gave it
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < count; i++ {
		wg.Add(1)
		producer.Produce(ctx, &kgo.Record{Key: []byte(key(i)), Value: []byte(value(i))}, func(r *kgo.Record, err error) {
			defer wg.Done()
			check(err, "producing")
			mu.Lock()
			sent[string(r.Key)] = r.Offset
			mu.Unlock()
		})
	}
	wg.Wait()
	id, _, err := producer.ProducerID(ctx)
	check(err, "reading the producer id")
	result := kgoProduced{Produced: len(sent), ProducerID: id, readBack: newReadBack()}

	opts := []kgo.Opt{
		kgo.ClientID("go-kgo-consumer"),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if protocol != "none" {
		result.Group = fmt.Sprintf("go-kgo-%s-%s", protocol, topic)
		opts = append(opts, kgo.ConsumerGroup(result.Group), kgo.DisableAutoCommit())
		if protocol == "consumer" {
			// KIP-848: the broker's assignor (range) assigns the partitions.
			opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
		}
	}
	consumer := newClient(bootstrap, opts...)
	defer consumer.Close()
	for result.Consumed < count {
		fetches := consumer.PollFetches(ctx)
		fetches.EachError(func(t string, p int32, err error) { check(err, fmt.Sprintf("fetching %s-%d", t, p)) })
		fetches.EachRecord(func(r *kgo.Record) {
			result.add(r.Partition, r.Offset, string(r.Key), string(r.Value))
		})
	}
	result.OffsetsMatch = result.sameOffsets(sent)
	if protocol != "none" {
		check(consumer.CommitUncommittedOffsets(ctx), "committing")
	}
	return result
}

type kgoTransactionsResult struct {
	ReadCommitted   []string `json:"read_committed"`
	ReadUncommitted int      `json:"read_uncommitted"`
	Fenced          string   `json:"fenced"`
	// The offsets read_committed skipped: markers and aborted records.
	LastOffset int64 `json:"last_offset"`
}

func produceAll(ctx context.Context, cl *kgo.Client, topic, prefix string, n int) {
	for i := 0; i < n; i++ {
		rec := &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
		check(cl.ProduceSync(ctx, rec).FirstErr(), "producing "+prefix)
	}
}

func kgoTransactions(ctx context.Context, bootstrap, topic string) any {
	txnOpts := []kgo.Opt{kgo.TransactionalID("go-kgo-tx"), kgo.DefaultProduceTopic(topic)}
	first := newClient(bootstrap, txnOpts...)
	defer first.Close()
	check(first.BeginTransaction(), "beginning")
	produceAll(ctx, first, topic, "committed", 10)
	check(first.EndTransaction(ctx, kgo.TryCommit), "committing")
	check(first.BeginTransaction(), "beginning")
	produceAll(ctx, first, topic, "aborted", 5)
	check(first.EndTransaction(ctx, kgo.TryAbort), "aborting")
	check(first.BeginTransaction(), "beginning")
	produceAll(ctx, first, topic, "open", 3)

	// A second producer with the same transactional id fences the first and aborts its
	// open transaction.
	second := newClient(bootstrap, txnOpts...)
	defer second.Close()
	check(second.BeginTransaction(), "beginning the second")
	produceAll(ctx, second, topic, "second", 2)
	check(second.EndTransaction(ctx, kgo.TryCommit), "committing the second")
	result := kgoTransactionsResult{ReadCommitted: []string{}}
	fencedErr := first.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("late")}).FirstErr()
	if fencedErr == nil {
		fencedErr = first.EndTransaction(ctx, kgo.TryCommit)
	}
	result.Fenced = errName(fencedErr)

	for _, level := range []kgo.IsolationLevel{kgo.ReadCommitted(), kgo.ReadUncommitted()} {
		consumer := newClient(bootstrap, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		want := 12
		if level == kgo.ReadUncommitted() {
			want = 20
		}
		var got []string
		for len(got) < want {
			fetches := consumer.PollFetches(ctx)
			fetches.EachError(func(t string, p int32, err error) { check(err, "fetching") })
			fetches.EachRecord(func(r *kgo.Record) {
				got = append(got, string(r.Value))
				result.LastOffset = r.Offset
			})
		}
		consumer.Close()
		if level == kgo.ReadCommitted() {
			result.ReadCommitted = got
		} else {
			result.ReadUncommitted = len(got)
		}
	}
	return result
}

type kgoEOSResult struct {
	Copied    int      `json:"copied"`
	Output    []string `json:"output"`
	Committed bool     `json:"committed"`
}

func kgoEOS(ctx context.Context, bootstrap, input, output, group string, count int) any {
	loader := newClient(bootstrap, kgo.DefaultProduceTopic(input))
	produceAll(ctx, loader, input, "in", count)
	loader.Close()

	session, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(brokers(bootstrap)...),
		kgo.TransactionalID("go-kgo-eos"),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(input),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DefaultProduceTopic(output),
	)
	check(err, "creating the transact session")
	result := kgoEOSResult{Output: []string{}}
	// Two transactions: count/2 records, then the rest.
	for result.Copied < count {
		check(session.Begin(), "beginning")
		target := count / 2
		if result.Copied >= count/2 {
			target = count
		}
		for result.Copied < target {
			fetches := session.PollRecords(ctx, target-result.Copied)
			fetches.EachError(func(t string, p int32, err error) { check(err, "fetching") })
			fetches.EachRecord(func(r *kgo.Record) {
				out := &kgo.Record{Topic: output, Value: append([]byte("out-"), r.Value...)}
				check(session.ProduceSync(ctx, out).FirstErr(), "producing in the transaction")
				result.Copied++
			})
		}
		committed, err := session.End(ctx, kgo.TryCommit)
		check(err, "ending the transaction")
		result.Committed = committed
	}
	session.Close()

	reader := newClient(bootstrap, kgo.ConsumeTopics(output), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer reader.Close()
	for len(result.Output) < count {
		fetches := reader.PollFetches(ctx)
		fetches.EachError(func(t string, p int32, err error) { check(err, "fetching the output") })
		fetches.EachRecord(func(r *kgo.Record) { result.Output = append(result.Output, string(r.Value)) })
	}
	return result
}

// throttleHook records what kgo's KIP-219 hook is told, and how long each produce request
// waited before it was written (kgo holds a request back while a throttle lasts).
type throttleHook struct {
	mu         sync.Mutex
	throttles  []int64
	after      []bool
	writeWaits []int64
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, interval time.Duration, afterResponse bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.throttles = append(h.throttles, interval.Milliseconds())
	h.after = append(h.after, afterResponse)
}

func (h *throttleHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, wait, _ time.Duration, _ error) {
	if key != 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writeWaits = append(h.writeWaits, wait.Milliseconds())
}

type kgoThrottledResult struct {
	Sent      int     `json:"sent"`
	Throttles []int64 `json:"throttles_ms"`
	// Whether kgo applied each throttle after the response (KIP-219), holding back the
	// next request itself.
	AfterResponse []bool `json:"after_response"`
	// How long each produce request waited before kgo wrote it.
	WriteWaits []int64 `json:"write_waits_ms"`
}

func kgoThrottled(ctx context.Context, bootstrap, topic string, count int) any {
	hook := &throttleHook{}
	cl := newClient(bootstrap, kgo.ClientID("go-loader"), kgo.DefaultProduceTopic(topic),
		kgo.WithHooks(hook), kgo.ProducerBatchMaxBytes(1_000_000), kgo.ProducerBatchCompression(kgo.NoCompression()))
	payload := make([]byte, 100_000)
	for i := 0; i < count; i++ {
		check(cl.ProduceSync(ctx, &kgo.Record{Value: payload}).FirstErr(), "producing")
	}
	cl.Close()
	hook.mu.Lock()
	defer hook.mu.Unlock()
	return kgoThrottledResult{Sent: count, Throttles: hook.throttles, AfterResponse: hook.after, WriteWaits: hook.writeWaits}
}

type kgoFailoverResult struct {
	Produced     int  `json:"produced"`
	OffsetsMatch bool `json:"offsets_match"`
	*readBack
}

// kgoFailover produces the first half of COUNT keyed records, prints a line and waits for
// one on stdin (the test stops a broker meanwhile), produces the rest and reads all back.
func kgoFailover(ctx context.Context, bootstrap, topic string, count int) any {
	producer := newClient(bootstrap, kgo.ClientID("go-failover"), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	defer producer.Close()
	sent := map[string]int64{}
	produce := func(from, to int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := from; i < to; i++ {
			wg.Add(1)
			producer.Produce(ctx, &kgo.Record{Key: []byte(key(i)), Value: []byte(value(i))}, func(r *kgo.Record, err error) {
				defer wg.Done()
				check(err, "producing")
				mu.Lock()
				sent[string(r.Key)] = r.Offset
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	produce(0, count/2)
	fmt.Println(`{"phase": "half"}`)
	_, err := fmt.Scanln()
	check(err, "waiting for the test")
	produce(count/2, count)
	result := kgoFailoverResult{Produced: len(sent), readBack: newReadBack()}
	consumer := newClient(bootstrap, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer consumer.Close()
	for result.Consumed < count {
		fetches := consumer.PollFetches(ctx)
		fetches.EachError(func(t string, p int32, err error) { check(err, fmt.Sprintf("fetching %s-%d", t, p)) })
		fetches.EachRecord(func(r *kgo.Record) { result.add(r.Partition, r.Offset, string(r.Key), string(r.Value)) })
	}
	result.OffsetsMatch = result.sameOffsets(sent)
	return result
}

type kgoRebalanceResult struct {
	// What each member owned once the group settled: first alone, then with the second.
	Alone    []int32            `json:"alone"`
	Together map[string][]int32 `json:"together"`
	Consumed int                `json:"consumed"`
	Unique   int                `json:"unique"`
}

// owned tracks a member's partitions through kgo's assignment callbacks.
type owned struct {
	mu    sync.Mutex
	parts map[int32]bool
}

func (o *owned) list() []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := []int32{}
	for p := range o.parts {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (o *owned) opts() []kgo.Opt {
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
			o.mu.Lock()
			defer o.mu.Unlock()
			for _, ps := range assigned {
				for _, p := range ps {
					o.parts[p] = true
				}
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
			o.mu.Lock()
			defer o.mu.Unlock()
			for _, ps := range revoked {
				for _, p := range ps {
					delete(o.parts, p)
				}
			}
		}),
	}
}

// kgoRebalance: a member of a new group (PROTOCOL classic or consumer) owns every
// partition of TOPIC; a second member joins and the partitions are split between them.
// Both consume and commit; every record is read, none twice across the handover.
func kgoRebalance(ctx context.Context, bootstrap, topic, protocol string, count int) any {
	loader := newClient(bootstrap, kgo.DefaultProduceTopic(topic))
	for i := 0; i < count; i++ {
		check(loader.ProduceSync(ctx, &kgo.Record{Key: []byte(key(i)), Value: []byte(value(i))}).FirstErr(), "producing")
	}
	loader.Close()
	group := fmt.Sprintf("go-rebalance-%s-%s", protocol, topic)
	member := func(name string, o *owned) *kgo.Client {
		opts := append(o.opts(), kgo.ClientID(name), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitMarks(),
			kgo.AutoCommitInterval(100*time.Millisecond), kgo.HeartbeatInterval(500*time.Millisecond))
		if protocol == "consumer" {
			opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
		}
		return newClient(bootstrap, opts...)
	}
	seen := map[string]int{}
	var seenMu sync.Mutex
	poll := func(cl *kgo.Client, stop <-chan struct{}, done *sync.WaitGroup) {
		defer done.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			pollCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fetches := cl.PollFetches(pollCtx)
			cancel()
			fetches.EachRecord(func(r *kgo.Record) {
				seenMu.Lock()
				seen[string(r.Key)]++
				seenMu.Unlock()
				cl.MarkCommitRecords(r)
			})
			cl.AllowRebalance()
		}
	}
	settled := func(want func() bool) {
		for !want() {
			select {
			case <-ctx.Done():
				fail("the group did not settle")
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	result := kgoRebalanceResult{Together: map[string][]int32{}}
	first, second := &owned{parts: map[int32]bool{}}, &owned{parts: map[int32]bool{}}
	a := member("go-member-a", first)
	stop := make(chan struct{})
	var polling sync.WaitGroup
	polling.Add(1)
	go poll(a, stop, &polling)
	settled(func() bool { return len(first.list()) == 6 })
	result.Alone = first.list()
	b := member("go-member-b", second)
	polling.Add(1)
	go poll(b, stop, &polling)
	settled(func() bool { return len(first.list()) == 3 && len(second.list()) == 3 })
	result.Together["a"], result.Together["b"] = first.list(), second.list()
	settled(func() bool {
		seenMu.Lock()
		defer seenMu.Unlock()
		return len(seen) == count
	})
	close(stop)
	polling.Wait()
	for _, cl := range []*kgo.Client{a, b} {
		check(cl.CommitMarkedOffsets(ctx), "committing")
	}
	a.Close()
	b.Close()
	for _, n := range seen {
		result.Consumed += n
	}
	result.Unique = len(seen)
	return result
}
