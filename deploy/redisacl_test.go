// Redis's ACL (redis/acl.sh, redis/ward-scheduler.acl): the one Redis user
// of Ward, the schedulers', may do what the job store does and nothing
// else.

package deploy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/jobstore/storetest"
	"github.com/ward-run/ward/internal/testing/redistest"
)

const (
	redisACLScript = "redis/acl.sh"
	redisACLRules  = "redis/ward-scheduler.acl"
	// redisSchedulerUser is the user acl.sh gives the rules to, and the
	// user the schedulers' REDIS_URL names.
	redisSchedulerUser = "ward-scheduler"
)

// writeRedisACL runs acl.sh, as the compose file's Redis does, with env
// (REDIS_PASSWORD=..., REDIS_ADMIN_PASSWORD=...) and returns the ACL file
// it wrote.
func writeRedisACL(t *testing.T, env ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "users.acl")
	cmd := exec.Command("sh", redisACLScript, out)
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sh %s: %v\n%s", redisACLScript, err, b)
	}
	return out
}

// redisACLRuleLine is ward-scheduler.acl's rules as acl.sh joins them: its
// lines but the comments, on one line.
func redisACLRuleLine(t *testing.T, src []byte) string {
	t.Helper()
	var rules []string
	for line := range strings.SplitSeq(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		rules = append(rules, strings.Fields(line)...)
	}
	if len(rules) == 0 {
		t.Fatalf("no rules in %s", redisACLRules)
	}
	return strings.Join(rules, " ")
}

func randomPassword(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestRedisACLFile checks what acl.sh writes: the default user off, the
// scheduler's user with ward-scheduler.acl's rules, the admin only when
// its password is given, and no file for a password that would not fit a
// URL or an ACL line.
func TestRedisACLFile(t *testing.T) {
	src, err := os.ReadFile(redisACLRules)
	if err != nil {
		t.Fatal(err)
	}
	rules := redisACLRuleLine(t, src)
	read := func(path string) []string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v %v, want readable by its owner only (it holds passwords)", path, fi.Mode(), err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	got := read(writeRedisACL(t, "REDIS_PASSWORD=s3cret", "REDIS_ADMIN_PASSWORD="))
	want := []string{"user default off", "user ward-scheduler on >s3cret " + rules}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("acl.sh wrote\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got = read(writeRedisACL(t, "REDIS_PASSWORD=s3cret", "REDIS_ADMIN_PASSWORD=adm1n"))
	if len(got) != 3 || got[2] != "user ward-admin on >adm1n ~* &* +@all" {
		t.Errorf("with REDIS_ADMIN_PASSWORD, acl.sh wrote %q", got)
	}
	for _, env := range [][]string{
		{"REDIS_PASSWORD="},
		{"REDIS_PASSWORD=two words"},
		{"REDIS_PASSWORD=a@b"},
		{"REDIS_PASSWORD=ok", "REDIS_ADMIN_PASSWORD=x y"},
	} {
		out := filepath.Join(t.TempDir(), "users.acl")
		cmd := exec.Command("sh", redisACLScript, out)
		cmd.Env = append(os.Environ(), append([]string{"REDIS_ADMIN_PASSWORD="}, env...)...)
		if b, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("acl.sh with %q: no error:\n%s", env, b)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("acl.sh with %q wrote %s", env, out)
		}
	}
}

// TestRedisACL starts a redis-server on exactly the ACL file the compose
// file's Redis runs with (acl.sh's), runs the job store's conformance
// suite as the schedulers' user, on one server and sharded (the keys a
// Redis Cluster's store uses), and checks that Redis refused it nothing
// (its ACL log is empty); then that what is outside the rules is refused
// with NOPERM (configuration, flushes, key scans, keys outside the
// store's namespace, from a script too), that nothing connects without a
// user, and that the commands only a cluster's client sends are allowed.
func TestRedisACL(t *testing.T) {
	schedPass, adminPass := randomPassword(t), randomPassword(t)
	addr := redistest.StartArgs(t, "--aclfile", writeRedisACL(t, "REDIS_PASSWORD="+schedPass, "REDIS_ADMIN_PASSWORD="+adminPass))
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: addr, Username: "ward-admin", Password: adminPass})
	defer admin.Close()
	if err := admin.ACLLogReset(ctx).Err(); err != nil {
		t.Fatalf("ACL LOG RESET as ward-admin: %v", err)
	}
	schedURL := "redis://" + redisSchedulerUser + ":" + schedPass + "@" + addr + "/0"

	// refusals are the ACL log's entries, but CLIENT SETINFO's: go-redis
	// sends it on every connection and ignores its answer; Redis 7.2 and
	// later know it, and the rules do not allow it (Redis 7.0 refuses to
	// load a rule that names it).
	refusals := func(t *testing.T) []string {
		t.Helper()
		entries, err := admin.ACLLog(ctx, 1000).Result()
		if err != nil {
			t.Fatalf("ACL LOG: %v", err)
		}
		var out []string
		for _, e := range entries {
			if e.Object == "client|setinfo" {
				continue
			}
			out = append(out, e.Username+": "+e.Reason+" "+e.Context+" "+e.Object)
		}
		return out
	}

	for _, v := range []struct{ name, query string }{{"OneServer", ""}, {"Sharded", "?shards=4"}, {"Logged", "?log=acl&snapshot=1&view=1"}} {
		t.Run(v.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) jobstore.Store {
				if err := admin.FlushDB(ctx).Err(); err != nil {
					t.Fatalf("FLUSHDB as ward-admin: %v", err)
				}
				s, err := jobstore.Open(schedURL + v.query)
				if err != nil {
					t.Fatalf("open the store as %s: %v", redisSchedulerUser, err)
				}
				return s
			})
			if r := refusals(t); len(r) > 0 {
				t.Errorf("Redis refused the store as %s (ACL LOG): the rules in %s lack what it uses:\n%s",
					redisSchedulerUser, redisACLRules, strings.Join(r, "\n"))
			}
		})
	}

	// A log's view, taken over: the next owner reads what the view holds
	// before it writes (view=1).
	t.Run("LoggedViewTakeover", func(t *testing.T) {
		if err := admin.FlushDB(ctx).Err(); err != nil {
			t.Fatalf("FLUSHDB as ward-admin: %v", err)
		}
		for i := range 2 {
			s, err := jobstore.Open(schedURL + "?log=aclview&view=1")
			if err != nil {
				t.Fatalf("open the store as %s: %v", redisSchedulerUser, err)
			}
			id := fmt.Sprintf("j%d", i)
			if _, _, err := s.Create(ctx, &jobstore.Job{ID: id, Topic: "job.echo", Tenant: "acme"}, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Transition(ctx, id, jobstore.Transition{To: jobstore.Cancelled}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil { // its view's last write
				t.Fatal(err)
			}
		}
		if n, err := admin.LLen(ctx, "{aclview}job:events:j0").Result(); err != nil || n != 2 {
			t.Fatalf("the view holds %d events of j0 (%v), want 2", n, err)
		}
		if r := refusals(t); len(r) > 0 {
			t.Errorf("Redis refused the view's writes as %s (ACL LOG):\n%s", redisSchedulerUser, strings.Join(r, "\n"))
		}
	})

	// Every command the rules allow the store used (Redis counts a
	// script's calls too), but those only a cluster's client or a /db
	// other than 0 sends: the rules allow no more than the store needs.
	t.Run("NoMoreThanUsed", func(t *testing.T) {
		stats, err := admin.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		used := map[string]bool{}
		for line := range strings.SplitSeq(stats, "\n") {
			if name, _, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls="); ok && name != line {
				used[name] = true
			}
		}
		src, err := os.ReadFile(redisACLRules)
		if err != nil {
			t.Fatal(err)
		}
		notSentHere := map[string]bool{"select": true, "cluster|slots": true, "cluster|info": true, "command": true, "asking": true}
		for _, r := range strings.Fields(redisACLRuleLine(t, src)) {
			cmd, ok := strings.CutPrefix(r, "+")
			if !ok || strings.HasPrefix(cmd, "@") || notSentHere[cmd] {
				continue
			}
			if !used[cmd] {
				t.Errorf("%s allows %s, which the store did not send in the suite: drop it", redisACLRules, cmd)
			}
		}
	})

	t.Run("Refused", func(t *testing.T) {
		opt, err := redis.ParseURL(schedURL)
		if err != nil {
			t.Fatal(err)
		}
		sched := redis.NewClient(opt)
		defer sched.Close()
		if err := sched.Set(ctx, "job:acl-probe", "1", 0).Err(); err != nil {
			t.Fatalf("SET job:acl-probe as %s: %v", redisSchedulerUser, err)
		}
		for _, cmd := range [][]any{
			{"config", "get", "*"},
			{"config", "set", "appendonly", "no"},
			{"flushall"},
			{"flushdb"},
			{"keys", "*"},
			{"scan", "0"},
			{"info"},
			{"client", "list"},
			{"acl", "list"},
			{"acl", "setuser", redisSchedulerUser, "+@all"},
			{"script", "flush"},
			{"save"},
			{"bgrewriteaof"},
			{"replicaof", "127.0.0.1", "1"},
			{"module", "list"},
			{"function", "list"},
			{"publish", "ch", "x"},
			{"set", "other:x", "1"},
			{"get", "other:x"},
			{"del", "other:x"},
			{"set", "jobx", "1"},
			{"rename", "job:acl-probe", "other:x"},
			{"copy", "job:acl-probe", "other:x"},
			{"eval", "return redis.call('SET', KEYS[1], '1')", 1, "other:x"},
			{"cluster", "reset"},
		} {
			err := sched.Do(ctx, cmd...).Err()
			if err == nil || !strings.Contains(err.Error(), "NOPERM") {
				t.Errorf("%v as %s: %v, want NOPERM", cmd, redisSchedulerUser, err)
			}
		}
		// A script may touch no key outside the namespace either, whatever
		// KEYS it declares.
		err = sched.Do(ctx, "eval", "return redis.call('SET', 'other:y', '1')", 1, "job:acl-probe").Err()
		if err == nil || !strings.Contains(err.Error(), "can't access at least one of the keys") && !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("a script setting other:y as %s: %v, want it refused", redisSchedulerUser, err)
		}
		if n, err := admin.Exists(ctx, "other:x", "other:y", "jobx").Result(); err != nil || n != 0 {
			t.Errorf("keys outside the namespace were written: %d %v", n, err)
		}
		// Nothing connects without a user: the default user is off.
		anon := redis.NewClient(&redis.Options{Addr: addr})
		defer anon.Close()
		if err := anon.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			t.Errorf("PING without a user: %v, want NOAUTH", err)
		}
		wrong := redis.NewClient(&redis.Options{Addr: addr, Username: redisSchedulerUser, Password: "not-" + schedPass})
		defer wrong.Close()
		if err := wrong.Ping(ctx).Err(); err == nil {
			t.Errorf("%s with a wrong password: answered", redisSchedulerUser)
		}
		if err := anon.Do(ctx, "auth", "default", "").Err(); err == nil {
			t.Errorf("AUTH default with no password: accepted")
		}
	})

	// What only a Redis Cluster's client sends, which one server does not
	// answer: allowed, as ACL DRYRUN says.
	t.Run("ClusterCommands", func(t *testing.T) {
		for _, cmd := range [][]any{{"cluster", "slots"}, {"cluster", "info"}, {"command"}, {"asking"}} {
			if res, err := admin.ACLDryRun(ctx, redisSchedulerUser, cmd...).Result(); err != nil || res != "OK" {
				t.Errorf("ACL DRYRUN %s %v: %q %v, want OK", redisSchedulerUser, cmd, res, err)
			}
		}
		for _, cmd := range [][]any{{"cluster", "reset"}, {"cluster", "forget", "x"}, {"readwrite"}} {
			if res, err := admin.ACLDryRun(ctx, redisSchedulerUser, cmd...).Result(); err == nil && res == "OK" {
				t.Errorf("ACL DRYRUN %s %v: OK, want refused", redisSchedulerUser, cmd)
			}
		}
	})
}

// TestRedisACLHelmCopy: the chart's copy of the rules is the rules.
func TestRedisACLHelmCopy(t *testing.T) {
	a, err1 := os.ReadFile(redisACLRules)
	b, err2 := os.ReadFile(filepath.Join("helm", "ward", "files", "redis-ward-scheduler.acl"))
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("deploy/helm/ward/files/redis-ward-scheduler.acl differs from deploy/%s: copy it again", redisACLRules)
	}
}
