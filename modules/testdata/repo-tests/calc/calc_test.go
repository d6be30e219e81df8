package calc

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAdd(t *testing.T) {
	t.Run("zero", func(t *testing.T) { assert.Equal(t, 0, Add(0, 0)) })
	t.Run("one", func(t *testing.T) { assert.Equal(t, 2, Add(1, 1)) })
}

func TestAddNegative(t *testing.T) { assert.Equal(t, -2, Add(-1, -1)) }

func BenchmarkAdd(b *testing.B) {
	for b.Loop() {
		Add(1, 2)
	}
}

func FuzzAdd(f *testing.F) {
	f.Fuzz(func(t *testing.T, a, b int) { Add(a, b) })
}

func ExampleAdd() {
	fmt.Println(Add(1, 2))
	// Output: 3
}
