package auth_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
)

// The API key bucket is the admins' alone: no tenant, host, scheduler or
// kernel may create it, read it or write it, on a real server that checks
// their credentials. Other buckets stay as they were to them.
func TestAPIKeyBucketPermRefused(t *testing.T) {
	s := natstest.StartSecure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bucket := auth.APIKeyBucket
	stream := "KV_" + bucket

	others := []struct {
		role auth.Role
		name string
	}{{auth.Tenant, "acme"}, {auth.Host, "h1"}, {auth.Scheduler, "s1"}, {auth.Safety, "safety"}}

	// Before it exists: none of them may create it.
	for _, o := range others {
		js := jsAs(t, s, o.role, o.name, nil)
		short, cancelShort := context.WithTimeout(ctx, time.Second)
		if _, err := js.CreateKeyValue(short, jetstream.KeyValueConfig{Bucket: bucket}); err == nil {
			t.Fatalf("%s %s created the API key bucket", o.role, o.name)
		}
		cancelShort()
	}

	admin := jsAs(t, s, auth.Admin, "admin", nil)
	kv, err := admin.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: 1})
	if err != nil {
		t.Fatal(err)
	}
	value := []byte(`{"id":"ab12cd34","hash":"sha256:00"}`)
	if _, err := kv.Put(ctx, "ab12cd34", value); err != nil {
		t.Fatal(err)
	}
	// A bucket the schedulers and hosts read, for the legitimate path.
	if _, err := admin.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "ward_policy"}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "ward_modules"}); err != nil {
		t.Fatal(err)
	}

	refused := []string{
		"$KV." + bucket + ".ab12cd34",
		"$JS.API.STREAM.INFO." + stream,
		"$JS.API.STREAM.MSG.GET." + stream,
		"$JS.API.DIRECT.GET." + stream + ".$KV." + bucket + ".ab12cd34",
		"$JS.API.CONSUMER.CREATE." + stream,
		"$JS.API.CONSUMER.CREATE." + stream + ".c1.$KV." + bucket + ".>",
		"$JS.API.CONSUMER.DURABLE.CREATE." + stream + ".c1",
		"$JS.API.STREAM.UPDATE." + stream,
		"$JS.API.STREAM.PURGE." + stream,
		"$JS.API.STREAM.DELETE." + stream,
		"$JS.API.STREAM.MSG.DELETE." + stream,
	}
	for _, o := range others {
		var v violations
		js := jsAs(t, s, o.role, o.name, &v)
		short, cancelShort := context.WithTimeout(ctx, time.Second)
		if _, err := js.KeyValue(short, bucket); err == nil {
			t.Fatalf("%s %s opened the API key bucket", o.role, o.name)
		}
		cancelShort()
		nc := js.Conn()
		for _, subj := range refused {
			if err := nc.Publish(subj, []byte("{}")); err != nil {
				t.Fatal(err)
			}
		}
		_ = nc.Flush()
		poll.Until(t, 5*time.Second, string(o.role)+" refused every request on the API key bucket", func() bool {
			for _, subj := range refused {
				if !v.has(`Publish to "` + subj + `"`) {
					return false
				}
			}
			return true
		})
		if o.role == auth.Tenant {
			continue
		}
		// What they read stays readable to them: the module registry, and
		// a kernel the policy bucket (the only stream it may read).
		bucket := "ward_modules"
		if o.role == auth.Safety {
			bucket = "ward_policy"
		}
		short, cancelShort = context.WithTimeout(ctx, 5*time.Second)
		if _, err := js.KeyValue(short, bucket); err != nil {
			t.Fatalf("%s %s no longer reads %s: %v", o.role, o.name, bucket, err)
		}
		cancelShort()
	}
	// Nothing they sent changed it.
	e, err := kv.Get(ctx, "ab12cd34")
	if err != nil || !bytes.Equal(e.Value(), value) || e.Revision() != 1 {
		t.Fatalf("the key after the refused requests: %v", err)
	}
}

// Credentials issued now carry the permissions this version grants: ward
// dev and ward auth init keep them (auth.UpToDate), and issue again those
// of an older version, which lack the API key bucket's denials.
func TestAPIKeyPermUpToDate(t *testing.T) {
	a, err := auth.Init(filepath.Join(t.TempDir(), "auth"))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []struct {
		role auth.Role
		name string
	}{{auth.Admin, "admin"}, {auth.Scheduler, "scheduler"}, {auth.Safety, "safety"}, {auth.Host, "h1"}, {auth.Tenant, "acme"}} {
		b, err := a.Issue(it.role, it.name, auth.IssueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), string(it.role)+".creds")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if !auth.UpToDate(p, it.role, it.name) {
			t.Errorf("a %s credential issued now is not up to date", it.role)
		}
		if it.role == auth.Host && auth.UpToDate(p, it.role, "h2") {
			t.Error("a host credential is up to date for another host")
		}
	}
	for _, role := range []auth.Role{auth.Scheduler, auth.Safety, auth.Host} {
		p, err := auth.Permissions(role, "h1")
		if err != nil {
			t.Fatal(err)
		}
		if !p.Pub.Deny.Contains("$KV."+auth.APIKeyBucket+".>") || !p.Pub.Deny.Contains("$JS.API.*.*.KV_"+auth.APIKeyBucket) {
			t.Errorf("%s: the API key bucket is not denied: %v", role, p.Pub.Deny)
		}
	}
}

// jsAs is JetStream on a connection with a fresh credential of role and
// name, its refusals collected in v.
func jsAs(t *testing.T, s *natstest.Secure, role auth.Role, name string, v *violations) jetstream.JetStream {
	t.Helper()
	nc := connect(t, s, s.Creds(role, name), v)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
