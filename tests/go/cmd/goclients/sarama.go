package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/IBM/sarama"
)

func saramaConfig(clientID string) *sarama.Config {
	config := sarama.NewConfig()
	config.Version = sarama.V4_3_1_0 // the newest Kafka Sarama 1.61.1 knows: its newest request versions
	config.ClientID = clientID
	config.Producer.Idempotent = true
	config.Producer.RequiredAcks = sarama.WaitForAll
	config.Producer.Return.Successes = true
	config.Producer.Compression = sarama.CompressionZSTD
	config.Producer.Partitioner = sarama.NewHashPartitioner
	config.Net.MaxOpenRequests = 1 // what idempotence requires of Sarama
	config.Consumer.Offsets.Initial = sarama.OffsetOldest
	config.Consumer.Offsets.AutoCommit.Enable = false
	return config
}

// saramaErrName is the Kafka error name of err (sarama.KError's constant name).
func saramaErrName(err error) string {
	var kafkaErr sarama.KError
	if errors.As(err, &kafkaErr) {
		return kafkaErrNames[kafkaErr]
	}
	var topicErr *sarama.TopicError
	if errors.As(err, &topicErr) {
		return kafkaErrNames[topicErr.Err]
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

var kafkaErrNames = map[sarama.KError]string{
	sarama.ErrTopicAlreadyExists:      "TOPIC_ALREADY_EXISTS",
	sarama.ErrInvalidRequest:          "INVALID_REQUEST",
	sarama.ErrUnknownTopicOrPartition: "UNKNOWN_TOPIC_OR_PARTITION",
	sarama.ErrInvalidConfig:           "INVALID_CONFIG",
	sarama.ErrInvalidPartitions:       "INVALID_PARTITIONS",
}

type saramaGroup struct {
	mu     sync.Mutex
	result *readBack
	want   int
	done   context.CancelFunc
}

func (g *saramaGroup) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (g *saramaGroup) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (g *saramaGroup) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for message := range claim.Messages() {
		g.mu.Lock()
		g.result.add(message.Partition, message.Offset, string(message.Key), string(message.Value))
		session.MarkMessage(message, "")
		finished := g.result.Consumed == g.want
		g.mu.Unlock()
		if finished {
			session.Commit()
			g.done()
		}
	}
	return nil
}

type saramaResult struct {
	SyncProduced  int              `json:"sync_produced"`
	AsyncProduced int              `json:"async_produced"`
	OffsetsMatch  bool             `json:"offsets_match"`
	Group         string           `json:"group"`
	Committed     map[string]int64 `json:"committed"`
	Admin         map[string]any   `json:"admin"`
	*readBack
}

func saramaClients(ctx context.Context, bootstrap, topic string, count int) any {
	addrs := brokers(bootstrap)
	result := saramaResult{readBack: newReadBack(), Committed: map[string]int64{}}
	sent := map[string]int64{}

	// The first half through the SyncProducer, the second through the AsyncProducer.
	syncProducer, err := sarama.NewSyncProducer(addrs, saramaConfig("go-sarama-sync"))
	check(err, "creating the sync producer")
	for i := 0; i < count/2; i++ {
		_, offset, err := syncProducer.SendMessage(&sarama.ProducerMessage{
			Topic: topic, Key: sarama.StringEncoder(key(i)), Value: sarama.StringEncoder(value(i)),
		})
		check(err, "producing with the sync producer")
		sent[key(i)] = offset
		result.SyncProduced++
	}
	check(syncProducer.Close(), "closing the sync producer")

	asyncProducer, err := sarama.NewAsyncProducer(addrs, saramaConfig("go-sarama-async"))
	check(err, "creating the async producer")
	for i := count / 2; i < count; i++ {
		asyncProducer.Input() <- &sarama.ProducerMessage{
			Topic: topic, Key: sarama.StringEncoder(key(i)), Value: sarama.StringEncoder(value(i)),
		}
	}
	for result.AsyncProduced < count-count/2 {
		select {
		case message := <-asyncProducer.Successes():
			k, _ := message.Key.Encode()
			sent[string(k)] = message.Offset
			result.AsyncProduced++
		case failed := <-asyncProducer.Errors():
			check(failed.Err, "producing with the async producer")
		}
	}
	check(asyncProducer.Close(), "closing the async producer")

	// A classic consumer group reads everything back and commits.
	result.Group = "go-sarama-" + topic
	group, err := sarama.NewConsumerGroup(addrs, result.Group, saramaConfig("go-sarama-consumer"))
	check(err, "creating the consumer group")
	consuming, stop := context.WithCancel(ctx)
	handler := &saramaGroup{result: result.readBack, want: count, done: stop}
	for consuming.Err() == nil {
		check(group.Consume(consuming, []string{topic}, handler), "consuming")
	}
	check(ctx.Err(), "consuming")
	check(group.Close(), "closing the consumer group")
	result.OffsetsMatch = result.sameOffsets(sent)

	// ClusterAdmin: the group's offsets, topics, configs, client quotas.
	admin, err := sarama.NewClusterAdmin(addrs, saramaConfig("go-sarama-admin"))
	check(err, "creating the cluster admin")
	defer admin.Close()
	fetched, err := admin.ListConsumerGroupOffsets(result.Group, nil)
	check(err, "listing the group's offsets")
	for p, block := range fetched.Blocks[topic] {
		if block.Err != sarama.ErrNoError {
			fail("listing the group's offsets: " + block.Err.Error())
		}
		result.Committed[fmt.Sprint(p)] = block.Offset
	}
	result.Admin = saramaAdmin(admin, topic)
	return result
}

func saramaAdmin(admin sarama.ClusterAdmin, consumed string) map[string]any {
	r := map[string]any{}
	const topic = "go-sarama-admin"
	retention := "3600000"
	check(admin.CreateTopic(topic, &sarama.TopicDetail{
		NumPartitions: 2, ReplicationFactor: 3, ConfigEntries: map[string]*string{"retention.ms": &retention},
	}, false), "creating "+topic)
	r["duplicate_topic"] = saramaErrName(admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false))
	check(admin.CreatePartitions(topic, 3, nil, false), "creating partitions")
	described, err := admin.DescribeTopics([]string{topic, consumed})
	check(err, "describing topics")
	partitions := map[string]int{}
	for _, t := range described {
		if t.Err != sarama.ErrNoError {
			fail("describing " + t.Name + ": " + t.Err.Error())
		}
		partitions[t.Name] = len(t.Partitions)
	}
	r["partitions"] = partitions
	brokers, controller, err := admin.DescribeCluster()
	check(err, "describing the cluster")
	ids := []int32{}
	for _, b := range brokers {
		ids = append(ids, b.ID())
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	r["brokers"] = ids
	r["controller"] = controller

	policy := "compact"
	check(admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"cleanup.policy": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &policy},
	}, false), "altering configs")
	configs, err := admin.DescribeConfig(sarama.ConfigResource{
		Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"retention.ms", "cleanup.policy"},
	})
	check(err, "describing configs")
	described2 := map[string][]string{}
	for _, c := range configs {
		described2[c.Name] = []string{c.Value, c.Source.String()}
	}
	r["configs"] = described2

	check(admin.AlterClientQuotas(
		[]sarama.QuotaEntityComponent{{EntityType: sarama.QuotaEntityClientID, MatchType: sarama.QuotaMatchExact, Name: "sarama-app"}},
		sarama.ClientQuotasOp{Key: "producer_byte_rate", Value: 1048576}, false,
	), "altering client quotas")
	quotas, err := admin.DescribeClientQuotas([]sarama.QuotaFilterComponent{
		{EntityType: sarama.QuotaEntityClientID, MatchType: sarama.QuotaMatchExact, Match: "sarama-app"},
	}, true)
	check(err, "describing client quotas")
	describedQuotas := []string{}
	for _, q := range quotas {
		for k, v := range q.Values {
			describedQuotas = append(describedQuotas, fmt.Sprintf("%s=%s %s=%g", q.Entity[0].EntityType, q.Entity[0].Name, k, v))
		}
	}
	r["quotas"] = describedQuotas
	refused := admin.AlterClientQuotas(
		[]sarama.QuotaEntityComponent{{EntityType: sarama.QuotaEntityClientID, MatchType: sarama.QuotaMatchExact, Name: "sarama-app"}},
		sarama.ClientQuotasOp{Key: "no_such_quota", Value: 1}, false,
	)
	r["quota_refused"] = saramaErrName(refused)

	check(admin.DeleteTopic(topic), "deleting "+topic)
	listed, err := admin.ListTopics()
	check(err, "listing topics")
	_, stillThere := listed[topic]
	r["listed_after_delete"] = stillThere
	return r
}
