// Command chat-advanced is the LLM chat worker: it asks Ollama
// (/api/generate at OLLAMA_URL, model OLLAMA_MODEL, default llama3) with
// "stream": true and streams the answer's tokens as they come (job progress
// that `ward submit --wait` prints); the result holds the whole answer.
// When Ollama cannot be reached (or the job was not granted its host), it
// answers with a reply that starts with "[fallback]". A stream that breaks
// after some tokens fails the job: what was streamed is not the answer.
package main

import (
	"github.com/ward-run/ward/modules/internal/ollama"
	"github.com/ward-run/ward/modules/sdk"
)

func init() {
	sdk.Handle(func(j *sdk.Job) error {
		in, err := j.Input()
		if err != nil {
			return err
		}
		req, err := sdk.ParseChatRequest(in)
		if err != nil {
			return err
		}
		llm := ollama.FromEnv(req.Model)
		j.Progress(0, "asking "+llm.Model)
		streamed, warned := false, false
		reply, err := llm.GenerateStream(ollama.GenerateRequest{Prompt: req.Message, System: req.System}, func(piece string) {
			streamed = true
			if err := j.Stream(piece); err != nil && !warned {
				warned = true // the result still holds the whole answer
				j.Warnf("streaming stopped: %v", err)
			}
		})
		if err != nil {
			if streamed {
				return err
			}
			j.Warnf("ollama at %s: %v; answering with the fallback", llm.URL, err)
			return j.WriteJSON(sdk.ChatResponse{Reply: "[fallback] Echo: " + req.Message, Model: llm.Model,
				Fallback: true, Error: err.Error()})
		}
		j.Progress(100, "answered")
		return j.WriteJSON(sdk.ChatResponse{Reply: reply, Model: llm.Model})
	})
}

func main() { sdk.Main() }
