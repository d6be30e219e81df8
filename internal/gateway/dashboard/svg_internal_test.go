package dashboard

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/workflow"
)

// TestUIDAGEdges: in the seed repo.code_review workflow's drawing no edge
// passes through a box other than its ends' (tests → report used to cross
// sast's box), for each seed workflow.
func TestUIDAGEdges(t *testing.T) {
	defs, err := config.Workflows("")
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for file, src := range defs {
		def, err := workflow.Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if def.Name == "repo.code_review" {
			seen = true
		}
		checkDAG(t, def.Name, string(svgDAG(def.Steps, nil)))
	}
	if !seen {
		t.Fatal("no seed workflow repo.code_review")
	}
	// A step that skips three layers, beside a chain.
	steps := []workflow.Step{{ID: "a"}, {ID: "b", DependsOn: []string{"a"}}, {ID: "c", DependsOn: []string{"b"}},
		{ID: "d", DependsOn: []string{"c"}}, {ID: "e", DependsOn: []string{"a", "d"}}, {ID: "f", DependsOn: []string{"a"}}}
	checkDAG(t, "skip", string(svgDAG(steps, nil)))
}

var (
	boxRE  = regexp.MustCompile(`<g class="step" data-step="([^"]+)"[^>]*><title>[^<]*</title><rect x="([-\d.]+)" y="([-\d.]+)" width="([-\d.]+)" height="([-\d.]+)"`)
	edgeRE = regexp.MustCompile(`<path d="([^"]+)" class="edge" data-from="([^"]+)" data-to="([^"]+)"`)
)

type rect struct{ x, y, w, h float64 }

func checkDAG(t *testing.T, name, svg string) {
	t.Helper()
	num := func(s string) float64 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%s: %q is not a number", name, s)
		}
		return f
	}
	boxes := map[string]rect{}
	for _, m := range boxRE.FindAllStringSubmatch(svg, -1) {
		boxes[m[1]] = rect{num(m[2]), num(m[3]), num(m[4]), num(m[5])}
	}
	edges := edgeRE.FindAllStringSubmatch(svg, -1)
	if len(boxes) == 0 || len(edges) == 0 {
		t.Fatalf("%s: %d boxes, %d edges in %s", name, len(boxes), len(edges), svg)
	}
	for _, m := range edges {
		from, to := m[2], m[3]
		for _, p := range pathPoints(t, m[1]) {
			for id, r := range boxes {
				if id == from || id == to {
					continue
				}
				// Strictly inside, a pixel in.
				if p[0] > r.x+1 && p[0] < r.x+r.w-1 && p[1] > r.y+1 && p[1] < r.y+r.h-1 {
					t.Errorf("%s: the edge %s → %s passes through %s's box at (%.0f, %.0f)", name, from, to, id, p[0], p[1])
					break
				}
			}
		}
	}
}

// pathPoints samples a path of M, L and C commands.
func pathPoints(t *testing.T, d string) [][2]float64 {
	t.Helper()
	f := strings.Fields(strings.ReplaceAll(d, ",", " "))
	var out [][2]float64
	var cx, cy float64
	num := func(i int) float64 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			t.Fatalf("path %q: %v", d, err)
		}
		return v
	}
	for i := 0; i < len(f); {
		switch f[i] {
		case "M", "L":
			x, y := num(i+1), num(i+2)
			if f[i] == "L" {
				for k := 0; k <= 50; k++ {
					s := float64(k) / 50
					out = append(out, [2]float64{cx + (x-cx)*s, cy + (y-cy)*s})
				}
			}
			cx, cy = x, y
			i += 3
		case "C":
			x1, y1, x2, y2, x, y := num(i+1), num(i+2), num(i+3), num(i+4), num(i+5), num(i+6)
			for k := 0; k <= 100; k++ {
				s := float64(k) / 100
				u := 1 - s
				out = append(out, [2]float64{
					u*u*u*cx + 3*u*u*s*x1 + 3*u*s*s*x2 + s*s*s*x,
					u*u*u*cy + 3*u*u*s*y1 + 3*u*s*s*y2 + s*s*s*y})
			}
			cx, cy = x, y
			i += 7
		default:
			t.Fatalf("path %q: command %q", d, f[i])
		}
	}
	return out
}
