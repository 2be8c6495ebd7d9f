package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/segmentio/kafka-go"
)

// kafkaGoErrName is the Kafka error name of err (kafka-go's Error titles, upper-cased
// with underscores as Kafka writes them), else its text.
func kafkaGoErrName(err error) string {
	var kafkaErr kafka.Error
	if errors.As(err, &kafkaErr) {
		switch kafkaErr {
		case kafka.TopicAlreadyExists:
			return "TOPIC_ALREADY_EXISTS"
		case kafka.InvalidPartitionNumber:
			return "INVALID_PARTITIONS"
		case kafka.InvalidReplicationFactor:
			return "INVALID_REPLICATION_FACTOR"
		}
		return kafkaErr.Title()
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

type kafkaGoResult struct {
	Created      string           `json:"created"`
	Duplicate    string           `json:"duplicate"`
	BadPartition string           `json:"bad_partitions"`
	Brokers      []int            `json:"brokers"`
	Replicas     []int            `json:"replicas"`
	Written      int              `json:"written"`
	FirstOffsets map[string]int64 `json:"first_offsets"`
	EndOffsets   map[string]int64 `json:"end_offsets"`
	Group        string           `json:"group"`
	Committed    map[string]int64 `json:"committed"`
	*readBack
}

func kafkaGoClients(ctx context.Context, bootstrap, topic string, count int) any {
	addr := kafka.TCP(brokers(bootstrap)...)
	client := &kafka.Client{Addr: addr, Timeout: 30 * time.Second}
	result := kafkaGoResult{readBack: newReadBack(), FirstOffsets: map[string]int64{},
		EndOffsets: map[string]int64{}, Committed: map[string]int64{}}

	// Client: CreateTopics (a new topic, the same again, an invalid one) and Metadata.
	created, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: topic, NumPartitions: 3, ReplicationFactor: 3},
	}})
	check(err, "creating "+topic)
	result.Created = kafkaGoErrName(created.Errors[topic])
	again, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: topic, NumPartitions: 3, ReplicationFactor: 3},
		{Topic: topic + "-none", NumPartitions: 0, ReplicationFactor: 1},
	}})
	check(err, "creating topics again")
	result.Duplicate = kafkaGoErrName(again.Errors[topic])
	result.BadPartition = kafkaGoErrName(again.Errors[topic+"-none"])
	metadata, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	check(err, "reading metadata")
	for _, b := range metadata.Brokers {
		result.Brokers = append(result.Brokers, b.ID)
	}
	sort.Ints(result.Brokers)
	for _, p := range metadata.Topics[0].Partitions {
		check(p.Error, "reading metadata")
		result.Replicas = append(result.Replicas, len(p.Replicas))
	}

	// Writer: acks=all, keys hashed to partitions.
	writer := &kafka.Writer{
		Addr: addr, Topic: topic, RequiredAcks: kafka.RequireAll, Balancer: &kafka.Hash{},
		BatchTimeout: 10 * time.Millisecond, Compression: kafka.Lz4,
	}
	messages := make([]kafka.Message, count)
	for i := range messages {
		messages[i] = kafka.Message{Key: []byte(key(i)), Value: []byte(value(i))}
	}
	check(writer.WriteMessages(ctx, messages...), "writing")
	result.Written = int(writer.Stats().Messages)
	check(writer.Close(), "closing the writer")

	// Client: ListOffsets, first and last of each partition.
	requests := []kafka.OffsetRequest{}
	for p := range result.Replicas {
		requests = append(requests, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	offsets, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: requests}})
	check(err, "listing offsets")
	for _, p := range offsets.Topics[topic] {
		check(p.Error, "listing offsets")
		result.FirstOffsets[fmt.Sprint(p.Partition)] = p.FirstOffset
		result.EndOffsets[fmt.Sprint(p.Partition)] = p.LastOffset
	}

	// Reader in a group: fetch everything, commit synchronously.
	result.Group = "go-kafka-go-" + topic
	reader := kafka.NewReader(kafka.ReaderConfig{
		Brokers: brokers(bootstrap), GroupID: result.Group, Topic: topic,
		StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond,
	})
	for result.Consumed < count {
		message, err := reader.FetchMessage(ctx)
		check(err, "fetching")
		result.add(int32(message.Partition), message.Offset, string(message.Key), string(message.Value))
		check(reader.CommitMessages(ctx, message), "committing")
	}
	check(reader.Close(), "closing the reader")
	fetched, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: result.Group, Topics: map[string][]int{topic: {0, 1, 2}}})
	check(err, "fetching the group's offsets")
	check(fetched.Error, "fetching the group's offsets")
	for _, p := range fetched.Topics[topic] {
		check(p.Error, "fetching the group's offsets")
		result.Committed[fmt.Sprint(p.Partition)] = p.CommittedOffset
	}
	return result
}
