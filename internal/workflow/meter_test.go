package workflow

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
)

// FuzzMeter checks the metered evaluation against expr's own: on any
// expression and input, the metered program either gives what expr's
// program gives (the same value, or the same error), or stops at its
// bounds (errExprBudget) — and it always stops. expr's own program is
// run only where the metered one finished, so within the bounds.
func FuzzMeter(f *testing.F) {
	for _, s := range []struct{ src, input string }{
		{"input.a + 1", `{"a": 2}`},
		{"upper(input.s) + lower('X') + trim('  y ')", `{"s": "héllo"}`},
		{"filter(input.xs, # > 1) == [2, 3]", `{"xs": [1, 2, 3]}`},
		{"map(input.xs, {# * 2})", `{"xs": [1, 2, 3]}`},
		{"all(input.xs, {all(input.xs, {# >= 0})})", `{"xs": [1, 2, 3]}`},
		{"reduce(input.xs, #acc + #, 0)", `{"xs": [1, 2, 3]}`},
		{"let a = input.s + input.s; let b = a + a; len(b)", `{"s": "abc"}`},
		{"repeat(input.s, 3) + replace(input.s, 'a', 'bb') + join(['x', input.s], '-')", `{"s": "abc"}`},
		{"keys(input) + values(input)", `{"b": 1, "a": 2}`},
		{"toPairs(input)[0][1]", `{"b": 1, "a": 2}`},
		{"input.m?.k ?? 'none'", `{"m": null}`},
		{"input.s contains 'b' && input.s startsWith 'a' && !(input.s endsWith 'z') && input.s matches '^a.c$'", `{"s": "abc"}`},
		{"'a' in input.xs || 2 in 1..3", `{"xs": ["a"]}`},
		{"date('2024-01-02').Year() + duration('1h').Hours()", `{}`},
		{"sortBy(input.xs, #.n)[0].n", `{"xs": [{"n": 2}, {"n": 1}]}`},
		{"groupBy(input.xs, # % 2)", `{"xs": [1, 2, 3]}`},
		{"count(1..10, # > 5) + sum(1..3) + len(toJSON(input))", `{"k": [1, {"x": null}]}`},
		{"fromJSON(toJSON(input)).a[1:]", `{"a": [1, 2, 3]}`},
		{"first(input.xs) ?? last(input.xs)", `{"xs": []}`},
		{"input.a / input.b", `{"a": 1, "b": 0}`},
		{"int(input.s)", `{"s": "x"}`},
		{"type(input.a) == 'float' ? string(input.a) : 'no'", `{"a": 1.5}`},
		{"$env.input.a", `{"a": 1}`},
	} {
		f.Add(s.src, s.input)
	}
	f.Fuzz(func(t *testing.T, src, input string) {
		if len(src) > 512 || len(input) > 4096 {
			return
		}
		in, _ := DecodeOutput([]byte(input)).(map[string]any)
		opts := exprOptions(env{})
		plain, perr := expr.Compile(src, opts...)
		metered, merr := compileMetered(src, opts...)
		if (perr == nil) != (merr == nil) || (perr != nil && perr.Error() != merr.Error()) {
			t.Fatalf("expr compiles it: %v; the metered compile: %v", perr, merr)
		}
		if perr != nil {
			return
		}
		run := map[string]any{"id": "r", "workflow": "w"}
		mv, merr := expr.Run(metered, env{Input: in, Steps: map[string]any{}, Run: run, Meter: &meter{}})
		if errors.Is(merr, errExprBudget) {
			return
		}
		pv, perr := expr.Run(plain, env{Input: in, Steps: map[string]any{}, Run: run})
		if (perr == nil) != (merr == nil) {
			t.Fatalf("%s: expr gives %v, %v; the metered program %v, %v", src, pv, perr, mv, merr)
		}
		if perr != nil {
			return
		}
		if p, m := fmt.Sprintf("%T %v", pv, pv), fmt.Sprintf("%T %v", mv, mv); p != m {
			t.Fatalf("%s: expr gives %s; the metered program %s", src, p, m)
		}
	})
}

// TestMeterBounds: what an expression may do is bounded, and the bounds
// say so; each of these would otherwise take gigabytes or minutes.
func TestMeterBounds(t *testing.T) {
	xs := make([]any, 3000)
	for i := range xs {
		xs[i] = float64(i)
	}
	in := map[string]any{"s": strings.Repeat("x", 10000), "xs": xs}
	var doubling, nesting strings.Builder
	doubling.WriteString(`let a0 = input.s; `)
	nesting.WriteString(`let a0 = [input.s, input.s]; `)
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&doubling, "let a%d = a%d + a%d; ", i, i-1, i-1)
		fmt.Fprintf(&nesting, "let a%d = [a%d, a%d]; ", i, i-1, i-1)
	}
	doubling.WriteString("len(a40)")
	nesting.WriteString("a40")
	for _, src := range []string{
		doubling.String(),
		nesting.String(),
		"toJSON(" + nesting.String() + ")",
		`all(0..999, {all(0..990, {upper(input.s) != ""})})`,
		`all(input.xs, {all(input.xs, {input.s == input.s})})`,
		`all(input.xs, {all(input.xs, {# >= 0})})`,
		`replace(replace(replace(input.s, "x", input.s), "x", input.s), "x", input.s)`,
		`repeat(input.s, 999999)`,
		`join(map(0..99999, input.s), input.s)`,
		`reduce(input.xs, #acc + input.s, "")`,
		`reduce(0..200000, [#acc], [])`,
	} {
		prog, err := compileMetered(src, exprOptions(env{})...)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		m := &meter{}
		v, err := expr.Run(prog, env{Input: in, Meter: m})
		if err == nil {
			err = m.weigh(v)
		}
		if !errors.Is(err, errExprBudget) {
			t.Errorf("%.60s: %v, want the budget's error", src, err)
		}
	}
}
