package dashboard

import (
	"cmp"
	"fmt"
	"html"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ward-run/ward/internal/workflow"
)

// The dashboard's pictures: inline SVG drawn here, coloured by the style
// sheet through classes (f-<STATE> fills a shape in a state's colour).

// esc escapes text for SVG markup.
func esc(s string) string { return html.EscapeString(s) }

// cls is a state as a class name's part.
func cls(state string) string {
	var b strings.Builder
	for _, r := range state {
		if r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// svgGauge is a bar gauge of value out of max, labelled.
func svgGauge(label string, value, max float64, text string) template.HTML {
	total := max
	if total <= 0 {
		total = 1
	}
	frac := value / total
	frac = min(1, frac)
	frac = max0(frac)
	lvl := "low"
	switch {
	case frac >= 0.85:
		lvl = "high"
	case frac >= 0.6:
		lvl = "mid"
	}
	// Its name for assistive technology: the label and the value, else
	// (a gauge that shows neither) the numbers.
	name := strings.TrimSpace(label + " " + text)
	if name == "" {
		name = fmt.Sprintf("%s of %s in use", strconv.FormatFloat(value, 'f', -1, 64), strconv.FormatFloat(max, 'f', -1, 64))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="gauge" viewBox="0 0 200 30" width="200" height="30" role="img" aria-label="%s"><title>%s</title>`, esc(name), esc(name))
	fmt.Fprintf(&b, `<text x="0" y="11" class="glabel">%s</text><text x="200" y="11" text-anchor="end" class="gvalue">%s</text>`, esc(label), esc(text))
	fmt.Fprintf(&b, `<rect x="0" y="16" width="200" height="10" rx="3" class="gbg"/><rect x="0" y="16" width="%.1f" height="10" rx="3" class="gfill g-%s"/>`, 200*frac, lvl)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func max0(f float64) float64 {
	if f < 0 || f != f {
		return 0
	}
	return f
}

// svgStatesBar is one bar split by the states' counts.
func svgStatesBar(states []stateCount) template.HTML {
	total := 0
	for _, s := range states {
		total += s.N
	}
	var b strings.Builder
	b.WriteString(`<svg class="statesbar" viewBox="0 0 1000 24" preserveAspectRatio="none" role="img" aria-label="jobs by state">`)
	if total == 0 {
		b.WriteString(`<rect x="0" y="0" width="1000" height="24" class="gbg"/>`)
	}
	x := 0.0
	for _, s := range states {
		if s.N == 0 {
			continue
		}
		w := 1000 * float64(s.N) / float64(total)
		fmt.Fprintf(&b, `<rect x="%.2f" y="0" width="%.2f" height="24" class="f-%s"><title>%s: %d</title></rect>`, x, w, cls(s.State), esc(s.State), s.N)
		x += w
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

var bucketSizes = []time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour,
	6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}

// svgThroughput is the jobs' creations over time, in buckets, each bar
// split into succeeded, failed (failed, timed out, denied) and the rest;
// and a sentence saying what it covers.
func svgThroughput(jobs []uiJob, now time.Time) (template.HTML, string) {
	if len(jobs) == 0 {
		return template.HTML(`<p class="muted">No jobs yet.</p>`), ""
	}
	lo, hi := jobs[0].Created, jobs[0].Created
	for _, j := range jobs {
		lo, hi = min(lo, j.Created), max(hi, j.Created)
	}
	span := time.Duration(hi-lo) * time.Millisecond
	size := bucketSizes[len(bucketSizes)-1]
	for _, s := range bucketSizes {
		if span/s < 30 {
			size = s
			break
		}
	}
	sz := size.Milliseconds()
	// At least 20 bars, the newest last.
	n := max(20, int((hi-lo/sz*sz)/sz)+1)
	start := hi/sz*sz - int64(n-1)*sz
	type bucket struct{ ok, bad, other int }
	bs := make([]bucket, n)
	for _, j := range jobs {
		i := int((j.Created - start) / sz)
		if i < 0 || i >= n {
			continue
		}
		switch j.State {
		case "SUCCEEDED":
			bs[i].ok++
		case "FAILED", "TIMEOUT", "DENIED":
			bs[i].bad++
		default:
			bs[i].other++
		}
	}
	top := 1
	for _, b := range bs {
		top = max(top, b.ok+b.bad+b.other)
	}
	const W, H, left, bottom = 600.0, 160.0, 34.0, 18.0
	plotW, plotH := W-left-4, H-bottom-8
	bw := plotW / float64(n)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="jobs created per %s">`, W, H, size)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="8" x2="%.0f" y2="%.0f" class="axis"/>`, left, left, H-bottom)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" class="axis"/>`, left, H-bottom, W-4, H-bottom)
	fmt.Fprintf(&b, `<text x="%.0f" y="14" text-anchor="end" class="tick">%d</text>`, left-4, top)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end" class="tick">0</text>`, left-4, H-bottom)
	for i, bk := range bs {
		x := left + float64(i)*bw + bw*0.1
		y := H - bottom
		at := time.UnixMilli(start + int64(i)*sz).UTC().Format("15:04:05")
		for _, part := range []struct {
			n     int
			class string
		}{{bk.ok, "f-SUCCEEDED"}, {bk.bad, "f-FAILED"}, {bk.other, "f-RUNNING"}} {
			if part.n == 0 {
				continue
			}
			h := plotH * float64(part.n) / float64(top)
			y -= h
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="%s"><title>%s: %d</title></rect>`,
				x, y, bw*0.8, h, part.class, at, part.n)
		}
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" class="tick">%s</text>`, left, H-4, time.UnixMilli(start).UTC().Format("15:04:05"))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end" class="tick">%s UTC</text>`, W-4, H-4, time.UnixMilli(start+int64(n)*sz).UTC().Format("15:04:05"))
	b.WriteString(`</svg>`)
	what := fmt.Sprintf("created over %s, %s a bar, last %s ago", (time.Duration(n) * size).String(), size, now.Sub(time.UnixMilli(hi)).Round(time.Second))
	return template.HTML(b.String()), what
}

// svgTimeline is a job's states in order, with the time between each.
func svgTimeline(evs []uiEvent) template.HTML {
	if len(evs) == 0 {
		return ""
	}
	const step, pad = 120.0, 50.0
	W := pad*2 + step*float64(len(evs)-1)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="timeline" viewBox="0 0 %.0f 64" width="%.0f" height="64" role="img" aria-label="the job's states">`, W, W)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="22" x2="%.0f" y2="22" class="axis"/>`, pad, W-pad)
	for i, e := range evs {
		x := pad + step*float64(i)
		fmt.Fprintf(&b, `<circle cx="%.0f" cy="22" r="8" class="f-%s"><title>%s %s</title></circle>`, x, cls(e.State), esc(e.State), esc(e.Message))
		fmt.Fprintf(&b, `<text x="%.0f" y="48" text-anchor="middle" class="tlabel">%s</text>`, x, esc(e.State))
		if i > 0 {
			fmt.Fprintf(&b, `<text x="%.0f" y="12" text-anchor="middle" class="tick">+%s</text>`, x-step/2, esc(fmtMS(e.At-evs[i-1].At)))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// stepState is a step's state from its tasks' (a for_each step has one a
// item), and how many of them ended.
func stepState(tasks []uiTask) (string, int) {
	if len(tasks) == 0 {
		return "WAITING", 0
	}
	n := map[string]int{}
	for _, t := range tasks {
		n[t.State]++
	}
	done := n["SUCCEEDED"] + n["FAILED"] + n["SKIPPED"] + n["CANCELLED"]
	switch {
	case n["FAILED"] > 0:
		return "FAILED", done
	case n["RUNNING"] > 0:
		return "RUNNING", done
	case n["CANCELLED"] > 0:
		return "CANCELLED", done
	case n["SUCCEEDED"] == len(tasks):
		return "SUCCEEDED", done
	case n["SKIPPED"] == len(tasks):
		return "SKIPPED", done
	case n["SUCCEEDED"]+n["SKIPPED"] == len(tasks):
		return "SUCCEEDED", done
	case n["READY"] > 0:
		return "READY", done
	}
	return "WAITING", done
}

// svgDAG draws a workflow's steps as boxes in layers by depth (a step's
// layer is one past its deepest dependency's), with arrows from each
// dependency, each box coloured by its step's state. An edge that skips
// layers passes through each layer between in a lane of its own (a
// placeholder the layer's boxes make room for), and between layers it
// runs in the gap: no edge crosses a box.
func svgDAG(steps []workflow.Step, tasks []uiTask) template.HTML {
	if len(steps) == 0 {
		return template.HTML(`<p class="muted">No steps to draw.</p>`)
	}
	byID := map[string]workflow.Step{}
	for _, s := range steps {
		byID[s.ID] = s
	}
	depth := map[string]int{}
	var depthOf func(id string, seen map[string]bool) int
	depthOf = func(id string, seen map[string]bool) int {
		if d, ok := depth[id]; ok {
			return d
		}
		if seen[id] { // a cycle: the definition was refused anyway
			return 0
		}
		seen[id] = true
		d := 0
		for _, dep := range byID[id].DependsOn {
			if _, ok := byID[dep]; ok && dep != id {
				d = max(d, depthOf(dep, seen)+1)
			}
		}
		depth[id] = d
		return d
	}
	// A node is a step's box or a lane of an edge through a layer.
	type node struct {
		id    string
		step  bool
		layer int
		preds []string // the nodes of the layer before it links from
		x, y  float64  // its top left
		h     float64
	}
	nodes := map[string]*node{}
	var layers [][]string
	place := func(n *node) {
		nodes[n.id] = n
		for len(layers) <= n.layer {
			layers = append(layers, nil)
		}
		layers[n.layer] = append(layers[n.layer], n.id)
	}
	for _, s := range steps {
		place(&node{id: s.ID, step: true, layer: depthOf(s.ID, map[string]bool{})})
	}
	type edge struct {
		from, to string
		via      []string // its lanes, in order
	}
	var edges []edge
	for _, s := range steps {
		to := nodes[s.ID]
		for _, dep := range s.DependsOn {
			from, ok := nodes[dep]
			if !ok || from.layer >= to.layer {
				continue
			}
			e := edge{from: dep, to: s.ID}
			prev := dep
			for l := from.layer + 1; l < to.layer; l++ {
				id := fmt.Sprintf("\x00%s>%s@%d", dep, s.ID, l)
				place(&node{id: id, layer: l, preds: []string{prev}})
				e.via = append(e.via, id)
				prev = id
			}
			to.preds = append(to.preds, prev)
			edges = append(edges, e)
		}
	}
	// Each layer in the order of its nodes' links into the layer before
	// (their mean place there), which keeps edges from crossing where it
	// can.
	index := map[string]int{}
	for _, id := range layers[0] {
		index[id] = len(index)
	}
	for l := 1; l < len(layers); l++ {
		key := map[string]float64{}
		for i, id := range layers[l] {
			n := nodes[id]
			if len(n.preds) == 0 {
				key[id] = float64(i)
				continue
			}
			sum := 0.0
			for _, p := range n.preds {
				sum += float64(index[p])
			}
			key[id] = sum / float64(len(n.preds))
		}
		slices.SortStableFunc(layers[l], func(a, b string) int { return cmp.Compare(key[a], key[b]) })
		for i, id := range layers[l] {
			index[id] = i
		}
	}
	tasksOf := map[string][]uiTask{}
	for _, t := range tasks {
		tasksOf[t.Step] = append(tasksOf[t.Step], t)
	}
	const bw, bh, lane, gx, gy, pad = 160.0, 46.0, 8.0, 70.0, 22.0, 10.0
	heights := make([]float64, len(layers))
	H := 0.0
	for l, ids := range layers {
		for i, id := range ids {
			n := nodes[id]
			n.h = bh
			if !n.step {
				n.h = lane
			}
			if i > 0 {
				heights[l] += gy
			}
			heights[l] += n.h
		}
		H = max(H, heights[l])
	}
	W := pad*2 + float64(len(layers))*bw + float64(len(layers)-1)*gx
	H += pad * 2
	for l, ids := range layers {
		y := pad + (H-pad*2-heights[l])/2
		for _, id := range ids {
			n := nodes[id]
			n.x, n.y = pad+float64(l)*(bw+gx), y
			y += n.h + gy
		}
	}
	mid := func(n *node) float64 { return n.y + n.h/2 }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="dag" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="group" aria-label="the workflow's steps">`, W, H, W, H)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead"/></marker></defs>`)
	for _, e := range edges {
		from := nodes[e.from]
		x, y := from.x+bw, mid(from)
		var d strings.Builder
		fmt.Fprintf(&d, "M %.1f %.1f", x, y)
		// A curve across each gap (its control points inside the gap: it
		// stays there), a straight line along each lane.
		for _, id := range append(slices.Clone(e.via), e.to) {
			n := nodes[id]
			x2, y2 := n.x, mid(n)
			mx := (x + x2) / 2
			fmt.Fprintf(&d, " C %.1f %.1f, %.1f %.1f, %.1f %.1f", mx, y, mx, y2, x2, y2)
			x, y = x2, y2
			if !n.step {
				x += bw
				fmt.Fprintf(&d, " L %.1f %.1f", x, y)
			}
		}
		fmt.Fprintf(&b, `<path d="%s" class="edge" data-from="%s" data-to="%s" marker-end="url(#arrow)"/>`, d.String(), esc(e.from), esc(e.to))
	}
	for _, s := range steps {
		p := nodes[s.ID]
		ts := tasksOf[s.ID]
		st, done := stepState(ts)
		label := st
		if len(ts) > 1 {
			label = fmt.Sprintf("%s %d/%d", st, done, len(ts))
		}
		title := s.ID
		if s.Topic != "" {
			title += " · " + s.Topic
		}
		href := ""
		if len(ts) == 1 && ts[0].JobID != "" {
			href = "/ui/jobs/" + ts[0].JobID
		}
		if href != "" {
			fmt.Fprintf(&b, `<a href="%s">`, esc(href))
		}
		fmt.Fprintf(&b, `<g class="step" data-step="%s" data-state="%s"><title>%s</title>`, esc(s.ID), esc(st), esc(title))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.0f" height="%.0f" rx="6" class="box f-%s"/>`, p.x, p.y, bw, bh, cls(st))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="sname">%s</text>`, p.x+bw/2, p.y+19, esc(trunc(s.ID, 22)))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="sstate">%s</text>`, p.x+bw/2, p.y+36, esc(label))
		b.WriteString(`</g>`)
		if href != "" {
			b.WriteString(`</a>`)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func trunc(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// uiFlow is the overview's throughput history (an admin's: GET
// /v1/stats): jobs created, and ended well or badly, in each step of a
// range, drawn, said in a sentence, and listed as a table (the chart's
// text alternative).
type uiFlow struct {
	Chart   template.HTML
	Range   uiRange
	Summary string
	// Rows are the steps in which a job was created or ended, oldest
	// first; Quiet how many steps had none (left out of Rows).
	Rows  []uiFlowRow
	Quiet int
	// Created, OK and Bad are the range's totals: created, succeeded,
	// and failed, timed out, denied or cancelled.
	Created, OK, Bad int64
}

// uiFlowRow is one step of the throughput history: its start (UTC) and
// its counts.
type uiFlowRow struct {
	At               string
	Created, OK, Bad int64
}

// badEnds are the ended states the throughput history counts as ended
// badly (all but SUCCEEDED).
var badEnds = []string{"FAILED", "TIMEOUT", "DENIED", "CANCELLED"}

// newFlow reads st's steps as rg's throughput history.
func newFlow(st uiStats, rg uiRange) *uiFlow {
	n := len(st.Created)
	f := &uiFlow{Range: rg}
	if n == 0 || st.StepMS <= 0 {
		f.Chart = template.HTML(`<p class="muted">No history.</p>`)
		return f
	}
	start := st.UntilUnixMS - int64(n)*st.StepMS
	ok := make([]int64, n)
	bad := make([]int64, n)
	for i := range n {
		if c := st.Ended["SUCCEEDED"]; i < len(c) {
			ok[i] = c[i]
		}
		for _, s := range badEnds {
			if c := st.Ended[s]; i < len(c) {
				bad[i] += c[i]
			}
		}
		f.Created += st.Created[i]
		f.OK += ok[i]
		f.Bad += bad[i]
		if st.Created[i]+ok[i]+bad[i] == 0 {
			f.Quiet++
			continue
		}
		f.Rows = append(f.Rows, uiFlowRow{At: flowClock(start + int64(i)*st.StepMS), Created: st.Created[i], OK: ok[i], Bad: bad[i]})
	}
	from, to := flowClock(start), flowClock(st.UntilUnixMS)
	f.Summary = fmt.Sprintf("%d created, %d succeeded, %d failed, timed out, denied or cancelled, %s UTC (%s)", f.Created, f.OK, f.Bad,
		from+" to "+to, rg.Label)
	f.Chart = svgFlow(st.Created, ok, bad, start, st.StepMS, f.Summary)
	return f
}

// flowClock is a Unix ms time as the throughput history labels it.
func flowClock(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04") }

// niceCeil is the smallest 1, 2 or 5 times a power of ten not under n
// (at least 1): the top of a chart's scale.
func niceCeil(n int64) int64 {
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if m*p >= n {
				return m * p
			}
		}
	}
}

// svgFlow draws the throughput history: a bar a step of the jobs that
// ended in it (succeeded below, ended badly above), and a line of the
// jobs created, on one scale; name is its text for assistive technology.
func svgFlow(created, ok, bad []int64, start, stepMS int64, name string) template.HTML {
	n := len(created)
	var most int64
	for i := range n {
		most = max(most, created[i], ok[i]+bad[i])
	}
	top := niceCeil(most)
	const W, H, left, right, above, below = 720.0, 200.0, 40.0, 8.0, 10.0, 22.0
	plotW, plotH := W-left-right, H-above-below
	base := H - below
	bw := plotW / float64(n)
	y := func(v int64) float64 { return base - plotH*float64(v)/float64(top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart flow" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`, W, H, esc("Throughput: "+name))
	for _, v := range []int64{top / 2, top} {
		if v == 0 || (v == top/2 && top%2 != 0) {
			continue
		}
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" class="grid"/>`, left, y(v), W-right, y(v))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" class="tick">%d</text>`, left-4, y(v)+3, v)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end" class="tick">0</text>`, left-4, base+3)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" class="axis"/>`, left, above, left, base)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" class="axis"/>`, left, base, W-right, base)
	for i := range n {
		x := left + float64(i)*bw
		at := flowClock(start + int64(i)*stepMS)
		if ok[i]+bad[i] > 0 {
			top := base
			for _, part := range []struct {
				n     int64
				class string
			}{{ok[i], "f-SUCCEEDED"}, {bad[i], "f-FAILED"}} {
				if part.n == 0 {
					continue
				}
				h := base - y(part.n)
				top -= h
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="%s"/>`, x+bw*0.15, top, bw*0.7, h, part.class)
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" class="hit"><title>%s UTC: %d created, %d succeeded, %d ended badly</title></rect>`,
				x, above, bw, plotH, at, created[i], ok[i], bad[i])
		}
	}
	// The jobs created: a line through each step's middle.
	var pts strings.Builder
	for i := range n {
		fmt.Fprintf(&pts, "%.1f,%.1f ", left+(float64(i)+0.5)*bw, y(created[i]))
	}
	fmt.Fprintf(&b, `<polyline points="%s" class="created-line"/>`, strings.TrimSpace(pts.String()))
	// A time under the axis every sixth of the range, and its end.
	every := max(1, n/6)
	for i := 0; i < n; i += every {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle" class="tick">%s</text>`, left+float64(i)*bw, H-6, flowClock(start+int64(i)*stepMS))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end" class="tick">%s UTC</text>`, W-right, H-6, flowClock(start+int64(n)*stepMS))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
