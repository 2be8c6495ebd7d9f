package main

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// kgoScram: kadm creates a SCRAM-SHA-512 credential over PLAINTEXT; a kgo client logs in
// with it over SASL_PLAINTEXT and produces; a wrong password and the deleted credential
// are refused.
func kgoScram(ctx context.Context, plaintext, sasl, topic string) any {
	admin := newClient(plaintext)
	defer admin.Close()
	adm := kadm.NewClient(admin)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "dave", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "dave-secret"},
	})
	check(err, "creating a SCRAM credential")
	check(altered["dave"].Err, "creating a SCRAM credential")

	login := func(password string) error {
		auth := scram.Auth{User: "dave", Pass: password}
		cl := newClient(sasl, kgo.SASL(auth.AsSha512Mechanism()), kgo.DefaultProduceTopic(topic),
			// kgo retries a refused login a few times: quickly, here.
			kgo.RequestRetries(0), kgo.RecordRetries(1), kgo.MetadataMinAge(50*time.Millisecond),
			kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
		defer cl.Close()
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("from dave")}).FirstErr()
	}
	r := map[string]any{}
	r["logged_in"] = errName(login("dave-secret"))
	r["wrong_password"] = errName(login("not-the-secret"))
	deleted, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "dave", Mechanism: kadm.ScramSha512}}, nil)
	check(err, "deleting the SCRAM credential")
	check(deleted["dave"].Err, "deleting the SCRAM credential")
	r["after_delete"] = errName(login("dave-secret"))
	return r
}
