package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tourStep is one command of the tour (the README's and docs/TOUR.md's)
// and the output lines it shows.
type tourStep struct {
	cmd  string
	want []string
}

// readmeTour reads the console blocks of the README's five-minute tour
// and then of docs/TOUR.md, which goes on from it on the same ward dev.
func readmeTour(t *testing.T) []tourStep {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "\n## A five-minute tour\n")
	if start < 0 {
		t.Fatal("README.md: no section \"A five-minute tour\"")
	}
	end := strings.Index(s[start+1:], "\n## ")
	if end < 0 {
		t.Fatal("README.md: no section after \"A five-minute tour\"")
	}
	more, err := os.ReadFile("../../docs/TOUR.md")
	if err != nil {
		t.Fatal(err)
	}
	var steps []tourStep
	in, cont := false, false
	heredoc := "" // the word that ends the here-document the command reads
	hereRE := regexp.MustCompile(`<<'?([A-Z]+)'?`)
	sc := bufio.NewScanner(strings.NewReader(s[start:start+1+end] + "\n" + string(more)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```console"):
			in = true
		case in && strings.HasPrefix(line, "```"):
			in = false
		case !in:
		case heredoc != "":
			steps[len(steps)-1].cmd += "\n" + line
			if line == heredoc {
				heredoc = ""
			}
		case cont:
			steps[len(steps)-1].cmd += "\n" + line
			cont = strings.HasSuffix(line, "\\")
		case strings.HasPrefix(line, "$ "):
			steps = append(steps, tourStep{cmd: line[2:]})
			cont = strings.HasSuffix(line, "\\")
			if m := hereRE.FindStringSubmatch(line); m != nil {
				heredoc = m[1]
			}
		case len(steps) > 0:
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, line)
		}
	}
	return steps
}

// tourNorm makes a line of output comparable: times, builds (the
// version a build reports depends on how it was built), ids, digests,
// durations, addresses and numbers become placeholders, and runs of
// spaces one space.
var tourNorm = []struct {
	re  *regexp.Regexp
	new string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z?`), "DATE"},
	{regexp.MustCompile(`\d\d:\d\d:\d\d\.\d{3}`), "TIME"},
	{regexp.MustCompile(`\(devel\)|v\d+\.\d+\.\d+(-[0-9A-Za-z.+-]+)?`), "VERSION"},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "UUID"},
	{regexp.MustCompile(`run-\d{8}-\d{6}-[0-9a-f]{6}`), "RUN"},
	{regexp.MustCompile(`sha256:[0-9a-f]+`), "DIGEST"},
	{regexp.MustCompile(`kernel-[0-9a-f]{8}|scheduler-[0-9a-f]{8}`), "PART"},
	{regexp.MustCompile(`ward_[a-z0-9]{8}_[A-Za-z0-9]+`), "KEY"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "ADDR"},
	{regexp.MustCompile(`\b[0-9a-f]{12,16}\b`), "HEX"},
	{regexp.MustCompile(`\d+(\.\d+)?\s?(ns|µs|ms|s|m|h)\b`), "DUR"},
	{regexp.MustCompile(`\d+(\.\d+)?`), "N"},
	{regexp.MustCompile(`\s+`), " "},
}

func normalize(s string) string {
	for _, n := range tourNorm {
		s = n.re.ReplaceAllString(s, n.new)
	}
	return strings.TrimSpace(s)
}

// tourSkips are the tour's commands this test does not run, and why.
var tourSkips = map[string]string{
	"repo.code_review":              "reads /srv/ward/repos/demo, a directory a host must be started with",
	"bin/ward jobs cancel <id>":     "a placeholder id",
	"/events":                       "a stream that does not end",
	"bin/ward bench":                "a benchmark: its figures are the machine's",
	"bin/ward workflow verify run-": "the README's run id is one of the fan run the test made (checked in TestCLITour)",
	"bin/ward workflow replay run-": "the README's run id is one of the fan run the test made (checked in TestCLITour)",
	"5f0c6a8e-...":                  "an id elided in the README",
}

// TestREADMETour runs the README's five-minute tour and docs/TOUR.md after
// it, command by command, on a fresh `ward dev` serving every module of
// modules/build, in a directory where bin/ward is the binary under test,
// and checks that each output line they show is in what the command
// printed (times, ids, digests, durations and numbers aside), so that a
// walkthrough that stops working fails here.
func TestREADMETour(t *testing.T) {
	steps := readmeTour(t)
	if len(steps) < 30 {
		t.Fatalf("the tour has %d commands: the console blocks of README.md and docs/TOUR.md were not read", len(steps))
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "modules/build/echo.wasm")); err != nil {
		t.Fatalf("modules/build is not built (make test builds it first): %v", err)
	}
	dev, natsURL := startDev(t, []string{"REDIS_URL="}, "--modules", filepath.Join(root, "modules/build"))
	gw := regexp.MustCompile(`API:\s+http://(127\.0\.0\.1:\d+)/v1/`).FindStringSubmatch(dev.out.String())
	if gw == nil {
		t.Fatalf("ward dev did not say its API address:\n%s", dev.out.String())
	}
	dir := t.TempDir()
	for _, l := range []struct{ name, to string }{{"bin/ward", wardBin}, {"modules", filepath.Join(root, "modules")}, {"policies", filepath.Join(root, "policies")}} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, l.name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(l.to, filepath.Join(dir, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	state := os.Getenv("WARD_STATE_DIR")
	ids := map[string]string{} // an id the README shows → the one this run made
	idRE := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|run-\d{8}-\d{6}-[0-9a-f]{6}`)
	ran := 0
	for _, st := range steps {
		skip := ""
		for k, why := range tourSkips {
			if strings.Contains(st.cmd, k) {
				skip = why
			}
		}
		if skip != "" {
			t.Logf("skipped: $ %s (%s)", st.cmd, skip)
			continue
		}
		cmd := st.cmd
		if f, ok := strings.CutPrefix(cmd, "cat "); ok && !strings.Contains(cmd, "<<") && !strings.ContainsAny(f, " |>") {
			// The README shows a file: the tour's reader writes it.
			if err := os.WriteFile(filepath.Join(dir, f), []byte(strings.Join(st.want, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for from, to := range ids {
			cmd = strings.ReplaceAll(cmd, from, to)
		}
		cmd = strings.ReplaceAll(cmd, "~/.local/state/ward/dev", state)
		cmd = strings.ReplaceAll(cmd, "127.0.0.1:8080", gw[1])
		c := exec.Command("bash", "-c", cmd)
		c.Dir = dir
		c.Env = append(os.Environ(), "NATS_URL="+natsURL)
		out, err := c.CombinedOutput()
		ran++
		got := strings.Split(string(out), "\n")
		// Learn the ids this run made for those the README shows.
		for i, w := range st.want {
			if i < len(got) {
				if wid, gid := idRE.FindString(w), idRE.FindString(got[i]); wid != "" && gid != "" && ids[wid] == "" {
					ids[wid] = gid
				}
			}
		}
		var norm []string
		for _, g := range got {
			norm = append(norm, normalize(g))
		}
		for _, w := range st.want {
			if strings.Contains(w, "...") || strings.TrimSpace(w) == "" {
				continue
			}
			nw := normalize(w)
			found := false
			for _, g := range norm {
				if strings.HasPrefix(g, nw) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("$ %s\nexit %v; the tour shows the line\n  %s\nwhich is not in what it printed:\n%s", st.cmd, exitCode(err), w, out)
				break
			}
		}
	}
	t.Logf("ran %d of the tour's %d commands", ran, len(steps))
}
