// The deployment files (compose/, helm/, systemd/) are checked here
// against the ward binary they run.

package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"go.yaml.in/yaml/v3"
)

// repoRoot is the repository, seen from this package's directory.
const repoRoot = ".."

// buildWard builds the ward binary into dir and returns its path.
func buildWard(t testing.TB, dir string) string {
	t.Helper()
	bin, err := goBuildWard(dir)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func goBuildWard(dir string) (string, error) {
	bin := filepath.Join(dir, "ward")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/ward")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/ward: %v\n%s", err, out)
	}
	return bin, nil
}

// wardHelps are `ward <command> --help` outputs, keyed by the command
// path ("scheduler", "auth host add"): built once, the binary then removed.
var (
	helpOnce sync.Once
	helps    map[string]string
	helpErr  error
)

// helpCommands are the commands the deployment files run.
var helpCommands = []string{"", "scheduler", "safety", "host", "gateway", "auth init", "auth host add"}

// wardHelp returns `ward <path> --help`, and fails t when path is not a
// command of the binary.
func wardHelp(t *testing.T, path string) string {
	t.Helper()
	helpOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ward-deploy-*")
		if err != nil {
			helpErr = err
			return
		}
		defer func() {
			// A ward binary (some 100 MB) would stay in the temp dir.
			if err := os.RemoveAll(dir); err != nil {
				t.Logf("removing %s: %v", dir, err)
			}
		}()
		bin, err := goBuildWard(dir)
		if err != nil {
			helpErr = err
			return
		}
		helps = map[string]string{}
		for _, c := range helpCommands {
			args := append(strings.Fields(c), "--help")
			out, err := exec.Command(bin, args...).CombinedOutput()
			if err != nil {
				helpErr = fmt.Errorf("ward %s: %v\n%s", strings.Join(args, " "), err, out)
				return
			}
			helps[c] = string(out)
		}
	})
	if helpErr != nil {
		t.Fatal(helpErr)
	}
	h, ok := helps[path]
	if !ok {
		t.Fatalf("ward %s: not a command the deployment files may run (helpCommands)", path)
	}
	if !strings.Contains(h, "ward "+path+" [flags]") && !strings.Contains(h, "ward "+path+" NAME [flags]") {
		t.Fatalf("ward %s --help does not describe that command:\n%s", path, h)
	}
	return h
}

var flagLine = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)`)

// wardFlags are the flags `ward <path> --help` lists, its global ones too.
func wardFlags(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(wardHelp(t, path), -1) {
		out[m[1]] = true
	}
	if len(out) < 3 {
		t.Fatalf("ward %s --help lists %d flags: the help's format changed?", path, len(out))
	}
	return out
}

// checkWardArgs checks a ward command line (the arguments after "ward"):
// its command is one of the binary's and each --flag is that command's.
func checkWardArgs(t *testing.T, where string, args []string) {
	t.Helper()
	var path []string
	for _, a := range args {
		if !regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(a) {
			break
		}
		path = append(path, a)
	}
	p := strings.Join(path, " ")
	if !slices.Contains(helpCommands, p) {
		t.Errorf("%s: ward %s: not a command the deployment files are checked against (helpCommands)", where, p)
		return
	}
	flags := wardFlags(t, p)
	for _, a := range args[len(path):] {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		if !flags[name] {
			t.Errorf("%s: ward %s has no flag --%s", where, p, name)
		}
	}
}

// envReadByWard are the variable names Ward's code reads: quoted string
// literals of the form NAME_NAME in its non-test Go files.
var (
	envOnce sync.Once
	envRead map[string]bool
)

func readByWard(t *testing.T, key string) bool {
	t.Helper()
	envOnce.Do(func() {
		envRead = map[string]bool{}
		lit := regexp.MustCompile(`"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+_?)"`)
		err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "deploy" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != repoRoot {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
				envRead[m[1]] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	if envRead[key] {
		return true
	}
	// Prefixes the code reads (WARD_LABEL_<KEY>).
	for k := range envRead {
		if strings.HasSuffix(k, "_") && strings.HasPrefix(key, k) {
			return true
		}
	}
	return false
}

// composeFile is the compose file as `docker-compose config` resolves it.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
	Networks map[string]any            `yaml:"networks"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	User        string            `yaml:"user"`
	ReadOnly    bool              `yaml:"read_only"`
	Profiles    []string          `yaml:"profiles"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Deploy struct {
		Resources struct {
			Reservations struct {
				Devices []struct {
					Driver       string   `yaml:"driver"`
					Capabilities []string `yaml:"capabilities"`
				} `yaml:"devices"`
			} `yaml:"reservations"`
		} `yaml:"resources"`
	} `yaml:"deploy"`
	Networks map[string]any `yaml:"networks"`
}

const composePath = "compose/docker-compose.yaml"

// composeConfig runs `docker-compose config` (Debian's docker-compose; no
// engine needed) on the compose file with env as its .env, and returns
// what it printed.
func composeConfig(t *testing.T, env string, args ...string) ([]byte, error) {
	t.Helper()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatalf("docker-compose is not installed: the compose file is validated with it (apt-get install docker-compose; .ci/run installs it)")
	}
	envFile := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(envFile, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--env-file", envFile, "-f", composePath, "config"}, args...)...)
	cmd.Env = append(os.Environ(), "COMPOSE_PROJECT_NAME=wardtest")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.Bytes())
	}
	return out, nil
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	if _, err := composeConfig(t, "REDIS_PASSWORD=test\n", "-q"); err != nil {
		t.Fatalf("docker-compose -f deploy/%s config -q: %v", composePath, err)
	}
	out, err := composeConfig(t, "REDIS_PASSWORD=test\n")
	if err != nil {
		t.Fatalf("docker-compose config: %v", err)
	}
	var c composeFile
	if err := yaml.Unmarshal(out, &c); err != nil {
		t.Fatalf("docker-compose config's output: %v", err)
	}
	return c
}

// TestComposeConfig validates the compose file with docker-compose and
// checks its shape: the services the lattice needs, each ward command line
// and environment true to the binary, the parts unprivileged.
func TestComposeConfig(t *testing.T) {
	c := loadCompose(t)
	for _, name := range []string{"ward-init", "nats-1", "nats-2", "nats-3", "redis", "scheduler-1", "scheduler-2",
		"safety-1", "safety-2", "host-cpu-1", "host-gpu-1", "ollama", "gateway"} {
		if _, ok := c.Services[name]; !ok {
			t.Errorf("service %s is missing", name)
		}
	}
	wardImage := c.Services["ward-init"].Image
	if wardImage == "" {
		t.Fatal("ward-init has no image")
	}
	for name, s := range c.Services {
		if s.Image != wardImage || name == "ward-init" {
			continue
		}
		where := "compose service " + name
		if len(s.Command) > 0 && !strings.HasPrefix(s.Command[0], "-") {
			checkWardArgs(t, where, s.Command)
		}
		for k := range s.Environment {
			if !readByWard(t, k) {
				t.Errorf("%s: environment %s is read by no ward code", where, k)
			}
		}
		if s.User != "10001:10001" || !s.ReadOnly {
			t.Errorf("%s: want user 10001:10001 and a read-only root, have %q, read_only %v", where, s.User, s.ReadOnly)
		}
		if _, ok := s.DependsOn["ward-init"]; !ok {
			t.Errorf("%s: does not wait for ward-init's credentials", where)
		}
		if len(s.Profiles) == 0 && s.Healthcheck == nil {
			t.Errorf("%s: no healthcheck", where)
		}
		if strings.Contains(strings.Join(s.Command, " "), "--creds") == false && s.Environment["WARD_CREDS"] == "" {
			t.Errorf("%s: runs without a credential", where)
		}
	}
	// NATS_URL names the three servers, for every part.
	for _, name := range []string{"scheduler-1", "safety-1", "host-cpu-1", "gateway"} {
		u := c.Services[name].Environment["NATS_URL"]
		for _, srv := range []string{"nats-1", "nats-2", "nats-3"} {
			if !strings.Contains(u, "nats://"+srv+":4222") {
				t.Errorf("%s: NATS_URL %q lacks %s", name, u, srv)
			}
		}
	}
	// Only the schedulers reach Redis, as its ACL user ward-scheduler; the
	// hosts (and every other part) hold no Redis setting and do not wait
	// for it.
	for name, s := range c.Services {
		if s.Image != wardImage || name == "ward-init" {
			continue
		}
		u, has := s.Environment["REDIS_URL"]
		_, waits := s.DependsOn["redis"]
		if strings.HasPrefix(name, "scheduler-") {
			if u != "redis://"+redisSchedulerUser+":test@redis:6379/0" {
				t.Errorf("%s: REDIS_URL %q, want the redis service as %s with REDIS_PASSWORD", name, u, redisSchedulerUser)
			}
			if !waits {
				t.Errorf("%s: does not wait for redis", name)
			}
			continue
		}
		if has || waits {
			t.Errorf("%s: REDIS_URL %q (set: %v), depends on redis: %v; only the schedulers reach Redis", name, u, has, waits)
		}
		if slices.Contains(s.Command, "--redis") {
			t.Errorf("%s: runs with --redis; only the schedulers reach Redis", name)
		}
	}
	for _, name := range []string{"scheduler-1", "scheduler-2", "host-cpu-1", "host-cpu-2", "host-gpu-1"} {
		if _, ok := c.Services[name]; !ok {
			t.Errorf("service %s is missing", name)
		}
	}
	if a := c.Services["scheduler-1"].Environment["SAFETY_KERNEL_ADDR"]; a != "safety:50051" {
		t.Errorf("scheduler-1: SAFETY_KERNEL_ADDR %q", a)
	}
	// Redis: AOF, and the ACL file acl.sh writes (deploy/redis, mounted),
	// no password of the default user.
	redisSvc := c.Services["redis"]
	cmd := strings.Join(redisSvc.Command, " ")
	if !strings.Contains(cmd, "--appendonly yes") || !strings.Contains(cmd, "sh /etc/redis/ward/acl.sh /tmp/users.acl &&") ||
		!strings.Contains(cmd, "--aclfile /tmp/users.acl") || strings.Contains(cmd, "--requirepass") {
		t.Errorf("redis: want AOF and the ACL file of /etc/redis/ward/acl.sh, no --requirepass: %s", cmd)
	}
	mounted := false
	for _, v := range redisSvc.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		dst, _, _ = strings.Cut(dst, ":")
		if dst == "/etc/redis/ward" {
			abs, err := filepath.Abs("redis")
			mounted = err == nil && filepath.Clean(src) == abs
		}
	}
	if !mounted {
		t.Errorf("redis: deploy/redis is not mounted at /etc/redis/ward: %v", redisSvc.Volumes)
	}
	if redisSvc.Environment["REDIS_PASSWORD"] != "test" {
		t.Errorf("redis: REDIS_PASSWORD %q, want .env's (acl.sh reads it)", redisSvc.Environment["REDIS_PASSWORD"])
	}
	if hc := redisSvc.Healthcheck; hc == nil || !strings.Contains(strings.Join(hc.Test, " "), "--user "+redisSchedulerUser) {
		t.Errorf("redis: the healthcheck does not log in as %s (the default user is off)", redisSchedulerUser)
	}
	gpu := c.Services["host-gpu-1"]
	if d := gpu.Deploy.Resources.Reservations.Devices; len(d) == 0 || d[0].Driver != "nvidia" {
		t.Errorf("host-gpu-1: no nvidia device reservation: %+v", d)
	}
	if !slices.Contains(gpu.Command, "auto") || gpu.Environment["OLLAMA_URL"] != "http://ollama:11434" {
		t.Errorf("host-gpu-1: want --gpu auto and OLLAMA_URL of the ollama service: %v %v", gpu.Command, gpu.Environment)
	}
	if hc := c.Services["gateway"].Healthcheck; hc == nil || !strings.Contains(strings.Join(hc.Test, " "), "/readyz") {
		t.Errorf("gateway: healthcheck does not ask /readyz")
	}
	if n, ok := c.Networks["backend"].(map[string]any); !ok || n["internal"] != true {
		t.Errorf("network backend: want internal: %v", c.Networks["backend"])
	}
}

// TestComposeNeedsRedisPassword: without REDIS_PASSWORD the file does not
// resolve, rather than run Redis open.
func TestComposeNeedsRedisPassword(t *testing.T) {
	_, err := composeConfig(t, "", "-q")
	if err == nil || !strings.Contains(err.Error(), "REDIS_PASSWORD") {
		t.Fatalf("docker-compose config without REDIS_PASSWORD: %v, want an error naming it", err)
	}
}

// TestComposeInit runs ward-init.sh with the real binary in a temporary
// root laid out as the compose file mounts its volumes there, then checks
// that every credential file a part is given on its command line or in its
// environment is in the volume it mounts, and that each NATS server's
// configuration (nats/nats.conf including ward auth init's) is one
// nats-server accepts: operator mode, JetStream, a cluster of three; with
// WARD_NATS_TLS too.
func TestComposeInit(t *testing.T) {
	c := loadCompose(t)
	for _, d := range c.Services["ward-init"].Entrypoint {
		if strings.HasSuffix(d, ".sh") {
			checkScriptCommands(t, filepath.Join("compose", filepath.Base(d)))
		}
	}
	bin := buildWard(t, t.TempDir())
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			root := t.TempDir()
			// The volumes as ward-init mounts them under /auth.
			mounts := map[string]string{} // volume -> directory here
			for _, v := range c.Services["ward-init"].Volumes {
				src, dst, _ := strings.Cut(v, ":")
				dst, _, _ = strings.Cut(dst, ":")
				if rel, ok := strings.CutPrefix(dst, "/auth/"); ok {
					mounts[src] = filepath.Join(root, rel)
					if err := os.MkdirAll(mounts[src], 0o700); err != nil {
						t.Fatal(err)
					}
				}
			}
			natsDir := filepath.Join(t.TempDir(), "etc", "nats")
			cmd := exec.Command("sh", "compose/ward-init.sh")
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"),
				"WARD_INIT_ROOT="+root, "WARD_NATS_AUTH_PATH="+filepath.Join(natsDir, "auth"),
				"WARD_HOSTS="+c.Services["ward-init"].Environment["WARD_HOSTS"], "WARD_NATS_TLS=")
			if tls {
				cmd.Env[len(cmd.Env)-1] = "WARD_NATS_TLS=1"
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("ward-init.sh: %v\n%s", err, out)
			}
			if !tls {
				checkMountedFiles(t, c, mounts)
			}
			checkNATSConfig(t, natsDir, mounts["nats-auth"], tls)
		})
	}
}

// checkScriptCommands checks each `ward ...` line of a shell script.
func checkScriptCommands(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "ward" {
			continue
		}
		n++
		checkWardArgs(t, fmt.Sprintf("%s:%d", path, line), fields[1:])
	}
	if n == 0 {
		t.Errorf("%s runs no ward command", path)
	}
}

// checkMountedFiles checks that the files under a ward service's mounts
// that its command line and environment name are there.
func checkMountedFiles(t *testing.T, c composeFile, volumeDirs map[string]string) {
	t.Helper()
	for name, s := range c.Services {
		if s.Image != c.Services["ward-init"].Image || name == "ward-init" {
			continue
		}
		values := slices.Clone(s.Command)
		for _, v := range s.Environment {
			values = append(values, v)
		}
		for _, v := range s.Volumes {
			src, dst, _ := strings.Cut(v, ":")
			dst, _, _ = strings.Cut(dst, ":")
			dir, named := volumeDirs[src]
			if !named {
				if !filepath.IsAbs(src) {
					continue // a named volume ward-init does not fill (a cache)
				}
				dir = src // a bind mount: the repository's files
			}
			for _, val := range values {
				rel, ok := strings.CutPrefix(val, dst+"/")
				if !ok {
					continue
				}
				if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
					t.Errorf("compose service %s: %s is not in what it mounts at %s (%s): %v", name, val, dst, src, err)
				}
			}
		}
	}
}

// checkNATSConfig lays out one NATS server's /etc/nats as the compose file
// does and has nats-server's own parser read it.
func checkNATSConfig(t *testing.T, etc, natsAuth string, tls bool) {
	t.Helper()
	if err := os.CopyFS(filepath.Join(etc, "auth"), os.DirFS(natsAuth)); err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile("compose/nats/nats.conf")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(etc, "nats.conf")
	if err := os.WriteFile(path, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SERVER_NAME", "nats-2")
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server reads nats.conf: %v", err)
	}
	if opts.ServerName != "nats-2" || !opts.JetStream || opts.StoreDir != "/data/jetstream" {
		t.Errorf("nats.conf: server %q, jetstream %v in %q", opts.ServerName, opts.JetStream, opts.StoreDir)
	}
	if len(opts.TrustedOperators) != 1 || opts.SystemAccount == "" {
		t.Errorf("nats.conf: not in operator mode: %d operators, system account %q", len(opts.TrustedOperators), opts.SystemAccount)
	}
	if opts.Cluster.Name != "ward" || opts.Cluster.Port != 6222 || len(opts.Routes) != 3 {
		t.Errorf("nats.conf: cluster %q on %d with %d routes, want ward on 6222 with 3", opts.Cluster.Name, opts.Cluster.Port, len(opts.Routes))
	}
	if opts.HTTPPort != 8222 || opts.Port != 4222 {
		t.Errorf("nats.conf: client port %d, monitoring %d", opts.Port, opts.HTTPPort)
	}
	if (opts.TLSConfig != nil) != tls {
		t.Errorf("nats.conf: TLS %v, want %v", opts.TLSConfig != nil, tls)
	}
}

// TestDockerfile checks what the compose file and the chart take from the
// image (no engine here to build it): the modules where hosts load them,
// the user they run as, ward as the entrypoint, built as the Makefile
// builds it.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("docker/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"build:", "modules:"} {
		if !strings.Contains(string(mk), "\n"+target) {
			t.Errorf("the Makefile has no %s target, which the Dockerfile runs", target)
		}
	}
	for _, want := range []string{"make build modules", "COPY --from=build /src/bin/ward /usr/local/bin/ward",
		"COPY --from=build /src/modules/build/ /usr/lib/ward/modules/", "USER 10001:10001",
		`ENTRYPOINT ["/usr/local/bin/ward"]`, "install -d -o ward -g ward -m 0750 /var/lib/ward /var/cache/ward"} {
		if !strings.Contains(df, want) {
			t.Errorf("deploy/docker/Dockerfile lacks %q", want)
		}
	}
	compose, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/usr/lib/ward/modules", `user: "10001:10001"`, "dockerfile: deploy/docker/Dockerfile"} {
		if !strings.Contains(string(compose), want) {
			t.Errorf("deploy/%s lacks %q, which the image has", composePath, want)
		}
	}
}
