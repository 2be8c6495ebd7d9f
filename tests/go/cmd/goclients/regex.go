package main

import (
	"context"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoRegex: a KIP-848 member subscribed by regex (the broker resolves it) reads the
// matching topics, including one created after it joined, and none other.
func kgoRegex(ctx context.Context, bootstrap, prefix string) any {
	admin := newClient(bootstrap)
	defer admin.Close()
	adm := kadm.NewClient(admin)
	for _, t := range []string{prefix + "-a", prefix + "-b", "other-" + prefix} {
		created, err := adm.CreateTopic(ctx, 1, 1, nil, t)
		check(firstErr(err, created.Err), "creating "+t)
		check(admin.ProduceSync(ctx, &kgo.Record{Topic: t, Value: []byte(t)}).FirstErr(), "producing")
	}
	consumer := newClient(bootstrap, kgo.ConsumerGroup("go-regex-"+prefix), kgo.ConsumeRegex(),
		kgo.ConsumeTopics("^"+prefix+"-.*"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.MetadataMinAge(100*time.Millisecond), kgo.MetadataMaxAge(time.Second))
	defer consumer.Close()
	seen := []string{}
	poll := func(want int) {
		for len(seen) < want {
			fetches := consumer.PollFetches(ctx)
			fetches.EachError(func(t string, p int32, err error) { check(err, "fetching "+t) })
			fetches.EachRecord(func(r *kgo.Record) { seen = append(seen, string(r.Value)) })
		}
	}
	poll(2)
	late := prefix + "-late"
	created, err := adm.CreateTopic(ctx, 1, 1, nil, late)
	check(firstErr(err, created.Err), "creating "+late)
	check(admin.ProduceSync(ctx, &kgo.Record{Topic: late, Value: []byte(late)}).FirstErr(), "producing")
	poll(3)
	sort.Strings(seen)
	check(consumer.CommitUncommittedOffsets(ctx), "committing")
	return map[string]any{"read": seen}
}
