// Package ollama calls Ollama's /api/generate from a module, through the
// sandbox's HTTP host function.
package ollama

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// maxLine caps one line of a streamed answer.
const maxLine = 1 << 20

// GenerateStream asks the model with "stream": true and calls each with
// every piece of the answer as Ollama sends it (newline-delimited JSON, one
// object per token or so, the last with "done": true). It returns the
// whole answer; an error says how far it got in streamed.
func (c Client) GenerateStream(req GenerateRequest, each func(piece string)) (answer string, err error) {
	req.Model, req.Stream = c.Model, true
	body, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	url := c.URL + "/api/generate"
	resp, err := sdk.FetchStream(&sdk.Request{Method: "POST", URL: url, Body: body,
		Header: map[string][]string{"Content-Type": {"application/json"}}})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.Status/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return "", fmt.Errorf("POST %s: status %d: %s", url, resp.Status, msg)
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var part GenerateResponse
		if err := json.Unmarshal(line, &part); err != nil {
			return text.String(), fmt.Errorf("POST %s: a line of the stream: %w", url, err)
		}
		if part.Error != "" {
			return text.String(), errors.New("ollama: " + part.Error)
		}
		if part.Response != "" {
			text.WriteString(part.Response)
			if each != nil {
				each(part.Response)
			}
		}
		if part.Done {
			if strings.TrimSpace(text.String()) == "" {
				return "", errors.New("ollama: empty answer")
			}
			return text.String(), nil
		}
	}
	if err := sc.Err(); err != nil {
		return text.String(), fmt.Errorf("POST %s: reading the stream: %w", url, err)
	}
	return text.String(), fmt.Errorf("POST %s: the stream ended before done", url)
}
