package jobstore

import (
	"fmt"
	"strings"
	"testing"
)

// TestOrdIndexRemove: remove drops exactly gone's ids wherever they are in
// the index, whether n counts them exactly or overcounts them (it then
// reads to the end), and keeps the rest in order.
func TestOrdIndexRemove(t *testing.T) {
	build := func() *ordIndex {
		x := new(ordIndex)
		for i := range 10 {
			x.add(int64(i), fmt.Sprintf("j%d", i))
		}
		return x
	}
	ids := func(x *ordIndex) string {
		var b strings.Builder
		for _, p := range x.e {
			b.WriteString(p.id + " ")
		}
		return b.String()
	}
	for _, c := range []struct {
		gone []string
		n    int
		want string
	}{
		{[]string{"j0", "j1", "j2"}, 3, "j3 j4 j5 j6 j7 j8 j9 "},
		{[]string{"j0", "j5", "j9"}, 3, "j1 j2 j3 j4 j6 j7 j8 "},
		{[]string{"j9"}, 1, "j0 j1 j2 j3 j4 j5 j6 j7 j8 "},
		{[]string{"j1", "j4", "nope"}, 3, "j0 j2 j3 j5 j6 j7 j8 j9 "},
		{[]string{"j1", "j4"}, 10, "j0 j2 j3 j5 j6 j7 j8 j9 "},
		{nil, 0, "j0 j1 j2 j3 j4 j5 j6 j7 j8 j9 "},
	} {
		x, gone := build(), map[string]bool{}
		for _, id := range c.gone {
			gone[id] = true
		}
		x.remove(gone, c.n)
		if got := ids(x); got != c.want {
			t.Errorf("remove(%v, %d) left %q, want %q", c.gone, c.n, got, c.want)
		}
		if tail := x.e[len(x.e):cap(x.e)]; len(tail) > 0 && tail[0].id != "" {
			t.Errorf("remove(%v, %d) kept %q past the end", c.gone, c.n, tail[0].id)
		}
	}
}
