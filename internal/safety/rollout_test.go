package safety

import (
	"testing"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
)

// TestRolloutTellsPushesApart: the same bundle pushed twice is one
// revision; a kernel's refusal of the first push (bucket revision 1) is
// not the answer to the second (bucket revision 2), which is pending until
// the kernel refuses or enforces that one. A kernel that reports no bucket
// revision (an older one) is taken at its word.
func TestRolloutTellsPushesApart(t *testing.T) {
	ro := &Rollout{Revision: "r1", KVRevision: 2}
	for _, tc := range []struct {
		st   *safetyv1.KernelStatus
		want KernelState
	}{
		{&safetyv1.KernelStatus{Revision: "r0", RefusedRevision: "r1", RefusedKvRevision: 1}, KernelPending},
		{&safetyv1.KernelStatus{Revision: "r0", RefusedRevision: "r1", RefusedKvRevision: 2}, KernelRefused},
		{&safetyv1.KernelStatus{Revision: "r0", RefusedRevision: "r1"}, KernelRefused},
		{&safetyv1.KernelStatus{Revision: "r1", RefusedRevision: "r1", RefusedKvRevision: 1}, KernelEnforces},
		{&safetyv1.KernelStatus{Revision: "r0"}, KernelPending},
	} {
		if got := ro.State(tc.st); got != tc.want {
			t.Errorf("%v: state %v, want %v", tc.st, got, tc.want)
		}
	}
	if (&Rollout{Revision: "r1", KVRevision: 2, Kernels: []*safetyv1.KernelStatus{{Revision: "r0", RefusedRevision: "r1", RefusedKvRevision: 1}}}).Settled() {
		t.Error("a rollout settled on the refusal of an earlier push")
	}
}
