// Command code-llm is the code worker: given a file, its code and an
// instruction, it asks Ollama for a structured patch and writes
// {file_path, original_code, instruction, patch{type, content}}. When
// Ollama cannot be reached, or answers with no usable patch, the patch is a
// valid unified diff that puts the instruction at the top of the file as a
// TODO comment, and fallback is set.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/ward-run/ward/modules/internal/ollama"
	"github.com/ward-run/ward/modules/sdk"
)

const system = `You are a careful programmer. You are given a file and an instruction.
Answer with one JSON object and nothing else:
{"type": "unified_diff", "content": "<a unified diff of the file, with --- a/<path> and +++ b/<path> headers>"}
or, when the change rewrites most of the file,
{"type": "replace", "content": "<the whole new file>"}.`

func init() {
	sdk.Handle(func(j *sdk.Job) error {
		var req sdk.CodeRequest
		if err := j.DecodeJSON(&req); err != nil {
			return err
		}
		if req.FilePath == "" || req.Instruction == "" {
			return errors.New("code request: file_path and instruction are required")
		}
		out := sdk.CodeSuggestion{FilePath: req.FilePath, OriginalCode: req.OriginalCode, Instruction: req.Instruction}
		llm := ollama.FromEnv(req.Model)
		out.Model = llm.Model
		j.Progress(0, "asking "+llm.Model)
		patch, err := ask(llm, req)
		if err != nil {
			j.Warnf("ollama at %s: %v; answering with the fallback patch", llm.URL, err)
			out.Patch = sdk.Patch{Type: sdk.PatchUnifiedDiff, Content: todoDiff(req)}
			out.Fallback, out.Error = true, err.Error()
		} else {
			out.Patch = patch
		}
		return j.WriteJSON(out)
	})
}

func ask(llm ollama.Client, req sdk.CodeRequest) (sdk.Patch, error) {
	prompt := fmt.Sprintf("File: %s\nInstruction: %s\n\n```\n%s\n```\n", req.FilePath, req.Instruction, req.OriginalCode)
	answer, err := llm.Generate(ollama.GenerateRequest{Prompt: prompt, System: system, Format: "json"})
	if err != nil {
		return sdk.Patch{}, err
	}
	var p sdk.Patch
	if err := json.Unmarshal([]byte(answer), &p); err != nil {
		return sdk.Patch{}, fmt.Errorf("the model's answer is not the JSON asked for: %w", err)
	}
	switch {
	case p.Type != sdk.PatchUnifiedDiff && p.Type != sdk.PatchReplace:
		return sdk.Patch{}, fmt.Errorf("the model's patch type %q is neither %s nor %s", p.Type, sdk.PatchUnifiedDiff, sdk.PatchReplace)
	case strings.TrimSpace(p.Content) == "":
		return sdk.Patch{}, errors.New("the model's patch is empty")
	case p.Type == sdk.PatchUnifiedDiff && !strings.Contains(p.Content, "@@"):
		return sdk.Patch{}, errors.New("the model's diff has no hunk")
	}
	return p, nil
}

// todoDiff is a unified diff that adds the instruction as a comment before
// the first line of the file, with up to three lines of context.
func todoDiff(req sdk.CodeRequest) string {
	comment := commentPrefix(req.FilePath) + " TODO(ward): " + strings.ReplaceAll(req.Instruction, "\n", " ")
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", req.FilePath, req.FilePath)
	code := req.OriginalCode
	if code == "" {
		fmt.Fprintf(&b, "@@ -0,0 +1 @@\n+%s\n", comment)
		return b.String()
	}
	lines := strings.Split(strings.TrimSuffix(code, "\n"), "\n")
	ctx := min(3, len(lines))
	fmt.Fprintf(&b, "@@ -1,%d +1,%d @@\n+%s\n", ctx, ctx+1, comment)
	for _, l := range lines[:ctx] {
		fmt.Fprintf(&b, " %s\n", l)
	}
	if ctx == len(lines) && !strings.HasSuffix(code, "\n") {
		b.WriteString("\\ No newline at end of file\n")
	}
	return b.String()
}

// commentPrefix is the line-comment marker of the file's language.
func commentPrefix(file string) string {
	switch strings.ToLower(path.Ext(file)) {
	case ".go", ".c", ".h", ".cc", ".cpp", ".hpp", ".java", ".js", ".jsx", ".ts", ".tsx", ".rs", ".swift", ".kt", ".scala", ".cs", ".php", ".proto":
		return "//"
	case ".sql", ".lua", ".hs":
		return "--"
	}
	return "#"
}

func main() { sdk.Main() }
