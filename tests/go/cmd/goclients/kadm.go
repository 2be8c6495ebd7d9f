package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func ptr[T any](v T) *T { return &v }

// configOf finds one config of a described resource: its value and source.
func configOf(described kadm.ResourceConfigs, name string) []string {
	for _, resource := range described {
		check(resource.Err, "describing the configs of "+resource.Name)
		for _, config := range resource.Configs {
			if config.Key == name {
				value := "<nil>"
				if config.Value != nil {
					value = *config.Value
				}
				return []string{value, config.Source.String()}
			}
		}
	}
	return nil
}

func quotaStrings(described kadm.DescribedClientQuotas) []string {
	out := []string{}
	for _, quota := range described {
		values := []string{}
		for _, v := range quota.Values {
			values = append(values, fmt.Sprintf("%s=%g", v.Key, v.Value))
		}
		sort.Strings(values)
		out = append(out, fmt.Sprintf("%s -> %v", quota.Entity, values))
	}
	sort.Strings(out)
	return out
}

func aclStrings(described kadm.DescribedACLs) []string {
	out := []string{}
	for _, acl := range described {
		out = append(out, fmt.Sprintf("%s %s %s %s:%s %s %s", acl.Principal, acl.Host, acl.Permission,
			acl.Type, acl.Name, acl.Pattern, acl.Operation))
	}
	sort.Strings(out)
	return out
}

func kadmAdmin(ctx context.Context, bootstrap string) any {
	cl := newClient(bootstrap, kgo.ClientID("go-kadm"))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	r := map[string]any{}
	const topic = "go-admin"

	// The cluster.
	meta, err := adm.BrokerMetadata(ctx)
	check(err, "metadata")
	r["cluster_id"] = meta.Cluster
	r["controller"] = meta.Controller
	r["brokers"] = meta.Brokers.NodeIDs()
	brokerConfigs, err := adm.DescribeBrokerConfigs(ctx, meta.Brokers.NodeIDs()[0])
	check(err, "describing broker configs")
	r["broker_num_partitions"] = configOf(brokerConfigs, "num.partitions")
	versions, err := adm.ApiVersions(ctx)
	check(err, "api versions")
	features := map[string]int16{}
	versions.Each(func(v kadm.BrokerApiVersions) {
		check(v.Err, "api versions")
		for _, f := range v.Raw().FinalizedFeatures {
			features[f.Name] = f.MaxVersionLevel
		}
	})
	r["finalized_features"] = features

	// Topics and partitions.
	created, err := adm.CreateTopic(ctx, 2, 3, map[string]*string{"retention.ms": ptr("3600000")}, topic)
	check(err, "creating "+topic)
	check(created.Err, "creating "+topic)
	again, err := adm.CreateTopic(ctx, 2, 3, nil, topic)
	r["duplicate_topic"] = errName(firstErr(err, again.Err))
	partitions, err := adm.CreatePartitions(ctx, 2, topic)
	check(err, "creating partitions")
	check(partitions[topic].Err, "creating partitions")
	listed, err := adm.ListTopics(ctx, topic)
	check(err, "listing topics")
	r["partitions"] = len(listed[topic].Partitions)
	r["replicas"] = len(listed[topic].Partitions[0].Replicas)
	r["topic_id"] = listed[topic].ID.String()

	// Configs: incremental SET and DELETE.
	described, err := adm.DescribeTopicConfigs(ctx, topic)
	check(err, "describing topic configs")
	r["retention_ms"] = configOf(described, "retention.ms")
	altered, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "cleanup.policy", Value: ptr("compact,delete")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
	}, topic)
	check(err, "altering topic configs")
	for _, a := range altered {
		check(a.Err, "altering topic configs")
	}
	described, err = adm.DescribeTopicConfigs(ctx, topic)
	check(err, "describing topic configs")
	r["cleanup_policy"] = configOf(described, "cleanup.policy")
	r["retention_ms_after_delete"] = configOf(described, "retention.ms")

	// Records: ten to partition 0, the first four deleted.
	producer := newClient(bootstrap, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 10; i++ {
		record := &kgo.Record{Partition: 0, Key: []byte(key(i)), Value: []byte(value(i))}
		check(producer.ProduceSync(ctx, record).FirstErr(), "producing")
	}
	// A compacted topic takes no record without a key.
	keyless := producer.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("no key")}).FirstErr()
	r["keyless_in_compacted"] = errName(keyless)
	producerID, _, err := producer.ProducerID(ctx)
	check(err, "reading the producer id")
	producer.Close()
	ends, err := adm.ListEndOffsets(ctx, topic)
	check(err, "listing end offsets")
	r["end_offsets"] = offsetsOf(ends, topic)
	deleted, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 4}}})
	check(err, "deleting records")
	r["low_watermark"] = deleted[topic][0].LowWatermark
	starts, err := adm.ListStartOffsets(ctx, topic)
	check(err, "listing start offsets")
	r["start_offsets"] = offsetsOf(starts, topic)
	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	check(err, "describing producers")
	described0 := producers[topic].Partitions[0]
	check(described0.Err, "describing producers")
	active := []int64{}
	for _, p := range described0.ActiveProducers {
		active = append(active, p.ProducerID)
		r["producer_last_sequence"] = p.LastSequence
	}
	r["producer_id"] = producerID
	r["active_producers"] = active

	// Group offsets.
	const group = "go-admin-group"
	committed, err := adm.CommitOffsets(ctx, group, kadm.Offsets{topic: {
		0: {Topic: topic, Partition: 0, At: 7, LeaderEpoch: -1, Metadata: "seven"},
		1: {Topic: topic, Partition: 1, At: 0, LeaderEpoch: -1},
	}})
	check(err, "committing offsets")
	check(committed.Error(), "committing offsets")
	fetched, err := adm.FetchOffsets(ctx, group)
	check(err, "fetching offsets")
	check(fetched.Error(), "fetching offsets")
	r["group_offset"] = fetched[topic][0].At
	r["group_offset_metadata"] = fetched[topic][0].Metadata
	groups, err := adm.ListGroups(ctx)
	check(err, "listing groups")
	r["listed_group"] = groups[group]
	describedGroups, err := adm.DescribeGroups(ctx, group)
	check(err, "describing groups")
	r["group_state"] = describedGroups[group].State
	removed, err := adm.DeleteOffsets(ctx, group, kadm.TopicsSet{topic: {1: {}}})
	check(err, "deleting offsets")
	check(removed[topic][1], "deleting offsets")
	fetched, err = adm.FetchOffsets(ctx, group)
	check(err, "fetching offsets")
	left := []int32{}
	for p := range fetched[topic] {
		left = append(left, p)
	}
	r["offsets_after_delete"] = left
	deletedGroups, err := adm.DeleteGroups(ctx, group)
	check(err, "deleting groups")
	check(deletedGroups[group].Err, "deleting groups")
	groups, err = adm.ListGroups(ctx)
	check(err, "listing groups")
	_, stillListed := groups[group]
	r["group_listed_after_delete"] = stillListed

	// ACLs.
	acls := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics(topic).
		Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	createdACLs, err := adm.CreateACLs(ctx, acls)
	check(err, "creating ACLs")
	for _, c := range createdACLs {
		check(c.Err, "creating an ACL")
	}
	prefixed := kadm.NewACLs().Deny("User:mallory").DenyHosts("10.0.0.1").Groups("go-").
		Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed)
	createdACLs, err = adm.CreateACLs(ctx, prefixed)
	check(err, "creating ACLs")
	for _, c := range createdACLs {
		check(c.Err, "creating an ACL")
	}
	all := kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)
	describedACLs, err := adm.DescribeACLs(ctx, all)
	check(err, "describing ACLs")
	var everyACL kadm.DescribedACLs
	for _, d := range describedACLs {
		check(d.Err, "describing ACLs")
		everyACL = append(everyACL, d.Described...)
	}
	r["acls"] = aclStrings(everyACL)
	// The prefixed deny matches a group named go-admin-group (MATCH).
	matching := kadm.NewACLs().Groups("go-admin-group").Deny().DenyHosts().Allow().AllowHosts().
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternMatch)
	describedACLs, err = adm.DescribeACLs(ctx, matching)
	check(err, "describing ACLs")
	r["acls_matching_group"] = aclStrings(describedACLs[0].Described)
	deletedACLs, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics(topic).
		Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	check(err, "deleting ACLs")
	r["acls_deleted"] = len(deletedACLs[0].Deleted)

	// Client quotas.
	alterations := []kadm.AlterClientQuotaEntry{
		{
			Entity: kadm.ClientQuotaEntity{{Type: "user", Name: ptr("alice")}},
			Ops: []kadm.AlterClientQuotaOp{
				{Key: "producer_byte_rate", Value: 1048576},
				{Key: "consumer_byte_rate", Value: 2000000},
			},
		},
		{
			Entity: kadm.ClientQuotaEntity{{Type: "user", Name: ptr("alice")}, {Type: "client-id", Name: ptr("app")}},
			Ops:    []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 25.5}},
		},
		{
			Entity: kadm.ClientQuotaEntity{{Type: "client-id"}}, // the default client id
			Ops:    []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 10}},
		},
	}
	alteredQuotas, err := adm.AlterClientQuotas(ctx, alterations)
	check(err, "altering client quotas")
	for _, a := range alteredQuotas {
		check(a.Err, "altering client quotas")
	}
	refused, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "user", Name: ptr("bob")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: -1}},
	}})
	check(err, "altering client quotas")
	r["quota_refused"] = errName(refused[0].Err) + ": " + refused[0].ErrMessage
	everyQuota, err := adm.DescribeClientQuotas(ctx, false, nil)
	check(err, "describing client quotas")
	r["quotas"] = quotaStrings(everyQuota)
	aliceQuotas, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{
		{Type: "user", MatchName: ptr("alice"), MatchType: kmsg.QuotasMatchTypeExact},
	})
	check(err, "describing client quotas")
	r["quotas_alice_strict"] = quotaStrings(aliceQuotas)
	removal, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "user", Name: ptr("alice")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Remove: true}},
	}})
	check(err, "removing a client quota")
	check(removal[0].Err, "removing a client quota")

	// SCRAM users.
	// A user appears once per request (Kafka's ScramControlManager): alice twice is
	// DUPLICATE_RESOURCE, and bob's upsertion in the same request still applies.
	scrams, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "alice-secret"},
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 10000, Password: "bob-secret"},
	})
	check(err, "upserting SCRAM users")
	r["scram_twice"] = errName(scrams["alice"].Err)
	check(scrams["bob"].Err, "upserting SCRAM user bob")
	for _, upsert := range []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "alice-secret"},
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"},
		{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"},
	} {
		scrams, err = adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{upsert})
		check(err, "upserting a SCRAM user")
		check(scrams[upsert.User].Err, "upserting SCRAM user "+upsert.User)
	}
	scrams, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha256}}, nil)
	check(err, "deleting a SCRAM credential")
	check(scrams["carol"].Err, "deleting a SCRAM credential")
	users, err := adm.DescribeUserSCRAMs(ctx)
	check(err, "describing SCRAM users")
	scramUsers := map[string][]string{}
	for _, u := range users.Sorted() {
		check(u.Err, "describing SCRAM user "+u.User)
		for _, c := range u.CredInfos {
			scramUsers[u.User] = append(scramUsers[u.User], c.String())
		}
	}
	r["scram_users"] = scramUsers
	missing, err := adm.DescribeUserSCRAMs(ctx, "nobody")
	r["scram_unknown_user"] = errName(firstErr(err, missing["nobody"].Err))

	// Transactions: one committed, one left open.
	transactional := newClient(bootstrap, kgo.TransactionalID("go-admin-tx"), kgo.DefaultProduceTopic(topic))
	defer transactional.Close()
	check(transactional.BeginTransaction(), "beginning")
	check(transactional.ProduceSync(ctx, &kgo.Record{Key: []byte("tx"), Value: []byte("tx")}).FirstErr(), "producing in a transaction")
	check(transactional.EndTransaction(ctx, kgo.TryCommit), "committing")
	check(transactional.BeginTransaction(), "beginning")
	check(transactional.ProduceSync(ctx, &kgo.Record{Key: []byte("open"), Value: []byte("open")}).FirstErr(), "producing in a transaction")
	txns, err := adm.ListTransactions(ctx, nil, nil)
	check(err, "listing transactions")
	r["transactions"] = txns.Sorted()
	describedTxns, err := adm.DescribeTransactions(ctx, "go-admin-tx")
	check(err, "describing transactions")
	txn := describedTxns["go-admin-tx"]
	check(txn.Err, "describing the transaction")
	r["transaction_state"] = txn.State
	r["transaction_producer_id"] = txn.ProducerID
	r["transaction_partitions"] = txn.Topics
	check(transactional.EndTransaction(ctx, kgo.TryAbort), "aborting")

	// Deleting the topic.
	gone, err := adm.DeleteTopics(ctx, topic)
	check(err, "deleting topics")
	check(gone[topic].Err, "deleting "+topic)
	listed, err = adm.ListTopics(ctx)
	check(err, "listing topics")
	_, stillThere := listed[topic]
	r["listed_after_delete"] = stillThere
	return r
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func offsetsOf(listed kadm.ListedOffsets, topic string) map[string]int64 {
	out := map[string]int64{}
	for p, o := range listed[topic] {
		check(o.Err, "listing offsets")
		out[fmt.Sprint(p)] = o.Offset
	}
	return out
}
