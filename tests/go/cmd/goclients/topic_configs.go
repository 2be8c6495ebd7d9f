package main

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoTopicConfigs: what a producer and a consumer notice of a topic's configs:
// max.message.bytes refuses a larger batch, LogAppendTime replaces the producer's
// timestamps with the broker's.
func kgoTopicConfigs(ctx context.Context, bootstrap string) any {
	cl := newClient(bootstrap, kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordRetries(1), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for topic, configs := range map[string]map[string]*string{
		"go-small":      {"max.message.bytes": ptr("1000")},
		"go-log-append": {"message.timestamp.type": ptr("LogAppendTime")},
	} {
		created, err := adm.CreateTopic(ctx, 1, 3, configs, topic)
		check(firstErr(err, created.Err), "creating "+topic)
	}
	r := map[string]any{}
	small := cl.ProduceSync(ctx, &kgo.Record{Topic: "go-small", Value: make([]byte, 500)}).FirstErr()
	large := cl.ProduceSync(ctx, &kgo.Record{Topic: "go-small", Value: make([]byte, 2000)}).FirstErr()
	r["small"], r["large"] = errName(small), errName(large)

	sentAt := time.Now().Add(-24 * time.Hour).Truncate(time.Millisecond)
	before := time.Now()
	produced := cl.ProduceSync(ctx, &kgo.Record{Topic: "go-log-append", Value: []byte("x"), Timestamp: sentAt})
	check(produced.FirstErr(), "producing")
	after := time.Now()
	cl.AddConsumeTopics("go-log-append")
	fetches := cl.PollFetches(ctx)
	check(fetches.Err(), "fetching")
	record := fetches.Records()[0]
	r["fetched_timestamp_type"] = record.Attrs.TimestampType()
	// kgo leaves the produce response's log_append_time unread; the fetched record has it.
	r["fetched_timestamp_is_the_brokers"] = !record.Timestamp.Before(before.Truncate(time.Millisecond)) &&
		!record.Timestamp.After(after)
	return r
}
