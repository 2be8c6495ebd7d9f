package main

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kadmErrors: what kadm reports for requests Kafka refuses, as Kafka's error names (with
// the broker's message where Kafka sends one), and a few lookups by time and epoch.
func kadmErrors(ctx context.Context, bootstrap string) any {
	cl := newClient(bootstrap, kgo.ClientID("go-kadm-errors"))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	r := map[string]any{}
	const topic = "go-errors"
	created, err := adm.CreateTopic(ctx, 3, 3, nil, topic)
	check(firstErr(err, created.Err), "creating "+topic)
	producer := newClient(bootstrap, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := 0; i < 5; i++ {
		record := &kgo.Record{Partition: 0, Value: []byte(value(i)), Timestamp: start.Add(time.Duration(i) * time.Second)}
		check(producer.ProduceSync(ctx, record).FirstErr(), "producing")
	}
	producer.Close()

	withMessage := func(err error, message string) string {
		if message == "" {
			return errName(err)
		}
		return errName(err) + ": " + message
	}
	fewer, err := adm.UpdatePartitions(ctx, 2, topic)
	check(err, "updating partitions")
	r["fewer_partitions"] = withMessage(fewer[topic].Err, fewer[topic].ErrMessage)
	unknownConfig, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "no.such.config", Value: ptr("1")}}, topic)
	check(err, "altering configs")
	r["unknown_config"] = withMessage(unknownConfig[0].Err, unknownConfig[0].ErrMessage)
	missingConfigs, err := adm.DescribeTopicConfigs(ctx, "no-such-topic")
	check(err, "describing configs")
	r["configs_of_missing_topic"] = errName(missingConfigs[0].Err)
	beyond, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 99}}})
	check(err, "deleting records")
	r["delete_records_beyond_end"] = errName(beyond[topic][0].Err)
	gone, err := adm.DeleteTopics(ctx, "no-such-topic")
	check(err, "deleting topics")
	r["delete_missing_topic"] = errName(gone["no-such-topic"].Err)
	groups, err := adm.DeleteGroups(ctx, "no-such-group")
	check(err, "deleting groups")
	r["delete_missing_group"] = errName(groups["no-such-group"].Err)
	txns, err := adm.DescribeTransactions(ctx, "no-such-txn")
	check(err, "describing transactions")
	r["describe_missing_transaction"] = errName(txns["no-such-txn"].Err)
	elected, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
	check(err, "electing leaders")
	r["elect_preferred_leader"] = errName(elected[topic][0].Err)
	badIP, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: ptr("not an ip")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 5}},
	}})
	check(err, "altering client quotas")
	r["quota_for_a_bad_ip"] = withMessage(badIP[0].Err, badIP[0].ErrMessage)
	_, err = adm.DescribeDelegationTokens(ctx)
	r["delegation_tokens_on_plaintext"] = errName(err)
	validated, err := adm.ValidateCreateTopics(ctx, 2, 1, nil, "go-validated")
	check(err, "validating a topic creation")
	check(validated["go-validated"].Err, "validating a topic creation")
	listed, err := adm.ListTopics(ctx)
	check(err, "listing topics")
	r["validated_topic_created"] = listed.Has("go-validated")

	after, err := adm.ListOffsetsAfterMilli(ctx, start.Add(2500*time.Millisecond).UnixMilli(), topic)
	check(err, "listing offsets by time")
	r["offset_after_time"] = after[topic][0].Offset
	maxTimestamp, err := adm.ListMaxTimestampOffsets(ctx, topic)
	check(err, "listing max timestamp offsets")
	r["max_timestamp"] = []int64{maxTimestamp[topic][0].Offset, maxTimestamp[topic][0].Timestamp - start.UnixMilli()}
	r["max_timestamp_empty_partition"] = maxTimestamp[topic][1].Offset
	epochs, err := adm.OffsetForLeaderEpoch(ctx, kadm.OffsetForLeaderEpochRequest{topic: {0: 0}})
	check(err, "offset for leader epoch")
	r["end_of_epoch_0"] = epochs[topic][0].EndOffset
	return r
}
