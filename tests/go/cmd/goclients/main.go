// Command goclients drives the Go Kafka clients (franz-go's kgo and kadm, IBM Sarama,
// segmentio/kafka-go) against the mock broker for tests/go/test_go_clients.py. Each mode
// prints one line of JSON on stdout that the Python test asserts on; a failure prints one
// line to stderr and exits 1.
//
//	kgo-produce-consume BOOTSTRAP TOPIC CODEC COUNT GROUP_PROTOCOL
//	    an idempotent acks=all kgo producer sends COUNT keyed records compressed with CODEC;
//	    a consumer reads them back, without a group (GROUP_PROTOCOL none) or in a new group
//	    of the classic or the consumer (KIP-848) protocol, and commits
//	kgo-transactions BOOTSTRAP TOPIC
//	    a transactional producer commits, aborts, and is fenced by a second one; a
//	    read_committed and a read_uncommitted consumer read the topic
//	kgo-eos BOOTSTRAP INPUT OUTPUT GROUP COUNT
//	    a GroupTransactSession copies INPUT to OUTPUT in transactions that commit the
//	    group's offsets; a read_committed consumer reads OUTPUT
//	kgo-topic-configs BOOTSTRAP
//	    a producer and a consumer against max.message.bytes and LogAppendTime topics
//	kgo-throttled BOOTSTRAP TOPIC COUNT
//	    a producer (client id go-loader) sends COUNT 100 kB records one at a time; prints
//	    what its OnBrokerThrottle hook saw and how long each produce waited to be written
//	kgo-failover BOOTSTRAP TOPIC COUNT
//	    an idempotent producer sends half of COUNT keyed records, prints a line and waits
//	    for one on stdin (the test stops a broker), sends the rest; all are read back
//	kgo-rebalance BOOTSTRAP TOPIC PROTOCOL COUNT
//	    one member of a new group owns every partition; a second joins and the group
//	    splits them; together they read COUNT records once each and commit
//	kgo-regex BOOTSTRAP PREFIX
//	    a KIP-848 member subscribed to ^PREFIX-.* reads the matching topics, also one
//	    created after it joined, and commits
//	kgo-scram BOOTSTRAP SASL_BOOTSTRAP TOPIC
//	    kadm creates a SCRAM-SHA-512 user; kgo logs in with it over SASL_PLAINTEXT and
//	    produces; a wrong password and the deleted credential are refused
//	kgo-share-consume BOOTSTRAP TOPIC GROUP MEMBERS COUNT
//	    MEMBERS share consumers (KIP-932) in GROUP read COUNT records produced once the
//	    group is stable, accepting implicitly; every delivery is counted per member
//	kgo-share-acks BOOTSTRAP TOPIC GROUP
//	    one share consumer releases, rejects and accepts records explicitly; prints every
//	    delivery's delivery count
//	kgo-share-lock-expiry BOOTSTRAP TOPIC GROUP
//	    a share consumer holds three records past their acquisition lock; a second one is
//	    delivered them again
//	kadm BOOTSTRAP
//	    the kadm admin client over topics, partitions, configs, offsets, records, groups,
//	    ACLs, client quotas, SCRAM users, the cluster and transactions
//	kadm-errors BOOTSTRAP
//	    what kadm reports for requests Kafka refuses; offsets by time and leader epoch
//	sarama BOOTSTRAP TOPIC COUNT
//	    Sarama's idempotent SyncProducer and AsyncProducer, a ConsumerGroup reading
//	    everything back and committing, and its ClusterAdmin
//	kafka-go BOOTSTRAP TOPIC COUNT
//	    segmentio/kafka-go's Client (CreateTopics, Metadata, ListOffsets), an acks=all
//	    Writer and a Reader in a group reading everything back and committing
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fail("usage: goclients MODE BOOTSTRAP [ARGS...]")
	}
	mode, bootstrap, args := os.Args[1], os.Args[2], os.Args[3:]
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	var result any
	switch mode {
	case "kgo-produce-consume":
		result = kgoProduceConsume(ctx, bootstrap, args[0], args[1], atoi(args[2]), args[3])
	case "kgo-transactions":
		result = kgoTransactions(ctx, bootstrap, args[0])
	case "kgo-eos":
		result = kgoEOS(ctx, bootstrap, args[0], args[1], args[2], atoi(args[3]))
	case "kgo-throttled":
		result = kgoThrottled(ctx, bootstrap, args[0], atoi(args[1]))
	case "kgo-rebalance":
		result = kgoRebalance(ctx, bootstrap, args[0], args[1], atoi(args[2]))
	case "kgo-failover":
		result = kgoFailover(ctx, bootstrap, args[0], atoi(args[1]))
	case "kgo-scram":
		result = kgoScram(ctx, bootstrap, args[0], args[1])
	case "kgo-regex":
		result = kgoRegex(ctx, bootstrap, args[0])
	case "kgo-topic-configs":
		result = kgoTopicConfigs(ctx, bootstrap)
	case "kgo-share-consume":
		result = kgoShareConsume(ctx, bootstrap, args[0], args[1], atoi(args[2]), atoi(args[3]))
	case "kgo-share-acks":
		result = kgoShareAcks(ctx, bootstrap, args[0], args[1])
	case "kgo-share-lock-expiry":
		result = kgoShareLockExpiry(ctx, bootstrap, args[0], args[1])
	case "kadm-errors":
		result = kadmErrors(ctx, bootstrap)
	case "kadm":
		result = kadmAdmin(ctx, bootstrap)
	case "sarama":
		result = saramaClients(ctx, bootstrap, args[0], atoi(args[1]))
	case "kafka-go":
		result = kafkaGoClients(ctx, bootstrap, args[0], atoi(args[1]))
	default:
		fail("unknown mode " + mode)
	}
	line, err := json.Marshal(result)
	check(err, "encoding the result")
	fmt.Println(string(line))
}

// fail ends the program with one line saying what went wrong.
func fail(message string) {
	fmt.Fprintln(os.Stderr, "goclients: "+message)
	os.Exit(1)
}

func check(err error, doing string) {
	if err != nil {
		fail(doing + ": " + err.Error())
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	check(err, "reading a count")
	return n
}

func brokers(bootstrap string) []string { return strings.Split(bootstrap, ",") }

func key(i int) string   { return fmt.Sprintf("key-%d", i) }
func value(i int) string { return fmt.Sprintf("value-%d", i) }

// readBack checks records consumed against the COUNT keyed records produced: every value
// under its key, and within each partition the records in the order they were sent at
// dense offsets from 0.
type readBack struct {
	Consumed    int              `json:"consumed"`
	Matching    bool             `json:"matching"`
	InOrder     bool             `json:"in_order"`
	Partitions  int              `json:"partitions"`
	LastOffsets map[string]int64 `json:"last_offsets"`
	seen        map[int32][]int
	offsets     map[string]int64 // key -> offset it was read at
}

func newReadBack() *readBack {
	return &readBack{Matching: true, InOrder: true, LastOffsets: map[string]int64{}, seen: map[int32][]int{}, offsets: map[string]int64{}}
}

// add takes one record.
func (r *readBack) add(partition int32, offset int64, k, v string) {
	var i int
	if _, err := fmt.Sscanf(k, "key-%d", &i); err != nil || v != value(i) {
		r.Matching = false
	}
	previous := r.seen[partition]
	if int64(len(previous)) != offset || (len(previous) > 0 && previous[len(previous)-1] >= i) {
		r.InOrder = false
	}
	r.seen[partition] = append(previous, i)
	r.offsets[k] = offset
	r.Consumed++
	r.Partitions = len(r.seen)
	r.LastOffsets[strconv.Itoa(int(partition))] = offset
}

// sameOffsets says whether every record was read at the offset its producer was told.
func (r *readBack) sameOffsets(sent map[string]int64) bool {
	if len(sent) != len(r.offsets) {
		return false
	}
	for k, offset := range sent {
		if got, ok := r.offsets[k]; !ok || got != offset {
			return false
		}
	}
	return true
}
