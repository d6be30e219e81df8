package main

import (
	"testing"

	"github.com/ward-run/ward/modules/sdk"
)

func TestTodoDiff(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  sdk.CodeRequest
		want string
	}{
		{"go file", sdk.CodeRequest{FilePath: "main.go", OriginalCode: "package main\n\nfunc main() {}\n\nvar x = 1\n", Instruction: "add logging"},
			"--- a/main.go\n+++ b/main.go\n@@ -1,3 +1,4 @@\n+// TODO(ward): add logging\n package main\n \n func main() {}\n"},
		{"short file without a final newline", sdk.CodeRequest{FilePath: "run.py", OriginalCode: "print(1)", Instruction: "use logging"},
			"--- a/run.py\n+++ b/run.py\n@@ -1,1 +1,2 @@\n+# TODO(ward): use logging\n print(1)\n\\ No newline at end of file\n"},
		{"empty file", sdk.CodeRequest{FilePath: "q.sql", Instruction: "write the query"},
			"--- a/q.sql\n+++ b/q.sql\n@@ -0,0 +1 @@\n+-- TODO(ward): write the query\n"},
	} {
		if got := todoDiff(tc.req); got != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, got, tc.want)
		}
	}
}
