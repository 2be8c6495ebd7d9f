package mockbroker;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The Java Admin's streams-group calls (KIP-1071) against a streams group.
 *
 * <p>{@code describe BOOTSTRAP GROUP}: describeStreamsGroups and listGroups(forStreamsGroups) while the
 * application runs. {@code offsets BOOTSTRAP GROUP TOPIC}: once it has stopped, listStreamsGroupOffsets,
 * alterStreamsGroupOffsets (TOPIC-0 back to 0), deleteStreamsGroupOffsets (TOPIC-1) and deleteStreamsGroups.
 */
public final class StreamsGroupAdmin {
    private StreamsGroupAdmin() {}

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String group = args[2];
        Properties config = new Properties();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        Map<String, Object> out = new TreeMap<>();
        try (Admin admin = Admin.create(config)) {
            if (mode.equals("describe")) {
                StreamsGroupDescription described =
                        admin.describeStreamsGroups(List.of(group)).describedGroups().get(group).get();
                out.put("state", described.groupState().toString());
                out.put("members", described.members().size());
                out.put("epochs_match", described.groupEpoch() == described.targetAssignmentEpoch());
                out.put("assignor", described.assignorName().orElse(null));
                Map<String, Object> subtopologies = new TreeMap<>();
                for (StreamsGroupSubtopologyDescription sub : described.subtopologies()) {
                    Map<String, Object> topics = new TreeMap<>();
                    topics.put("source", sorted(sub.sourceTopics()));
                    topics.put("changelogs", sorted(sub.stateChangelogTopics().keySet()));
                    topics.put("repartition_sources", sorted(sub.repartitionSourceTopics().keySet()));
                    subtopologies.put(sub.subtopologyId(), topics);
                }
                out.put("subtopologies", subtopologies);
                List<String> active = new ArrayList<>();
                for (StreamsGroupMemberDescription member : described.members()) {
                    for (StreamsGroupMemberAssignment.TaskIds tasks : member.assignment().activeTasks()) {
                        for (int partition : tasks.partitions()) {
                            active.add(tasks.subtopologyId() + "_" + partition);
                        }
                    }
                }
                out.put("active_tasks", sorted(active));
                out.put("listed", listed(admin));
            } else if (mode.equals("offsets")) {
                String topic = args[3];
                out.put("committed", offsets(admin, group, topic));
                admin.alterStreamsGroupOffsets(group, Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(0)))
                        .all().get();
                out.put("altered", offsets(admin, group, topic));
                admin.deleteStreamsGroupOffsets(group, Set.of(new TopicPartition(topic, 1))).all().get();
                out.put("after_delete", offsets(admin, group, topic));
                admin.deleteStreamsGroups(List.of(group)).all().get();
                out.put("listed_after_delete", listed(admin));
            } else {
                throw new IllegalArgumentException("unknown mode " + mode);
            }
        }
        System.out.println(Json.of(out));
    }

    /** The group's committed offsets of TOPIC's partitions, by partition. */
    private static Map<String, Object> offsets(Admin admin, String group, String topic) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> all = admin
                .listStreamsGroupOffsets(Map.of(group, new ListStreamsGroupOffsetsSpec()))
                .partitionsToOffsetAndMetadata(group)
                .get();
        Map<String, Object> out = new TreeMap<>();
        all.forEach((partition, offset) -> {
            if (partition.topic().equals(topic) && offset != null) {
                out.put(String.valueOf(partition.partition()), offset.offset());
            }
        });
        return out;
    }

    private static List<String> listed(Admin admin) throws Exception {
        List<String> out = new ArrayList<>();
        for (GroupListing listing : admin.listGroups(ListGroupsOptions.forStreamsGroups()).all().get()) {
            out.add(listing.groupId() + ":" + listing.type().map(Object::toString).orElse("?"));
        }
        return sorted(out);
    }

    private static List<String> sorted(java.util.Collection<String> values) {
        List<String> out = new ArrayList<>(values);
        Collections.sort(out);
        return out;
    }
}
