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

// workflowsAPI is the workflow runs' endpoints (/v1/runs): they act
// through the caller's client, and audit an admin's cancels.
type workflowsAPI struct {
	deadline
	clients *tenantClients
	audit   *auditTrail
}

func (wf *workflowsAPI) mount(api mountFunc) {
	api("POST", "/v1/runs", ScopeSubmit, wf.runWorkflow)
	api("GET", "/v1/runs", ScopeRead, wf.listRuns)
	api("GET", "/v1/runs/{id}", ScopeRead, wf.getRun)
	api("POST", "/v1/runs/{id}/cancel", ScopeSubmit, wf.cancelRun)
	api("POST", "/v1/runs/{id}/rerun", ScopeSubmit, wf.rerun)
}

func (wf *workflowsAPI) runWorkflow(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	var in RunRequest
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	req, err := runRequest(in, p)
	if err != nil {
		return nil, err
	}
	return wf.startRun(r, p, req)
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

func (wf *workflowsAPI) startRun(r *http.Request, p Principal, req *wardv1.WorkflowRunRequest) (any, error) {
	if err := checkRun(req, p); err != nil {
		return nil, err
	}
	ctx, cancel := wf.ctx(r)
	defer cancel()
	rep, err := wf.clients.of(p).RunWorkflow(ctx, req)
	if rep != nil && !rep.GetAccepted() {
		return nil, refusal(&wardv1.SubmitReply{Reason: rep.GetReason(), Message: rep.GetMessage()}, err)
	}
	if err != nil {
		return nil, err
	}
	return withStatus{http.StatusAccepted, apijson.Of(rep)}, nil
}

func (wf *workflowsAPI) listRuns(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	limit, err := limitParam(r, 50)
	if err != nil {
		return nil, err
	}
	ctx, cancel := wf.ctx(r)
	defer cancel()
	runs, err := wf.clients.of(p).Workflows(ctx, limit)
	if err != nil {
		return nil, err
	}
	return map[string]any{"runs": apijson.List(runs)}, nil
}

func (wf *workflowsAPI) getRun(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	ctx, cancel := wf.ctx(r)
	defer cancel()
	id := r.PathValue("id")
	run, err := wf.clients.of(p).Workflow(ctx, id, r.URL.Query().Get("events") == "true")
	if err != nil {
		return nil, notFound(err, "run", id)
	}
	return apijson.Of(run), nil
}

func (wf *workflowsAPI) cancelRun(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	var in CancelRequest
	if err := decodeOptional(r, &in); err != nil {
		return nil, err
	}
	ctx, cancel := wf.ctx(r)
	defer cancel()
	id := r.PathValue("id")
	run, err := wf.clients.of(p).CancelWorkflow(ctx, id, cancelReason(in.Reason, p))
	if err != nil {
		if run != nil && run.GetState() != "RUNNING" {
			return nil, errorf(http.StatusConflict, CodeConflict, "%v", err)
		}
		return nil, notFound(err, "run", id)
	}
	if p.Admin() {
		wf.audit.record(ctx, p, audit.WorkflowCancel, id, map[string]string{"tenant": run.GetTenantId()})
	}
	return apijson.Of(run), nil
}

func (wf *workflowsAPI) rerun(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	var in RerunRequest
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	if in.FromStep == "" {
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "from_step is required")
	}
	id := r.PathValue("id")
	ctx, cancel := wf.ctx(r)
	run, err := wf.clients.of(p).Workflow(ctx, id, false)
	cancel()
	if err != nil {
		return nil, notFound(err, "run", id)
	}
	return wf.startRun(r, p, &wardv1.WorkflowRunRequest{RerunOf: id, FromStep: in.FromStep, Input: in.Input, TenantId: run.GetTenantId()})
}
