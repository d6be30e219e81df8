package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ward-run/ward/api/reason"
)

// pageView is what every template gets.
type pageView struct {
	Title string
	// P is the logged-in key (zero on the login page).
	P Principal
	// CSRF is the session's token, for the script's requests and forms.
	CSRF string
	// Path is the page's, for the navigation.
	Path string
	Data any
}

// LoggedIn reports whether the page has a user.
func (v *pageView) LoggedIn() bool { return v.P.KeyID != "" }

// Active reports whether the page is under prefix, for the navigation.
func (v *pageView) Active(prefix string) bool {
	if prefix == "/ui/" {
		return v.Path == "/ui/"
	}
	return strings.HasPrefix(v.Path, prefix)
}

// templates are the pages, each parsed with the layout.
var templates = sync.OnceValues(func() (map[string]*template.Template, error) {
	names, err := fs.Glob(webFS, "web/templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New(name).Funcs(uiFuncs).ParseFS(webFS, "web/templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
})

func (ui *Handler) render(w http.ResponseWriter, name string, status int, v *pageView) {
	ts, err := templates()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	t, ok := ts[name]
	if !ok {
		http.Error(w, "no template "+name, http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		ui.log.Warn("dashboard page failed", "page", name, "err", err)
		http.Error(w, "the page could not be rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if status == 0 {
		status = http.StatusOK
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// errorData is the error page's.
type errorData struct {
	Status  int
	Code    string
	Message string
}

// renderError shows err as the API would say it.
func (ui *Handler) renderError(w http.ResponseWriter, r *http.Request, v *pageView, err error) {
	var ae *Error
	switch {
	case errors.As(err, &ae):
	case errors.Is(err, context.DeadlineExceeded):
		ae = errorf(http.StatusGatewayTimeout, reason.Unavailable, "the system did not answer in time")
	default:
		ui.log.Warn("dashboard request failed", "path", r.URL.Path, "err", err)
		ae = errorf(http.StatusBadGateway, reason.Unavailable, "%v", err)
	}
	if v == nil {
		v = &pageView{Path: r.URL.Path}
	}
	retryAfter(w, ae)
	v.Title = http.StatusText(ae.Status)
	v.Data = errorData{Status: ae.Status, Code: string(ae.Code), Message: ae.Message}
	ui.render(w, "error", ae.Status, v)
}

var terminalStates = map[string]bool{"SUCCEEDED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true, "DENIED": true}

var uiFuncs = template.FuncMap{
	// ts is a Unix ms time, UTC, to the ms.
	"ts": func(ms int64) string {
		if ms == 0 {
			return ""
		}
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
	},
	// clock is a Unix ms time of day, UTC.
	"clock": func(ms int64) string {
		if ms == 0 {
			return ""
		}
		return time.UnixMilli(ms).UTC().Format("15:04:05.000")
	},
	"time": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	// ms is a duration in ms, as a person reads it.
	"ms": func(ms int64) string { return fmtMS(ms) },
	"ns": func(ns int64) string { return time.Duration(ns).Round(time.Microsecond).String() },
	// delta is b-a in ms, "+12 ms".
	"delta": func(a, b int64) string {
		if a == 0 || b == 0 {
			return ""
		}
		return "+" + fmtMS(b-a)
	},
	"pretty":   prettyJSON,
	"terminal": func(state string) bool { return terminalStates[state] },
	"short": func(id string) string {
		if len(id) > 8 {
			return id[:8]
		}
		return id
	},
	"digest": func(d string) string {
		d = strings.TrimPrefix(d, "sha256:")
		if len(d) > 12 {
			return d[:12]
		}
		return d
	},
	"bytes": fmtBytes,
	"pct":   func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) + "%" },
	"join":  strings.Join,
	"add":   func(a, b int) int { return a + b },
	"sub":   func(a, b int64) int64 { return a - b },
	"float": func(n int) float64 { return float64(n) },
	"int64": func(n int) int64 { return int64(n) },
	"has":   func(l []string, s string) bool { return slices.Contains(l, s) },
	"list":  func(s ...string) []string { return s },
	// ago is how long before now (Unix ms) ms was.
	"ago": func(now, ms int64) string {
		if ms == 0 {
			return "never"
		}
		return fmtMS(max(0, now-ms))
	},
	// tsany is ts of a JSON number.
	"tsany": func(v any) string {
		f, ok := v.(float64)
		if !ok || f == 0 {
			return ""
		}
		return time.UnixMilli(int64(f)).UTC().Format("2006-01-02 15:04:05.000")
	},
	// dict2 passes two values to a template.
	"dict2": func(a, b any) struct{ A, B any } { return struct{ A, B any }{a, b} },
	"gauge": func(label string, value, max float64, text string) template.HTML {
		return svgGauge(label, value, max, text)
	},
}

func fmtMS(ms int64) string {
	switch {
	case ms < 1000:
		return strconv.FormatInt(ms, 10) + " ms"
	case ms < 60_000:
		return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s"
	default:
		return (time.Duration(ms) * time.Millisecond).Round(time.Second).String()
	}
}

func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64) + " " + string("KMGTPE"[exp]) + "iB"
}

// prettyJSON indents a JSON value (raw JSON, or any value).
func prettyJSON(v any) string {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		raw = b
	}
	if len(raw) == 0 {
		return ""
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return string(raw)
	}
	return out.String()
}
