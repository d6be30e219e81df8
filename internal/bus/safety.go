package bus

// Subjects of the safety kernels. Their payloads are ward.safety.v1
// messages (api/ward/safety/v1).
const (
	// SubjectSafetyDecision carries DecisionLogBatch messages: a
	// DecisionLog for every Check a kernel decides, in batches.
	SubjectSafetyDecision = "sys.safety.decision"
	// SubjectSafetyStatus is scatter-gather: a StatusRequest, and every
	// kernel answers with its KernelStatus (`ward policy status`, and
	// `ward policy push` waiting for the kernels to swap).
	SubjectSafetyStatus = "sys.safety.status"
	// SubjectSafetyImpact is scatter-gather: an ImpactRequest with a
	// candidate bundle, and every kernel answers with the ImpactReply of
	// its recent decisions (`ward policy impact`, `ward policy push`).
	SubjectSafetyImpact = "sys.safety.impact"
)
