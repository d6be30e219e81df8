// Package ollama calls Ollama's /api/generate from a module, through the
// sandbox's HTTP host function.
package ollama

import (
	"errors"
	"strings"

	"github.com/ward-run/ward/modules/sdk"
)

// Defaults when OLLAMA_URL and OLLAMA_MODEL are not set.
const (
	DefaultURL   = "http://127.0.0.1:11434"
	DefaultModel = "llama3"
)

// Client is an Ollama server and the model to ask.
type Client struct {
	URL   string
	Model string
}

// FromEnv returns the Ollama of the job's environment (OLLAMA_URL,
// OLLAMA_MODEL), model overriding the model when not empty.
func FromEnv(model string) Client {
	c := Client{URL: sdk.Getenv("OLLAMA_URL"), Model: model}
	if c.URL == "" {
		c.URL = DefaultURL
	}
	if c.Model == "" {
		c.Model = sdk.Getenv("OLLAMA_MODEL")
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	c.URL = strings.TrimRight(c.URL, "/")
	return c
}

// GenerateRequest is the body of POST /api/generate.
type GenerateRequest struct {
	Model  string `json:"model"`
	Prompt string `json:"prompt"`
	System string `json:"system,omitempty"`
	// Format "json" asks the model for a JSON answer.
	Format string `json:"format,omitempty"`
	Stream bool   `json:"stream"`
}

// GenerateResponse is the answer of a non-streaming /api/generate.
type GenerateResponse struct {
	Model    string `json:"model"`
	Response string `json:"response"`
	Done     bool   `json:"done"`
	Error    string `json:"error"`
}

// Generate asks the model and returns its answer.
func (c Client) Generate(req GenerateRequest) (string, error) {
	req.Model = c.Model
	var resp GenerateResponse
	if err := sdk.PostJSON(c.URL+"/api/generate", req, &resp); err != nil {
		return "", err
	}
	if resp.Error != "" {
		return "", errors.New("ollama: " + resp.Error)
	}
	if strings.TrimSpace(resp.Response) == "" {
		return "", errors.New("ollama: empty answer")
	}
	return resp.Response, nil
}
