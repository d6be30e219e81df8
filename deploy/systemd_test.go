package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// unit is a systemd unit file: its sections' keys, each with its values
// in order (continuation lines joined).
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section, pending := "", ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if pending != "" {
			line = pending + " " + line
			pending = ""
		}
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			pending = strings.TrimSpace(cont)
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			t.Fatalf("%s:%d: not a key=value in a section: %q", path, n, line)
		}
		u[section][k] = append(u[section][k], v)
	}
	return u
}

// TestSystemdUnits checks every unit of deploy/systemd: the three
// sections, an ExecStart whose command and flags `ward <role> --help`
// lists, the hardening, the credentials it names loaded, an example of its
// EnvironmentFile whose variables Ward reads; one unit for every role;
// then `systemd-analyze verify` where there is one.
func TestSystemdUnits(t *testing.T) {
	units, err := filepath.Glob("systemd/*.service")
	if err != nil || len(units) == 0 {
		t.Fatalf("no units in deploy/systemd: %v", err)
	}
	roles := map[string]bool{}
	for _, path := range units {
		u := parseUnit(t, path)
		for _, s := range []string{"Unit", "Service", "Install"} {
			if u[s] == nil {
				t.Errorf("%s: no [%s] section", path, s)
			}
		}
		svc := u["Service"]
		exec := svc["ExecStart"]
		if len(exec) != 1 {
			t.Errorf("%s: want one ExecStart, have %d", path, len(exec))
			continue
		}
		args := strings.Fields(exec[0])
		if filepath.Base(args[0]) != "ward" || !filepath.IsAbs(args[0]) {
			t.Errorf("%s: ExecStart runs %s, want the ward binary by absolute path", path, args[0])
			continue
		}
		checkWardArgs(t, path, args[1:])
		roles[args[1]] = true
		for k, want := range map[string]string{"NoNewPrivileges": "true", "ProtectSystem": "strict", "ProtectHome": "true", "PrivateTmp": "true", "KillSignal": "SIGTERM"} {
			if v := svc[k]; len(v) != 1 || v[0] != want {
				t.Errorf("%s: %s=%v, want %s", path, k, v, want)
			}
		}
		if len(svc["User"]) == 0 && !slices.Equal(svc["DynamicUser"], []string{"yes"}) {
			t.Errorf("%s: runs as root: want User= or DynamicUser=yes", path)
		}
		if len(u["Install"]["WantedBy"]) == 0 {
			t.Errorf("%s: no WantedBy: systemctl enable would not start it", path)
		}
		// %d/NAME (the credentials directory) only for a loaded NAME.
		loaded := map[string]bool{}
		for _, lc := range svc["LoadCredential"] {
			name, _, _ := strings.Cut(lc, ":")
			loaded[name] = true
		}
		for _, m := range regexp.MustCompile(`%d/([^\s]+)`).FindAllStringSubmatch(exec[0], -1) {
			if !loaded[m[1]] {
				t.Errorf("%s: ExecStart names %%d/%s, which no LoadCredential= loads", path, m[1])
			}
		}
		for _, ef := range svc["EnvironmentFile"] {
			ex := filepath.Join("systemd", filepath.Base(strings.TrimPrefix(ef, "-"))+".example")
			checkEnvExample(t, ex)
			// Only the schedulers reach Redis: no other unit is given it.
			if args[1] != "scheduler" {
				b, _ := os.ReadFile(ex)
				if regexp.MustCompile(`(?m)^\s*REDIS_URL=`).Match(b) {
					t.Errorf("%s: %s sets REDIS_URL; only the schedulers reach Redis", path, ex)
				}
			}
		}
		if args[1] != "scheduler" && regexp.MustCompile(`(?m)^\s*Environment=.*REDIS_URL=|--redis\b`).MatchString(strings.Join(append(svc["Environment"], exec[0]), "\n")) {
			t.Errorf("%s: gives ward %s Redis; only the schedulers reach Redis", path, args[1])
		}
	}
	for _, role := range []string{"scheduler", "safety", "host", "gateway"} {
		if !roles[role] {
			t.Errorf("deploy/systemd has no unit that runs ward %s", role)
		}
	}
	verifyUnits(t, units)
}

// checkEnvExample checks that an environment file's example exists and
// that Ward reads each variable it sets, or shows commented out.
func checkEnvExample(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("the unit's EnvironmentFile has no example: %v", err)
		return
	}
	assign := regexp.MustCompile(`^#?([A-Z][A-Z0-9_]*)=`)
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		m := assign.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		n++
		if !readByWard(t, m[1]) {
			t.Errorf("%s: %s is read by no ward code", path, m[1])
		}
	}
	if n == 0 {
		t.Errorf("%s sets nothing", path)
	}
}

// verifyUnits runs `systemd-analyze verify` on copies of the units whose
// ExecStart names an executable that exists here (verify checks it); any
// complaint about a unit fails.
func verifyUnits(t *testing.T, units []string) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze is not installed: the units were checked by this test's parser only")
		return
	}
	stand, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var copies []string
	for _, p := range units {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c := filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(c, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/ward", stand)), 0o644); err != nil {
			t.Fatal(err)
		}
		copies = append(copies, c)
	}
	out, err := exec.Command(analyze, append([]string{"verify"}, copies...)...).CombinedOutput()
	var complaints []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, ".service") {
			complaints = append(complaints, line)
		}
	}
	if err != nil || len(complaints) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, strings.Join(complaints, "\n"))
	}
}
