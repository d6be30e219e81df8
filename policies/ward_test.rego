package ward.safety_test

import data.ward.safety

job := {
	"job_id": "j1",
	"topic": "job.echo",
	"tenant_id": "acme",
	"labels": {},
	"requires": [],
	"priority": 0,
	"payload_size": 0,
	"module": {"name": "echo", "digest": "", "requested": {}},
	"pool": "",
}

test_job_echo_for_acme_allowed if {
	count(safety.deny) == 0 with input as job
}

test_sys_destroy_denied if {
	safety.deny == {"topic sys.destroy is forbidden"} with input as object.union(job, {"topic": "sys.destroy"})
}

test_non_job_topic_denied if {
	safety.deny == {`topic "sys.other" is outside job.*`} with input as object.union(job, {"topic": "sys.other"})
}

test_bare_job_prefix_denied if {
	safety.deny == {`topic "job." is outside job.*`} with input as object.union(job, {"topic": "job."})
}

test_empty_tenant_denied if {
	safety.deny == {"tenant_id is required"} with input as object.union(job, {"tenant_id": ""})
}

test_blank_tenant_denied if {
	safety.deny == {"tenant_id is required"} with input as object.union(job, {"tenant_id": "  "})
}

test_every_deny_reported if {
	safety.deny == {
		`topic "other" is outside job.*`,
		"tenant_id is required",
	} with input as object.union(job, {"topic": "other", "tenant_id": ""})
}

test_no_constraints_by_default if {
	safety.constraints == {} with input as job
}

test_tenant_constraints_from_data if {
	c := {"max_retries": 3, "grants": {"http_hosts": ["api.acme.io"]}}
	safety.constraints == c with input as job
		with data.tenants as {"acme": {"constraints": c}}
}

test_other_tenant_constraints_not_applied if {
	safety.constraints == {} with input as job
		with data.tenants as {"globex": {"constraints": {"max_retries": 1}}}
}
