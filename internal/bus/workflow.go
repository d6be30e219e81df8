package bus

// Subjects of workflow runs. Their payloads are ward.v1 Workflow*
// messages; the client subjects end in the tenant, as the job ones do
// (TenantSubject), and carry the tenant's requests only.
const (
	// SubjectWorkflowRun is request/reply on sys.workflow.run.<tenant>:
	// WorkflowRunRequest → WorkflowRunReply.
	SubjectWorkflowRun = "sys.workflow.run"
	// SubjectWorkflowGet is request/reply on sys.workflow.get.<tenant>:
	// WorkflowGetRequest → WorkflowGetReply.
	SubjectWorkflowGet = "sys.workflow.get"
	// SubjectWorkflowList is request/reply on sys.workflow.list.<tenant>:
	// WorkflowListRequest → WorkflowListReply.
	SubjectWorkflowList = "sys.workflow.list"
	// SubjectWorkflowCancel is request/reply on
	// sys.workflow.cancel.<tenant>: WorkflowCancelRequest →
	// WorkflowGetReply.
	SubjectWorkflowCancel = "sys.workflow.cancel"
	// SubjectWorkflowEvents matches every run's event subject.
	SubjectWorkflowEvents = "sys.workflow.event.>"
)

// WorkflowEventSubject carries run's WorkflowEvents, as the scheduler
// driving it logs them: sys.workflow.event.<tenant>.<run>.
func WorkflowEventSubject(tenant, run string) string {
	return "sys.workflow.event." + tenant + "." + run
}
