package mockbroker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RaftVoterEndpoint;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java Admin client over the admin APIs the "admin" mode of {@link JavaClients} leaves
 * out, driven by tests/java/test_java_admin.py. Each mode prints one line of JSON.
 *
 * <pre>
 * cluster BOOTSTRAP
 *     reassignments and elections, replica log dirs, feature updates, the KRaft voter APIs,
 *     UnregisterBroker, group listing, describing (classic and KIP-848), member removal,
 *     group offsets deletion, group configs and ListConfigResources (3 brokers)
 * transactions BOOTSTRAP TOPIC
 *     a hanging transaction found with listTransactions, describeTransactions and
 *     describeProducers, aborted with abortTransaction; fenceProducers and
 *     forceTerminateTransaction
 * secure BOOTSTRAP CAFILE
 *     over SASL_SSL (the broker's CA as a PEM trust store): SCRAM users altered and
 *     described, ACLs created, described and deleted as they decide a SCRAM and a PLAIN
 *     producer's writes, delegation tokens created, used to log in, renewed and expired
 * </pre>
 */
public final class AdminApis {
    private AdminApis() {}

    public static void main(String[] args) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        switch (args[0]) {
            case "cluster" -> cluster(args[1], out);
            case "transactions" -> transactions(args[1], args[2], out);
            case "secure" -> secure(args[1], args[2], out);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
        System.out.println(Json.of(out));
    }

    private static Admin admin(String bootstrap) {
        Properties config = new Properties();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        return Admin.create(config);
    }

    private static List<Integer> replicas(Admin admin, String topic) throws Exception {
        List<Integer> ids = new ArrayList<>();
        admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().get(0).replicas()
                .forEach(node -> ids.add(node.id()));
        return ids;
    }

    private static int leader(Admin admin, String topic) throws Exception {
        return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().get(0).leader().id();
    }

    private static void reassign(Admin admin, TopicPartition partition, List<Integer> target) throws Exception {
        admin.alterPartitionReassignments(Map.of(partition, Optional.of(new NewPartitionReassignment(target))))
                .all().get();
        long deadline = System.currentTimeMillis() + 30_000;
        while (!admin.listPartitionReassignments().reassignments().get().isEmpty()
                && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
    }

    private static KafkaConsumer<String, String> member(String bootstrap, String group, String protocol, String topic) {
        Properties config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        config.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config);
        consumer.subscribe(List.of(topic));
        long deadline = System.currentTimeMillis() + 30_000;
        while (consumer.assignment().isEmpty() && System.currentTimeMillis() < deadline) {
            consumer.poll(Duration.ofMillis(100));
        }
        return consumer;
    }

    private static Map<String, Object> described(ConsumerGroupDescription group) {
        Map<String, Object> shown = new TreeMap<>();
        shown.put("type", group.type().name());
        shown.put("state", group.groupState().name());
        shown.put("members", group.members().size());
        shown.put("assigned", group.members().stream().mapToInt(m -> m.assignment().topicPartitions().size()).sum());
        return shown;
    }

    private static void cluster(String bootstrap, Map<String, Object> out) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            // Reassignments (AlterPartitionReassignments, ListPartitionReassignments) and a
            // preferred-leader election (ElectLeaders).
            admin.createTopics(List.of(new NewTopic("moved", Map.of(0, List.of(0, 1))))).all().get();
            TopicPartition moved = new TopicPartition("moved", 0);
            reassign(admin, moved, List.of(1, 2));
            out.put("reassigned_replicas", replicas(admin, "moved"));
            out.put("leader_after_reassignment", leader(admin, "moved"));
            reassign(admin, moved, List.of(2, 1));  // the preferred leader is now 2; the leader stays
            out.put("leader_before_election", leader(admin, "moved"));
            out.put("election", electionOutcome(admin, moved));
            out.put("leader_after_election", leader(admin, "moved"));
            out.put("election_again", electionOutcome(admin, moved));
            out.put("unknown_reassignment", Json.outcome(admin.alterPartitionReassignments(
                    Map.of(new TopicPartition("nowhere", 0), Optional.of(new NewPartitionReassignment(List.of(0)))))
                    .all()));

            // Replica log dirs (DescribeLogDirs, AlterReplicaLogDirs).
            String dir = admin.describeLogDirs(List.of(1)).allDescriptions().get().get(1).keySet().iterator().next();
            TopicPartitionReplica replica = new TopicPartitionReplica("moved", 0, 1);
            out.put("log_dir_same", Json.outcome(admin.alterReplicaLogDirs(Map.of(replica, dir)).all()));
            out.put("log_dir_unknown", Json.outcome(admin.alterReplicaLogDirs(Map.of(replica, "/nowhere")).all()));
            out.put("replica_log_dir_matches",
                    dir.equals(admin.describeReplicaLogDirs(List.of(replica)).all().get().get(replica).getCurrentReplicaLogDir()));

            // Features (UpdateFeatures, ApiVersions' finalized levels through describeFeatures).
            admin.updateFeatures(Map.of("transaction.version", new FeatureUpdate((short) 1,
                    FeatureUpdate.UpgradeType.SAFE_DOWNGRADE)), new UpdateFeaturesOptions()).all().get();
            out.put("transaction_version_downgraded", finalized(admin, "transaction.version"));
            out.put("unsafe_upgrade_refused", Json.outcome(admin.updateFeatures(Map.of("transaction.version",
                    new FeatureUpdate((short) 9, FeatureUpdate.UpgradeType.UPGRADE)), new UpdateFeaturesOptions()).all()));
            admin.updateFeatures(Map.of("transaction.version", new FeatureUpdate((short) 2,
                    FeatureUpdate.UpgradeType.UPGRADE)), new UpdateFeaturesOptions()).all().get();
            out.put("transaction_version", finalized(admin, "transaction.version"));

            // The KRaft voter APIs (DescribeQuorum, AddRaftVoter, RemoveRaftVoter).
            QuorumInfo quorum = admin.describeMetadataQuorum().quorumInfo().get();
            QuorumInfo.ReplicaState voter = quorum.voters().get(0);
            Uuid voterDirectory = voter.replicaDirectoryId();
            out.put("remove_voter_static_quorum",
                    Json.outcome(admin.removeRaftVoter(voter.replicaId(), voterDirectory).all()));
            admin.updateFeatures(Map.of("kraft.version", new FeatureUpdate((short) 1,
                    FeatureUpdate.UpgradeType.UPGRADE)), new UpdateFeaturesOptions()).all().get();
            RaftVoterEndpoint endpoint = new RaftVoterEndpoint("PLAINTEXT", "127.0.0.1", 1);
            out.put("add_existing_voter", Json.outcome(
                    admin.addRaftVoter(voter.replicaId(), voterDirectory, Set.of(endpoint)).all()));
            out.put("remove_unknown_voter", Json.outcome(admin.removeRaftVoter(999, Uuid.randomUuid()).all()));
            out.put("remove_last_voter", Json.outcome(admin.removeRaftVoter(voter.replicaId(), voterDirectory).all()));

            // UnregisterBroker.
            out.put("unregister_unknown_broker", Json.outcome(admin.unregisterBroker(42).all()));

            // Groups: ListGroups, DescribeGroups (classic), ConsumerGroupDescribe (KIP-848),
            // LeaveGroup (removeMembersFromConsumerGroup), OffsetDelete, group configs.
            admin.createTopics(List.of(new NewTopic("grouped", 2, (short) 3))).all().get();
            try (KafkaConsumer<String, String> modern = member(bootstrap, "g-consumer", "consumer", "grouped");
                 KafkaConsumer<String, String> classic = member(bootstrap, "g-classic", "classic", "grouped")) {
                modern.commitSync(Map.of(new TopicPartition("grouped", 0), new OffsetAndMetadata(0)));
                classic.commitSync(Map.of(new TopicPartition("grouped", 0), new OffsetAndMetadata(0)));
                Map<String, String> types = new TreeMap<>();
                for (GroupListing listing : admin.listGroups().all().get()) {
                    types.put(listing.groupId(), listing.type().map(Enum::name).orElse("?")
                            + "/" + listing.groupState().map(Enum::name).orElse("?"));
                }
                out.put("listed_groups", types);
                var groups = admin.describeConsumerGroups(List.of("g-consumer", "g-classic")).all().get();
                out.put("described_consumer", described(groups.get("g-consumer")));
                out.put("described_classic", described(groups.get("g-classic")));
                out.put("offset_delete_subscribed", Json.outcome(admin.deleteConsumerGroupOffsets("g-classic",
                        Set.of(new TopicPartition("grouped", 0))).all()));
                admin.removeMembersFromConsumerGroup("g-classic", new RemoveMembersFromConsumerGroupOptions()).all().get();
                out.put("classic_after_removal",
                        described(admin.describeConsumerGroups(List.of("g-classic")).all().get().get("g-classic")));
            }
            out.put("offset_delete_empty", Json.outcome(admin.deleteConsumerGroupOffsets("g-classic",
                    Set.of(new TopicPartition("grouped", 0))).all()));
            out.put("offsets_after_delete",
                    admin.listConsumerGroupOffsets("g-classic").partitionsToOffsetAndMetadata().get().size());

            ConfigResource groupResource = new ConfigResource(ConfigResource.Type.GROUP, "g-consumer");
            admin.incrementalAlterConfigs(Map.of(groupResource, List.of(new AlterConfigOp(
                    new ConfigEntry("consumer.session.timeout.ms", "50000"), AlterConfigOp.OpType.SET)))).all().get();
            ConfigEntry sessionTimeout = admin.describeConfigs(List.of(groupResource)).all().get().get(groupResource)
                    .get("consumer.session.timeout.ms");
            out.put("group_session_timeout", sessionTimeout.value() + "/" + sessionTimeout.source().name());
            List<String> groupConfigs = new ArrayList<>();
            admin.listConfigResources(Set.of(ConfigResource.Type.GROUP), new org.apache.kafka.clients.admin.ListConfigResourcesOptions())
                    .all().get().forEach(resource -> groupConfigs.add(resource.name()));
            out.put("group_config_resources", groupConfigs);
        }
    }

    private static String electionOutcome(Admin admin, TopicPartition partition) throws Exception {
        Optional<Throwable> error = admin.electLeaders(ElectionType.PREFERRED, Set.of(partition)).partitions().get()
                .get(partition);
        return error.map(e -> e.getClass().getSimpleName()).orElse("ok");
    }

    private static int finalized(Admin admin, String feature) throws Exception {
        return admin.describeFeatures().featureMetadata().get().finalizedFeatures().get(feature).maxVersionLevel();
    }

    private static KafkaProducer<String, String> transactional(String bootstrap, String id) {
        Properties config = new Properties();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        KafkaProducer<String, String> producer = new KafkaProducer<>(config);
        producer.initTransactions();
        return producer;
    }

    /** How many records a read_committed consumer reads from partition 0, and its end offset. */
    private static List<Long> readCommitted(String bootstrap, TopicPartition partition) {
        Properties config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
            consumer.assign(List.of(partition));
            long end = consumer.endOffsets(List.of(partition)).get(partition);
            long read = 0;
            long deadline = System.currentTimeMillis() + 10_000;
            while (consumer.position(partition) < end && System.currentTimeMillis() < deadline) {
                read += consumer.poll(Duration.ofMillis(100)).count();
            }
            return List.of(read, end);
        }
    }

    private static void transactions(String bootstrap, String topic, Map<String, Object> out) throws Exception {
        TopicPartition partition = new TopicPartition(topic, 0);
        try (Admin admin = admin(bootstrap);
             KafkaProducer<String, String> hanging = transactional(bootstrap, "hanging-tx")) {
            hanging.beginTransaction();
            for (int i = 0; i < 3; i++) hanging.send(new ProducerRecord<>(topic, 0, "k", "open-" + i));
            hanging.flush();

            Map<String, String> listed = new TreeMap<>();
            for (TransactionListing listing : admin.listTransactions().all().get()) {
                listed.put(listing.transactionalId(), listing.state().name());
            }
            out.put("listed", listed);
            out.put("listed_ongoing", admin.listTransactions(new ListTransactionsOptions()
                    .filterStates(Set.of(TransactionState.ONGOING))).all().get().size());
            out.put("listed_committed", admin.listTransactions(new ListTransactionsOptions()
                    .filterStates(Set.of(TransactionState.COMPLETE_COMMIT))).all().get().size());
            TransactionDescription described = admin.describeTransactions(List.of("hanging-tx")).all().get()
                    .get("hanging-tx");
            out.put("described_state", described.state().name());
            out.put("described_partitions", described.topicPartitions().stream().map(TopicPartition::toString).toList());
            out.put("described_unknown", Json.outcome(admin.describeTransactions(List.of("nobody")).all()));

            ProducerState producer = admin.describeProducers(List.of(partition)).partitionResult(partition).get()
                    .activeProducers().get(0);
            out.put("producer_matches", producer.producerId() == described.producerId()
                    && producer.producerEpoch() == described.producerEpoch());
            out.put("transaction_start_offset", producer.currentTransactionStartOffset().orElse(-1L));
            out.put("read_committed_while_open", readCommitted(bootstrap, partition));

            admin.abortTransaction(new AbortTransactionSpec(partition, producer.producerId(),
                    (short) producer.producerEpoch(), producer.coordinatorEpoch().orElse(0))).all().get();
            out.put("start_offset_after_abort", admin.describeProducers(List.of(partition)).partitionResult(partition)
                    .get().activeProducers().get(0).currentTransactionStartOffset().orElse(-1L));
            out.put("read_committed_after_abort", readCommitted(bootstrap, partition));

            admin.fenceProducers(List.of("hanging-tx")).all().get();
            String commit;
            try {
                hanging.commitTransaction();
                commit = "committed";
            } catch (org.apache.kafka.common.KafkaException e) {
                commit = e.getClass().getSimpleName();
            }
            out.put("commit_after_fence", commit);
            out.put("fence_unknown", Json.outcome(admin.fenceProducers(List.of("nobody")).all()));
        }
        try (Admin admin = admin(bootstrap);
             KafkaProducer<String, String> second = transactional(bootstrap, "terminated-tx")) {
            second.beginTransaction();
            second.send(new ProducerRecord<>(topic, 0, "k", "terminated")).get();
            admin.forceTerminateTransaction("terminated-tx").result().get();
            out.put("terminated_state", admin.describeTransactions(List.of("terminated-tx")).all().get()
                    .get("terminated-tx").state().name());
            out.put("read_committed_after_terminate", readCommitted(bootstrap, new TopicPartition(topic, 0)));
        }
    }

    private static Properties secured(String bootstrap, String cafile, String mechanism, String jaas) {
        Properties config = new Properties();
        config.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_SSL");
        config.put("ssl.truststore.type", "PEM");
        config.put("ssl.truststore.location", cafile);
        config.put("sasl.mechanism", mechanism);
        config.put("sasl.jaas.config", jaas);
        config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "15000");
        config.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        return config;
    }

    private static String scram(String user, String password, boolean token) {
        return "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + user
                + "\" password=\"" + password + "\"" + (token ? " tokenauth=\"true\";" : ";");
    }

    private static String plain(String user, String password) {
        return "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + user
                + "\" password=\"" + password + "\";";
    }

    /** What one record written to the topic by this client ends in: "ok" or the exception's simple name. */
    private static String write(Properties config, String topic) {
        config.put(ProducerConfig.RETRIES_CONFIG, "0");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
            producer.send(new ProducerRecord<>(topic, "hello")).get();
            return "ok";
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        } catch (org.apache.kafka.common.KafkaException e) {
            return e.getClass().getSimpleName();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "InterruptedException";
        }
    }

    /** Whether this client logs in: the cluster id it reads, or the exception's simple name. */
    private static String login(Properties config) {
        try (Admin admin = Admin.create(config)) {
            return admin.describeCluster().nodes().get().isEmpty() ? "no nodes" : "ok";
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "InterruptedException";
        }
    }

    private static void secure(String bootstrap, String cafile, Map<String, Object> out) throws Exception {
        Properties superUser = secured(bootstrap, cafile, "SCRAM-SHA-512", scram("admin", "admin-secret", false));
        Properties carol = secured(bootstrap, cafile, "SCRAM-SHA-256", scram("carol", "carol-secret", false));
        Properties dave = secured(bootstrap, cafile, "PLAIN", plain("dave", "dave-secret"));
        try (Admin admin = Admin.create(superUser)) {
            admin.createTopics(List.of(new NewTopic("secured", 1, (short) 1))).all().get();

            // SCRAM users (AlterUserScramCredentials, DescribeUserScramCredentials).
            admin.alterUserScramCredentials(List.<UserScramCredentialAlteration>of(new UserScramCredentialUpsertion(
                    "carol", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "carol-secret"))).all().get();
            List<String> mechanisms = new ArrayList<>();
            admin.describeUserScramCredentials(List.of("carol")).all().get().get("carol").credentialInfos()
                    .forEach(info -> mechanisms.add(info.mechanism().mechanismName() + "/" + info.iterations()));
            out.put("carol_credentials", mechanisms);
            out.put("describe_unknown_user", Json.outcome(admin.describeUserScramCredentials(List.of("nobody"))
                    .description("nobody")));

            // ACLs (CreateAcls, DescribeAcls, DeleteAcls) decide the writes.
            out.put("carol_before_acl", write(carol, "secured"));
            out.put("dave_before_acl", write(dave, "secured"));
            admin.createAcls(List.of(
                    new AclBinding(new ResourcePattern(ResourceType.TOPIC, "secured", PatternType.LITERAL),
                            new AccessControlEntry("User:carol", "*", AclOperation.WRITE, AclPermissionType.ALLOW)),
                    new AclBinding(new ResourcePattern(ResourceType.TOPIC, "sec", PatternType.PREFIXED),
                            new AccessControlEntry("User:dave", "*", AclOperation.WRITE, AclPermissionType.ALLOW))))
                    .all().get();
            out.put("carol_with_acl", write(carol, "secured"));
            out.put("dave_with_acl", write(dave, "secured"));
            AclBindingFilter carolsAcls = new AclBindingFilter(ResourcePatternFilter.ANY,
                    new AccessControlEntryFilter("User:carol", null, AclOperation.ANY, AclPermissionType.ANY));
            out.put("acls_described", admin.describeAcls(AclBindingFilter.ANY).values().get().size());
            out.put("acls_deleted", admin.deleteAcls(List.of(carolsAcls)).all().get().size());
            out.put("carol_after_delete", write(carol, "secured"));
            out.put("acls_left", admin.describeAcls(AclBindingFilter.ANY).values().get().size());

            admin.alterUserScramCredentials(List.<UserScramCredentialAlteration>of(
                    new UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256))).all().get();
            out.put("carol_login_after_deletion", login(carol));

            // Delegation tokens (Create, Describe, Renew, Expire) and a login with one.
            DelegationToken token = admin.createDelegationToken(new CreateDelegationTokenOptions()).delegationToken().get();
            String tokenId = token.tokenInfo().tokenId();
            String hmac = Base64.getEncoder().encodeToString(token.hmac());
            out.put("token_owner", token.tokenInfo().owner().toString());
            out.put("tokens_described", admin.describeDelegationToken().delegationTokens().get().size());
            out.put("token_login", login(secured(bootstrap, cafile, "SCRAM-SHA-256", scram(tokenId, hmac, true))));
            long renewed = admin.renewDelegationToken(token.hmac(), new RenewDelegationTokenOptions()
                    .renewTimePeriodMs(3_600_000)).expiryTimestamp().get();
            out.put("renewed_within_hour", renewed <= System.currentTimeMillis() + 3_600_000);
            admin.expireDelegationToken(token.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1))
                    .expiryTimestamp().get();
            out.put("tokens_after_expiry", admin.describeDelegationToken().delegationTokens().get().size());
            out.put("token_login_after_expiry",
                    login(secured(bootstrap, cafile, "SCRAM-SHA-256", scram(tokenId, hmac, true))));
        }
    }
}
