// Command chat-advanced is the LLM chat worker: it asks Ollama
// (/api/generate at OLLAMA_URL, model OLLAMA_MODEL, default llama3) and,
// when Ollama cannot be reached (or the job was not granted its host),
// answers with a reply that starts with "[fallback]".
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
		reply, err := llm.Generate(ollama.GenerateRequest{Prompt: req.Message, System: req.System})
		if err != nil {
			j.Warnf("ollama at %s: %v; answering with the fallback", llm.URL, err)
			return j.WriteJSON(sdk.ChatResponse{Reply: "[fallback] Echo: " + req.Message, Model: llm.Model,
				Fallback: true, Error: err.Error()})
		}
		j.Progress(100, "answered")
		return j.WriteJSON(sdk.ChatResponse{Reply: reply, Model: llm.Model})
	})
}

func main() { sdk.Main() }
