package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/apijson"
	"github.com/ward-run/ward/internal/audit"
)

// RunRequest is POST /v1/runs's body: a known workflow's name, or a
// definition (YAML, which wins), and the run's input (a JSON object).
type RunRequest struct {
	RunID      string          `json:"run_id,omitempty"`
	Workflow   string          `json:"workflow,omitempty"`
	Definition string          `json:"definition,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Tenant     string          `json:"tenant,omitempty"`
}

// RerunRequest is POST /v1/runs/{id}/rerun's body.
type RerunRequest struct {
	FromStep string          `json:"from_step"`
	Input    json.RawMessage `json:"input,omitempty"`
}

func (s *Server) routesWorkflows() {
	s.api("POST", "/v1/runs", ScopeSubmit, s.runWorkflow)
	s.api("GET", "/v1/runs", ScopeRead, s.listRuns)
	s.api("GET", "/v1/runs/{id}", ScopeRead, s.getRun)
	s.api("POST", "/v1/runs/{id}/cancel", ScopeSubmit, s.cancelRun)
	s.api("POST", "/v1/runs/{id}/rerun", ScopeSubmit, s.rerun)
}

func (s *Server) runWorkflow(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	var in RunRequest
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	req, err := runRequest(in, p)
	if err != nil {
		return nil, err
	}
	return s.startRun(r, p, req)
}

// runRequest is the run p asks for with in, checked as far as the
// gateway can (the scheduler checks the definition and the input).
func runRequest(in RunRequest, p Principal) (*wardv1.WorkflowRunRequest, error) {
	if in.Workflow == "" && in.Definition == "" {
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "name a workflow, or give its definition")
	}
	req := &wardv1.WorkflowRunRequest{RunId: in.RunID, Name: in.Workflow, Definition: []byte(in.Definition), Input: in.Input}
	if in.Tenant != "" && in.Tenant != p.Tenant {
		if !p.Admin() {
			return nil, errorf(http.StatusForbidden, reason.TenantMismatch, "key %s is tenant %q's; it cannot run for tenant %q", p.KeyID, p.Tenant, in.Tenant)
		}
		req.TenantId = in.Tenant
	}
	if err := checkRun(req, p); err != nil {
		return nil, err
	}
	return req, nil
}

// checkRun gives req p's tenant when it names none, and checks its input.
func checkRun(req *wardv1.WorkflowRunRequest, p Principal) error {
	if req.TenantId == "" {
		req.TenantId = p.Tenant
	}
	if len(req.Input) > 0 && !json.Valid(req.Input) {
		return errorf(http.StatusBadRequest, reason.BadRequest, "input is not JSON")
	}
	return nil
}

func (s *Server) startRun(r *http.Request, p Principal, req *wardv1.WorkflowRunRequest) (any, error) {
	if err := checkRun(req, p); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	rep, err := s.clientOf(p).RunWorkflow(ctx, req)
	if rep != nil && !rep.GetAccepted() {
		return nil, refusal(&wardv1.SubmitReply{Reason: rep.GetReason(), Message: rep.GetMessage()}, err)
	}
	if err != nil {
		return nil, err
	}
	return withStatus{http.StatusAccepted, apijson.Of(rep)}, nil
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	limit, err := limitParam(r, 50)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	runs, err := s.clientOf(p).Workflows(ctx, limit)
	if err != nil {
		return nil, err
	}
	return map[string]any{"runs": apijson.List(runs)}, nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	id := r.PathValue("id")
	run, err := s.clientOf(p).Workflow(ctx, id, r.URL.Query().Get("events") == "true")
	if err != nil {
		return nil, notFound(err, "run", id)
	}
	return apijson.Of(run), nil
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	var in CancelRequest
	if err := decodeOptional(r, &in); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	id := r.PathValue("id")
	run, err := s.clientOf(p).CancelWorkflow(ctx, id, cancelReason(in.Reason, p))
	if err != nil {
		if run != nil && run.GetState() != "RUNNING" {
			return nil, errorf(http.StatusConflict, CodeConflict, "%v", err)
		}
		return nil, notFound(err, "run", id)
	}
	if p.Admin() {
		s.audit(ctx, p, audit.WorkflowCancel, id, map[string]string{"tenant": run.GetTenantId()})
	}
	return apijson.Of(run), nil
}

func (s *Server) rerun(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	var in RerunRequest
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	if in.FromStep == "" {
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "from_step is required")
	}
	id := r.PathValue("id")
	ctx, cancel := s.ctx(r)
	run, err := s.clientOf(p).Workflow(ctx, id, false)
	cancel()
	if err != nil {
		return nil, notFound(err, "run", id)
	}
	return s.startRun(r, p, &wardv1.WorkflowRunRequest{RerunOf: id, FromStep: in.FromStep, Input: in.Input, TenantId: run.GetTenantId()})
}
