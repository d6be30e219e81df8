package workflow

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/vm"
)

// An expression is a tenant's input, evaluated by the scheduler: its
// size is bounded (maxExprNodes), and so is what one evaluation may do.
// expr's own memory budget counts ranges and the lists its builtins make,
// not strings, nor the work over values the run gives: without more, a
// 1.4 KB expression that doubles a string 18 times (let a1 = a0 + a0;
// ...) makes 512 MB, 30 times a terabyte, repeat(input.s, 999999) a
// megabyte times as much as the input, and two nested all() over the
// input run for minutes. A metered evaluation counts its steps (each run
// of a predicate's body, each builtin or function call, each + and
// comparison) and the bytes of the values they make or read (deeply: what
// their JSON would be), and fails the expression past either bound;
// repeat, replace and join refuse to make a string over the bound before
// they make it; and the value an expression gives is weighed too, so that
// rendering it as JSON stays within the bound. The same expression on the
// same values fails the same way everywhere, so a run and its replay
// agree.
const (
	maxExprSteps = 250_000
	maxExprBytes = 256 << 20 // what a host reads of a job's input at most
	maxExprDepth = 10_000    // JSON's decoder refuses deeper values: a replay could not read them
)

// errExprBudget is the error of an evaluation past its bounds.
var errExprBudget = errors.New("the expression does too much")

// meter counts one evaluation's steps and bytes (a payload's: every
// expression of its template; the run's outputs: all of them).
type meter struct {
	steps, bytes int64
}

// meterFn is the function the metered program calls around what it
// counts; meterVar the variable that holds the evaluation's meter. No
// expression can name either ('#' cannot start an identifier).
const (
	meterFn  = "#meter"
	meterVar = "#meter_state"
)

// charge is meterFn: it counts a step and weighs v, and returns v.
func charge(args ...any) (any, error) {
	m, ok := args[0].(*meter)
	if !ok || len(args) != 2 {
		return nil, errors.New("not a function")
	}
	v := args[1]
	if m == nil { // a program run outside an engine
		return v, nil
	}
	if m.steps++; m.steps > maxExprSteps {
		return nil, fmt.Errorf("%w: over %d steps", errExprBudget, maxExprSteps)
	}
	if err := m.weigh(v); err != nil {
		return nil, err
	}
	return v, nil
}

// weigh adds what v weighs to m: about the bytes of its JSON, a list or
// map as everything it holds, each time it holds it (a list that holds
// another twice is written out twice). It stops as soon as m is over the
// bound, so it costs no more than the bound however big v is.
func (m *meter) weigh(v any) error {
	return m.weighAt(v, 0)
}

func (m *meter) weighAt(v any, depth int) error {
	if depth > maxExprDepth {
		return fmt.Errorf("%w: a value nested over %d deep", errExprBudget, maxExprDepth)
	}
	if m.bytes += 8; m.bytes > maxExprBytes {
		return fmt.Errorf("%w: over %d MiB of values made or read", errExprBudget, maxExprBytes>>20)
	}
	switch t := v.(type) {
	case nil, bool, int, int64, float64:
		return nil
	case string:
		m.bytes += int64(len(t))
		if m.bytes > maxExprBytes {
			return fmt.Errorf("%w: over %d MiB of values made or read", errExprBudget, maxExprBytes>>20)
		}
		return nil
	case []any:
		for _, e := range t {
			if err := m.weighAt(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		for k, e := range t {
			m.bytes += int64(len(k))
			if err := m.weighAt(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.String:
		m.bytes += int64(rv.Len())
		if m.bytes > maxExprBytes {
			return fmt.Errorf("%w: over %d MiB of values made or read", errExprBudget, maxExprBytes>>20)
		}
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			m.bytes += int64(rv.Len())
			break
		}
		for i := range rv.Len() {
			if err := m.weighAt(rv.Index(i).Interface(), depth+1); err != nil {
				return err
			}
		}
	case reflect.Map:
		for it := rv.MapRange(); it.Next(); {
			if err := m.weighAt(it.Key().Interface(), depth+1); err != nil {
				return err
			}
			if err := m.weighAt(it.Value().Interface(), depth+1); err != nil {
				return err
			}
		}
	}
	if m.bytes > maxExprBytes {
		return fmt.Errorf("%w: over %d MiB of values made or read", errExprBudget, maxExprBytes>>20)
	}
	return nil
}

// bounded replaces builtin name (repeat, replace, join) with one that
// refuses, before it makes it, a string over maxExprBytes.
func bounded(name string) expr.Option {
	return func(c *conf.Config) {
		b := c.Builtins[name]
		if b == nil {
			return
		}
		call := b.Func
		if call == nil && b.Safe != nil {
			call = func(args ...any) (any, error) {
				v, _, err := b.Safe(args...)
				return v, err
			}
		}
		c.Functions[name] = &builtin.Function{Name: name, Types: b.Types, Validate: b.Validate, Func: func(args ...any) (any, error) {
			if n := madeBytes(name, args); n > maxExprBytes {
				return nil, fmt.Errorf("%w: %s would make a string of %d bytes, over %d MiB", errExprBudget, name, n, maxExprBytes>>20)
			}
			return call(args...)
		}}
	}
}

// madeBytes is the length of the string builtin name makes of args, or
// 0 when args are not what it takes (it refuses them itself).
func madeBytes(name string, args []any) int64 {
	str := func(i int) (string, bool) {
		if i >= len(args) {
			return "", false
		}
		s, ok := args[i].(string)
		return s, ok
	}
	switch name {
	case "repeat":
		s, ok := str(0)
		n, isInt := toInt(args, 1)
		if !ok || !isInt || n < 0 {
			return 0
		}
		if n > 0 && int64(len(s)) > (math.MaxInt64/2)/n {
			return math.MaxInt64
		}
		return int64(len(s)) * n
	case "replace":
		s, ok1 := str(0)
		old, ok2 := str(1)
		repl, ok3 := str(2)
		if !ok1 || !ok2 || !ok3 {
			return 0
		}
		count := int64(strings.Count(s, old))
		if n, ok := toInt(args, 3); ok && n >= 0 && n < count {
			count = n
		}
		return int64(len(s)) + count*int64(max(len(repl)-len(old), 0))
	case "join":
		sep := ""
		if len(args) > 1 {
			sep, _ = str(1)
		}
		var n int64
		if len(args) == 0 {
			return 0
		}
		switch l := args[0].(type) {
		case []string:
			for _, e := range l {
				n += int64(len(e) + len(sep))
			}
		case []any:
			for _, e := range l {
				s, _ := e.(string)
				n += int64(len(s) + len(sep))
			}
		}
		return n
	}
	return 0
}

func toInt(args []any, i int) (int64, bool) {
	if i >= len(args) {
		return 0, false
	}
	switch n := args[i].(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		return int64(n), true
	}
	return 0, false
}

// compileMetered compiles src as expr.Compile does with opts, then puts
// the meter around what costs: predicates' bodies, builtins, functions,
// + and the operands of comparisons. The types the checker found stay on
// every node, so the program computes what expr's own would.
func compileMetered(src string, opts ...expr.Option) (*vm.Program, error) {
	config := conf.CreateNew()
	for _, op := range opts {
		op(config)
	}
	config.Functions[meterFn] = &builtin.Function{Name: meterFn, Func: charge}
	for name := range config.Disabled {
		delete(config.Builtins, name)
	}
	config.Check()
	tree, err := checker.ParseCheck(src, config)
	if err != nil {
		return nil, err
	}
	if config.Optimize {
		if err := optimizer.Optimize(&tree.Node, config); err != nil {
			var fe *file.Error
			if errors.As(err, &fe) {
				return nil, fe.Bind(tree.Source)
			}
			return nil, err
		}
	}
	ast.Walk(&tree.Node, metering{})
	return compiler.Compile(tree, config)
}

// metering is the visitor that wraps what costs in meterFn calls.
type metering struct{}

// compared are the binary operators whose work grows with their
// operands: their operands are counted.
var compared = map[string]bool{"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true,
	"in": true, "contains": true, "startsWith": true, "endsWith": true, "matches": true}

func (metering) Visit(n *ast.Node) {
	switch t := (*n).(type) {
	case *ast.PredicateNode:
		wrap(&t.Node)
	case *ast.BuiltinNode:
		for i := range t.Arguments {
			wrap(&t.Arguments[i])
		}
		wrap(n)
	case *ast.CallNode:
		if id, ok := t.Callee.(*ast.IdentifierNode); ok && id.Value == meterFn {
			return
		}
		for i := range t.Arguments {
			wrap(&t.Arguments[i])
		}
		wrap(n)
	case *ast.BinaryNode:
		switch {
		case t.Operator == "+":
			wrap(n)
		case compared[t.Operator]:
			wrap(&t.Left)
			wrap(&t.Right)
		}
	}
}

// wrap replaces *n with meterFn(meterVar, *n), of the same type. What
// costs nothing to read (a constant, a closure) is left as it is.
func wrap(n *ast.Node) {
	switch t := (*n).(type) {
	case *ast.NilNode, *ast.BoolNode, *ast.IntegerNode, *ast.FloatNode, *ast.StringNode, *ast.ConstantNode,
		*ast.PredicateNode, *ast.PointerNode, *ast.BytesNode:
		return
	case *ast.CallNode:
		if id, ok := t.Callee.(*ast.IdentifierNode); ok && id.Value == meterFn {
			return // counted already
		}
	}
	orig := *n
	w := &ast.CallNode{Callee: &ast.IdentifierNode{Value: meterFn}, Arguments: []ast.Node{&ast.IdentifierNode{Value: meterVar}, orig}}
	w.SetNature(*orig.Nature())
	w.SetLocation(orig.Location())
	*n = w
}
