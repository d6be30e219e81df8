# Tests of ward.rego with the data in data.yaml. Run them with
# `ward policy test policies`; `ward policy push` runs them too, and so does
# every safety kernel before it puts a bundle in force.
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
	"module": {"name": "echo", "digest": "", "signed": false, "requested": requested_nothing},
	"pool": "echo",
}

requested_nothing := {
	"http_hosts": [],
	"read_only_dirs": [],
	"env_keys": [],
	"memory_limit_bytes": 0,
	"time_limit_ms": 0,
}

# with_module is job run by module name, asking for requested.
with_module(name, requested) := object.union(job, {"module": {
	"name": name,
	"digest": "",
	"requested": object.union(requested_nothing, requested),
}})

# ------------------------------------------------------------------ data

# The rules read these keys without defaults (each default would cost every
# Check a little): a data file that drops one fails here, and the bundle is
# refused, instead of denying every job.
test_data_has_every_key_the_rules_read if {
	every key in ["allowed_topics", "max_payload_bytes", "topic_max_payload_bytes", "constraints"] {
		data.defaults[key]
	}
	is_object(data.tenants)
	is_object(data.modules)
	is_boolean(data.defaults.require_signed_modules)
	is_array(data.defaults.signed_pools)
}

# ------------------------------------------------------------------ allowed

test_job_echo_for_acme_allowed_without_constraints if {
	count(safety.deny) == 0 with input as job
	safety.constraints == {} with input as job
}

test_unknown_tenant_gets_default_topics if {
	count(safety.deny) == 0 with input as object.union(job, {"tenant_id": "somebody-new", "topic": "job.chat.simple"})
}

test_default_allows_deep_job_topics if {
	count(safety.deny) == 0 with input as object.union(job, {"topic": "job.repo.lint"})
}

# ------------------------------------------------------------------ forbidden topics

test_sys_destroy_denied if {
	safety.deny == {"topic sys.destroy is forbidden"} with input as object.union(job, {"topic": "sys.destroy"})
}

test_sys_destroy_denied_even_when_allow_listed if {
	safety.deny == {"topic sys.destroy is forbidden"} with input as object.union(job, {"topic": "sys.destroy"})
		with data.tenants as {"acme": {"allowed_topics": ["**"]}}
}

# ------------------------------------------------------------------ tenant

test_empty_tenant_denied if {
	safety.deny == {"tenant_id is required"} with input as object.union(job, {"tenant_id": ""})
}

test_blank_tenant_denied if {
	safety.deny == {"tenant_id is required"} with input as object.union(job, {"tenant_id": " \t"})
}

# ------------------------------------------------------------------ malformed topics

test_malformed_topics_denied if {
	every topic in ["", "job.", ".job", "job..echo", "job.*", "job.>", "job echo", "job.echo\n"] {
		want := {sprintf("topic %q is malformed: want dot-separated tokens, such as job.echo", [topic])}
		safety.deny == want with input as object.union(job, {"topic": topic})
	}
}

# ------------------------------------------------------------------ topic allow-lists

test_topic_outside_default_allow_list_denied if {
	want := {`topic sys.other is not allowed for tenant "acme"`}
	safety.deny == want with input as object.union(job, {"topic": "sys.other"})
}

test_tenant_allow_list_replaces_default if {
	inp := object.union(job, {"tenant_id": "globex"})
	count(safety.deny) == 0 with input as inp
	count(safety.deny) == 0 with input as object.union(inp, {"topic": "job.chat.advanced"})
	want := {`topic job.repo.lint is not allowed for tenant "globex"`}
	safety.deny == want with input as object.union(inp, {"topic": "job.repo.lint"})
}

test_single_star_matches_one_token if {
	inp := object.union(job, {"tenant_id": "globex", "topic": "job.chat.advanced.more"})
	safety.deny == {`topic job.chat.advanced.more is not allowed for tenant "globex"`} with input as inp
}

test_default_allow_list_from_data if {
	safety.deny == {`topic job.echo is not allowed for tenant "acme"`} with input as job
		with data.defaults as {"allowed_topics": ["job.chat.*"]}
}

test_no_allow_list_allows_nothing if {
	safety.deny == {`topic job.echo is not allowed for tenant "acme"`} with input as job
		with data.defaults as {"max_payload_bytes": 10}
		with data.tenants as {}
}

# ------------------------------------------------------------------ payload caps

test_payload_at_cap_allowed if {
	count(safety.deny) == 0 with input as object.union(job, {"payload_size": 1048576})
}

test_payload_over_cap_denied if {
	want := {"payload of 1048577 bytes is over the 1048576-byte cap for topic job.echo"}
	safety.deny == want with input as object.union(job, {"payload_size": 1048577})
}

test_topic_cap_wins_over_default if {
	count(safety.deny) == 0 with input as object.union(job, {"topic": "job.repo.scan", "payload_size": 268435456})
	want := {"payload of 268435457 bytes is over the 268435456-byte cap for topic job.repo.scan"}
	safety.deny == want with input as object.union(job, {"topic": "job.repo.scan", "payload_size": 268435457})
}

test_topic_caps_are_exact_topics if {
	count(safety.deny) == 1 with input as object.union(job, {"topic": "job.repo.scan.x", "payload_size": 2000000})
}

test_tenant_cap if {
	want := {"payload of 65537 bytes is over the 65536-byte cap for topic job.echo"}
	safety.deny == want with input as object.union(job, {"tenant_id": "globex", "payload_size": 65537})
}

test_no_cap_configured if {
	count(safety.deny) == 0 with input as object.union(job, {"payload_size": 9223372036854775807})
		with data.defaults as {"allowed_topics": ["job.**"], "topic_max_payload_bytes": {}}
}

test_every_deny_reported if {
	safety.deny == {
		`topic "other." is malformed: want dot-separated tokens, such as job.echo`,
		"tenant_id is required",
		"payload of 2000000 bytes is over the 1048576-byte cap for topic other.",
	} with input as object.union(job, {"topic": "other.", "tenant_id": "", "payload_size": 2000000})
}

# ------------------------------------------------------------------ tenant limits

test_tenant_limits_from_data if {
	want := {"max_concurrent_jobs": 4, "max_retries": 2, "deadline_ms": 60000}
	safety.constraints == want with input as object.union(job, {"tenant_id": "globex"})
}

test_default_limits if {
	safety.constraints == {"max_retries": 3, "deadline_ms": 5000} with input as job
		with data.defaults.constraints as {"max_retries": 3, "deadline_ms": 5000}
}

test_tenant_limits_replace_defaults if {
	safety.constraints == {"max_retries": 1} with input as job
		with data.defaults.constraints as {"max_retries": 3, "deadline_ms": 5000}
		with data.tenants.acme as {"constraints": {"max_retries": 1}}
}

test_other_tenant_limits_not_applied if {
	safety.constraints == {} with input as job
		with data.tenants as {"globex": {"constraints": {"max_retries": 1}}}
}

test_grants_are_not_a_tenant_limit if {
	safety.constraints == {"max_retries": 1} with input as job
		with data.tenants.acme as {"constraints": {"max_retries": 1, "grants": {"http_hosts": ["evil.example"]}}}
}

# ------------------------------------------------------------------ grants: HTTP hosts

test_chat_advanced_granted_the_ollama_service_not_hosts if {
	inp := with_module("chat-advanced", {
		"services": ["ollama", "postgres"],
		"http_hosts": ["localhost:11434", "evil.example:443"],
	})
	safety.constraints == {"grants": {"services": ["ollama"]}} with input as inp
}

test_code_llm_granted_the_ollama_service if {
	inp := with_module("code-llm", {"services": ["ollama"]})
	safety.constraints == {"grants": {"services": ["ollama"]}} with input as inp
}

test_http_hosts_still_granted_by_data if {
	inp := with_module("chat-advanced", {"http_hosts": ["localhost:11434", "evil.example:443"]})
	safety.constraints == {"grants": {"http_hosts": ["localhost:11434"]}} with input as inp
		with data.modules as {"chat-advanced": {"http_hosts": ["localhost:11434"]}}
}

test_nothing_asked_nothing_granted if {
	safety.constraints == {} with input as with_module("chat-advanced", {})
}

test_unlisted_module_granted_no_host if {
	safety.constraints == {} with input as with_module("echo", {"http_hosts": ["localhost:11434"]})
}

# ------------------------------------------------------------------ grants: mounts

test_repo_module_granted_dirs_under_root if {
	inp := with_module("repo-lint", {"read_only_dirs": [
		"/srv/ward/repos/acme/web", "/srv/ward/repos",
		"/etc", "/srv/ward/repos-evil",
	]})
	safety.constraints == {"grants": {"read_only_dirs": ["/srv/ward/repos", "/srv/ward/repos/acme/web"]}} with input as inp
}

test_repo_module_dirs_must_be_clean if {
	inp := with_module("repo-scan", {"read_only_dirs": [
		"/srv/ward/repos/../../etc",
		"/srv/ward/repos/./x",
		"/srv/ward/repos//x",
		"/srv/ward/repos/x/",
		"srv/ward/repos/x",
	]})
	safety.constraints == {} with input as inp
}

test_other_modules_granted_no_mount if {
	safety.constraints == {} with input as with_module("chat-advanced", {"read_only_dirs": ["/srv/ward/repos/x"]})
}

test_repo_module_granted_no_host if {
	safety.constraints == {} with input as with_module("repo-lint", {"http_hosts": ["localhost:11434"]})
}

test_module_entries_name_modules_exactly if {
	inp := with_module("repo-lint", {"http_hosts": ["a.example"]})
	safety.constraints == {} with input as inp
		with data.modules as {"repo-*": {"http_hosts": ["a.example"]}}
}

# ------------------------------------------------------------------ grants: environment, memory, time

test_env_keys_granted_from_module_entry if {
	inp := with_module("echo", {"env_keys": ["TZ", "SECRET"]})
	safety.constraints == {"grants": {"env_keys": ["TZ"]}} with input as inp
		with data.modules as {"echo": {"env_keys": ["TZ", "LANG"]}}
}

test_memory_and_time_asked_within_cap if {
	inp := with_module("chat-advanced", {"memory_limit_bytes": 1048576, "time_limit_ms": 1000})
	safety.constraints == {"grants": {"memory_limit_bytes": 1048576, "time_limit_ms": 1000}} with input as inp
}

test_memory_and_time_cut_to_default_cap if {
	inp := with_module("repo-lint", {"memory_limit_bytes": 4294967296, "time_limit_ms": 86400000})
	safety.constraints == {"grants": {"memory_limit_bytes": 536870912, "time_limit_ms": 600000}} with input as inp
}

test_memory_cut_to_module_cap if {
	inp := with_module("echo", {"memory_limit_bytes": 4294967296})
	safety.constraints == {"grants": {"memory_limit_bytes": 1024}} with input as inp
		with data.modules as {"echo": {"max_memory_bytes": 1024}}
}

test_module_cap_that_is_not_a_positive_number_falls_back_to_the_default if {
	inp := with_module("echo", {"memory_limit_bytes": 4294967296, "time_limit_ms": 86400000})
	safety.constraints == {"grants": {"memory_limit_bytes": 536870912, "time_limit_ms": 600000}} with input as inp
		with data.modules as {"echo": {"max_memory_bytes": 0, "max_time_ms": "1000"}}
}

test_mistyped_signature_setting_requires_signatures if {
	tenants := object.union(data.tenants, {"acme": {"require_signed_modules": "no"}})
	count(safety.deny) == 1 with input as job with data.tenants as tenants
	count(safety.deny) == 0 with input as signed_job with data.tenants as tenants
}

test_memory_uncapped_without_caps if {
	inp := with_module("chat-advanced", {"memory_limit_bytes": 4294967296})
	safety.constraints == {"grants": {"memory_limit_bytes": 4294967296}} with input as inp
		with data.defaults as {"allowed_topics": ["job.**"], "constraints": {}}
}

test_unlisted_module_granted_no_memory if {
	safety.constraints == {} with input as with_module("echo", {"memory_limit_bytes": 1048576, "time_limit_ms": 1000})
}

# ------------------------------------------------------------------ together

test_denied_job_gets_constraints_too_but_deny_wins if {
	inp := object.union(job, {"tenant_id": "globex", "topic": "job.repo.lint"})
	count(safety.deny) == 1 with input as inp
	limits := safety.constraints with input as inp
	limits.max_retries == 2
}

# ------------------------------------------------------------------ manifests with "*", or none

test_star_host_gets_the_module_hosts if {
	inp := with_module("chat-advanced", {
		"http_hosts": ["*"], "services": ["*"],
		"env_keys": ["OLLAMA_URL", "OLLAMA_MODEL", "HOME"],
	})
	safety.constraints == {"grants": {
		"services": ["ollama"],
		"env_keys": ["OLLAMA_MODEL"],
	}} with input as inp
}

test_star_host_gets_every_listed_host if {
	inp := with_module("chat-advanced", {"http_hosts": ["*"]})
	safety.constraints == {"grants": {"http_hosts": ["a.example", "b.example:8080"]}} with input as inp
		with data.modules as {"chat-advanced": {"http_hosts": ["a.example", "b.example:8080"]}}
}

test_star_domain_host if {
	inp := with_module("chat-advanced", {"http_hosts": ["*.acme.io"]})
	safety.constraints == {"grants": {"http_hosts": ["api.acme.io"]}} with input as inp
		with data.modules as {"chat-advanced": {"http_hosts": ["api.acme.io", "acme.io.evil.example"]}}
}

test_star_dir_gets_the_roots if {
	inp := with_module("repo-sast", {"read_only_dirs": ["*"]})
	safety.constraints == {"grants": {"read_only_dirs": ["/srv/ward/repos"]}} with input as inp
}

test_unclean_root_never_granted if {
	inp := with_module("repo-sast", {"read_only_dirs": ["*", "/srv/x/y"]})
	safety.constraints == {} with input as inp
		with data.modules as {"repo-sast": {"read_only_roots": ["/srv/../etc", "relative", "/srv/x/../"]}}
}

test_unknown_manifest_asks_for_everything_allowed if {
	inp := object.union(job, {"module": {"name": "chat-advanced", "digest": "", "requested": null}})
	safety.constraints == {"grants": {
		"services": ["ollama"],
		"env_keys": ["OLLAMA_MODEL"],
	}} with input as inp
}

test_unknown_manifest_of_unlisted_module_gets_nothing if {
	inp := object.union(job, {"module": {"name": "echo", "digest": "", "requested": null}})
	safety.constraints == {} with input as inp
}

# ------------------------------------------------------------------ signatures

signed_job := object.union(job, {"module": {
	"name": "echo", "digest": "sha256:ab", "signed": true,
	"requested": requested_nothing,
}})

test_unsigned_modules_run_by_default if {
	count(safety.deny) == 0 with input as job
}

test_tenant_requiring_signatures_denies_unsigned if {
	tenants := object.union(data.tenants, {"acme": {"require_signed_modules": true}})
	safety.deny == {`module echo is not signed, and tenant "acme" runs only signed modules`} with input as job
		with data.tenants as tenants
	count(safety.deny) == 0 with input as signed_job with data.tenants as tenants
}

test_default_requiring_signatures_denies_every_tenant if {
	defaults := object.union(data.defaults, {"require_signed_modules": true})
	count(safety.deny) == 1 with input as job with data.defaults as defaults
	count(safety.deny) == 0 with input as signed_job with data.defaults as defaults

	# A tenant may opt out.
	tenants := object.union(data.tenants, {"acme": {"require_signed_modules": false}})
	count(safety.deny) == 0 with input as job with data.defaults as defaults with data.tenants as tenants
}

test_signed_pools_deny_unsigned if {
	defaults := object.union(data.defaults, {"signed_pools": ["echo"]})
	safety.deny == {"module echo is not signed, and pool echo runs only signed modules"} with input as job
		with data.defaults as defaults
	count(safety.deny) == 0 with input as signed_job with data.defaults as defaults
	count(safety.deny) == 0 with input as object.union(job, {"pool": "chat-simple"}) with data.defaults as defaults
}

# ------------------------------------------------------------ workflow runs

run(tenant, topics) := object.union(job, {
	"topic": "job.workflow.w",
	"tenant_id": tenant,
	"workflow": {"name": "w", "steps": [
	{"id": sprintf("s%d", [i]), "topic": t, "depends_on": [], "for_each": false} |
		some i, t in topics
	]},
})

test_run_of_allowed_steps_allowed if {
	count(safety.deny) == 0 with input as run("globex", ["job.echo", "job.chat.simple"])
}

test_run_with_a_step_outside_the_allow_list_denied if {
	want := {`step s1: topic job.code.llm is not allowed for tenant "globex"`}
	safety.deny == want with input as run("globex", ["job.echo", "job.code.llm"])
}

test_run_with_a_forbidden_step_denied if {
	safety.deny == {"step s0: topic sys.destroy is forbidden"} with input as run("acme", ["sys.destroy"])
}

test_run_topic_not_checked_against_the_allow_list if {
	# globex's allow-list has no job.workflow.*: the run is judged by its steps.
	count(safety.deny) == 0 with input as run("globex", ["job.echo"])
}

test_job_check_has_no_workflow if {
	count(safety.deny) == 0 with input as object.union(job, {"workflow": null})
}
