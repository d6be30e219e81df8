package jobstore

import (
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestScriptHeaders checks that every lua/*.lua file names its KEYS and
// ARGV on its first two lines, numbered [1], [2], ... with at most a last
// variadic [n..], and that its call type fills exactly those: as many
// fixed keys and arguments as the header numbers.
func TestScriptHeaders(t *testing.T) {
	calls := map[string]luaCall{
		"create.lua":       &createCall{n: &Job{ID: "j"}},
		"transition.lua":   &transitionCall{id: "j"},
		"list.lua":         listCall{},
		"sweep.lua":        sweepCall{},
		"queue_heads.lua":  queueHeadsCall{},
		"due_deferred.lua": dueDeferredCall{},
		"with_result.lua":  withResultCall{},
		"dlq.lua":          dlqCall{},
		"remove_dlq.lua":   removeDLQCall{},
		"add_dlq.lua":      addDLQCall{},
		"dlq_index.lua":    dlqIndexCall{},
		"lock.lua":         lockCall{},
		"unlock.lua":       unlockCall{},
		"failure.lua":      failureCall{},
		"run_create.lua":   runCreateCall{n: &Run{ID: "r"}},
		"run_append.lua":   runAppendCall{id: "r"},
		"run_claim.lua":    runClaimCall{id: "r"},
		"run_list.lua":     runListCall{},
		"live_add.lua":     liveAddCall{},
	}
	files, err := fs.Glob(luaFiles, "lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(calls) {
		t.Errorf("%d script files, %d call types: %v", len(files), len(calls), files)
	}
	for _, path := range files {
		name := strings.TrimPrefix(path, "lua/")
		t.Run(name, func(t *testing.T) {
			c, ok := calls[name]
			if !ok {
				t.Fatalf("no call type runs %s", name)
			}
			src, err := luaFiles.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			prelude := ""
			switch name {
			case "transition.lua":
				prelude = transitionTables()
			case "add_dlq.lua", "dlq_index.lua", "remove_dlq.lua":
				prelude = dlqPrelude
			}
			if c.script().Hash() != loadScript(name, prelude).Hash() {
				t.Errorf("the call type for %s runs another script", name)
			}
			lines := strings.SplitN(string(src), "\n", 3)
			if len(lines) < 3 {
				t.Fatalf("%s is too short", name)
			}
			checkHeader(t, lines[0], "KEYS", len(c.keys(plain)))
			checkHeader(t, lines[1], "ARGV", len(c.argv()))
		})
	}
}

var headerItem = regexp.MustCompile(`\[(\d+)(\.\.)?\]`)

// checkHeader checks one header line: "-- WHAT: [1] ..., [2] ...".
func checkHeader(t *testing.T, line, what string, n int) {
	t.Helper()
	rest, ok := strings.CutPrefix(line, "-- "+what+": ")
	if !ok {
		t.Fatalf("header line %q does not start with %q", line, "-- "+what+": ")
	}
	items := headerItem.FindAllStringSubmatch(rest, -1)
	fixed := 0
	for i, m := range items {
		k, _ := strconv.Atoi(m[1])
		if k != i+1 {
			t.Errorf("%s: item %d numbered [%s]", what, i+1, m[1])
		}
		if m[2] != "" {
			if i != len(items)-1 {
				t.Errorf("%s: variadic [%s..] is not last", what, m[1])
			}
			continue
		}
		fixed++
	}
	if fixed != n {
		t.Errorf("%s: header names %d, the call type fills %d", what, fixed, n)
	}
}

// TestTransitionTablesFromGo checks that transition.lua leaves the state
// table to the Go side, and that the rendered table says what Go says.
func TestTransitionTablesFromGo(t *testing.T) {
	src, err := luaFiles.ReadFile("lua/transition.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"allowed", "active", "terminal"} {
		if regexp.MustCompile(`(?m)^local ` + name + `\b`).Match(src) {
			t.Errorf("transition.lua defines %s itself; it must come from the Go table", name)
		}
	}
	tables := transitionTables()
	for _, from := range States() {
		for _, to := range States() {
			entry := strconv.Quote(string(from)) + "]={"
			i := strings.Index(tables, "["+entry)
			in := false
			if i >= 0 {
				row := tables[i+len(entry)+1:]
				row = row[:strings.Index(row, "}")]
				in = strings.Contains(row, "["+strconv.Quote(string(to))+"]=true")
			}
			if in != CanTransition(from, to) {
				t.Errorf("rendered allowed[%s][%s] = %v, CanTransition says %v", from, to, in, !in)
			}
		}
	}
}

// TestBriefFieldsInScript: transition.lua gives each field briefFields
// names (which scripts.go renders into its briefNames) a value in a Brief
// reply.
func TestBriefFieldsInScript(t *testing.T) {
	src, err := luaFiles.ReadFile("lua/transition.lua")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(src), "local v = {")
	if start < 0 {
		t.Fatal("transition.lua has no brief table (local v = {...})")
	}
	table := string(src)[start:]
	table = table[:strings.Index(table, "}")]
	for _, f := range briefFields {
		if !strings.Contains(table, f+" = ") {
			t.Errorf("transition.lua's brief table gives %s no value", f)
		}
	}
}
