package sdk

// Payloads of the built-in modules. Each is JSON on the wire.

// ChatRequest is the input of chat-simple and chat-advanced. A payload
// that is not JSON is taken as the message itself.
type ChatRequest struct {
	Message string `json:"message"`
	// Model overrides OLLAMA_MODEL (chat-advanced).
	Model string `json:"model,omitempty"`
	// System is a system prompt (chat-advanced).
	System string `json:"system,omitempty"`
}

// ChatResponse is the result of chat-simple and chat-advanced.
type ChatResponse struct {
	Reply string `json:"reply"`
	Model string `json:"model,omitempty"`
	// Fallback is set when the model could not be asked; Reply then
	// starts with "[fallback]" and Error says why.
	Fallback bool   `json:"fallback,omitempty"`
	Error    string `json:"error,omitempty"`
}

// CodeRequest is the input of code-llm.
type CodeRequest struct {
	FilePath     string `json:"file_path"`
	OriginalCode string `json:"original_code"`
	Instruction  string `json:"instruction"`
	Model        string `json:"model,omitempty"`
}

// CodeSuggestion is the result of code-llm.
type CodeSuggestion struct {
	FilePath     string `json:"file_path"`
	OriginalCode string `json:"original_code"`
	Instruction  string `json:"instruction"`
	Patch        Patch  `json:"patch"`
	Model        string `json:"model,omitempty"`
	Fallback     bool   `json:"fallback,omitempty"`
	Error        string `json:"error,omitempty"`
}

// Patch is a suggested change: a unified diff against the original, or
// the whole replacement file.
type Patch struct {
	Type    string `json:"type"` // PatchUnifiedDiff or PatchReplace
	Content string `json:"content"`
}

// Patch types.
const (
	PatchUnifiedDiff = "unified_diff"
	PatchReplace     = "replace"
)

// RepoRequest is the JSON part of a repo module's input. The input is
// either a tar archive (optionally gzipped) of the repository, or this
// JSON, optionally followed by such an archive: the repository is then
// the archive, or else the directory Dir, which must be one of the job's
// read-only mounts.
type RepoRequest struct {
	Dir string `json:"dir,omitempty"`
	// Files restricts lint and sast to these paths (a partition's batch).
	Files []string `json:"files,omitempty"`
	// BatchSize is repo-partition's number of files per batch (50).
	BatchSize int `json:"batch_size,omitempty"`
	// BatchBytes caps a batch's total size (1 MiB); a larger file is a
	// batch of its own.
	BatchBytes int64 `json:"batch_bytes,omitempty"`
	// MaxLineLength is repo-lint's longest allowed line, in characters
	// (120).
	MaxLineLength int `json:"max_line_length,omitempty"`
	// Results are lint and sast results for repo-report to merge; with no
	// repository, the report is of these alone.
	Results []FindingSet `json:"results,omitempty"`
	// Format of repo-report's result: "json" (the default; it holds the
	// Markdown too), "markdown" or "sarif" (a SARIF 2.1.0 log, for code
	// hosts and IDEs).
	Format string `json:"format,omitempty"`
}

// FileInfo is a file of a repository.
type FileInfo struct {
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	Language string `json:"language,omitempty"`
	Lines    int    `json:"lines,omitempty"`
	Binary   bool   `json:"binary,omitempty"`
}

// LanguageStats sums a language's files.
type LanguageStats struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	Lines int   `json:"lines"`
}

// ScanResult is repo-scan's result.
type ScanResult struct {
	Files      []FileInfo               `json:"files"`
	Languages  map[string]LanguageStats `json:"languages"`
	TotalFiles int                      `json:"total_files"`
	TotalBytes int64                    `json:"total_bytes"`
	// Skipped names entries that were not read, and why.
	Skipped []string `json:"skipped,omitempty"`
}

// Batch is one part of a partition.
type Batch struct {
	Index int      `json:"index"`
	Files []string `json:"files"`
	Bytes int64    `json:"bytes"`
}

// PartitionResult is repo-partition's result.
type PartitionResult struct {
	Batches    []Batch `json:"batches"`
	TotalFiles int     `json:"total_files"`
}

// Finding is one problem found in a file.
type Finding struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column,omitempty"`
	Rule     string `json:"rule"`
	Severity string `json:"severity"` // SeverityError, SeverityWarning or SeverityInfo
	Message  string `json:"message"`
	// Excerpt is the line found, shortened, with any secret on it masked.
	Excerpt string `json:"excerpt,omitempty"`
	// Fix says how to fix the finding.
	Fix string `json:"fix,omitempty"`
}

// Severities.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
	SeverityInfo    = "info"
)

// FindingSet is the result of repo-lint and repo-sast.
type FindingSet struct {
	Tool         string    `json:"tool"`
	Findings     []Finding `json:"findings"`
	FilesChecked int       `json:"files_checked"`
	Skipped      []string  `json:"skipped,omitempty"`
}

// Report is repo-report's result.
type Report struct {
	Summary  ReportSummary `json:"summary"`
	Findings []Finding     `json:"findings"`
	Markdown string        `json:"markdown"`
}

// ReportSummary counts a report's findings.
type ReportSummary struct {
	Files      int            `json:"files"`
	Findings   int            `json:"findings"`
	BySeverity map[string]int `json:"by_severity"`
	ByRule     map[string]int `json:"by_rule"`
	Tools      []string       `json:"tools"`
}
