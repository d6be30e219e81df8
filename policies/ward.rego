# Package ward.safety is Ward's default safety policy.
#
# The safety kernel evaluates it for every job before the scheduler places
# it. The input is the CheckRequest (api/ward/safety/v1) with proto field
# names, every field present (zero values included):
#
#   {"job_id": "...", "topic": "job.echo", "tenant_id": "acme",
#    "labels": {}, "requires": [], "priority": 0, "payload_size": 0,
#    "module": {"name": "", "digest": "",
#               "requested": {"http_hosts": [], "read_only_dirs": [],
#                             "env_keys": [], "memory_limit_bytes": 0,
#                             "time_limit_ms": 0}},
#    "pool": ""}
#
# deny holds a message for every rule the job breaks; any message denies it.
# constraints holds the limits an allowed job runs under; a non-empty object
# turns ALLOW into ALLOW_WITH_CONSTRAINTS.
package ward.safety

# forbidden_topics may never run, whoever asks.
forbidden_topics := {"sys.destroy"}

deny contains msg if {
	input.topic in forbidden_topics
	msg := sprintf("topic %s is forbidden", [input.topic])
}

deny contains msg if {
	not input.topic in forbidden_topics
	not job_topic
	msg := sprintf("topic %q is outside job.*", [input.topic])
}

deny contains "tenant_id is required" if {
	trim_space(input.tenant_id) == ""
}

# job_topic holds when the topic is job.<something>.
job_topic if {
	startswith(input.topic, "job.")
	count(input.topic) > count("job.")
}

# constraints are the limits put on an allowed job. Known keys:
# max_concurrent_jobs, max_retries, deadline_ms and grants (http_hosts,
# read_only_dirs, env_keys, memory_limit_bytes, time_limit_ms); the kernel
# rejects any other key.
#
# By default a tenant's constraints come from the bundle's data file, e.g.
# data.yaml:
#
#   tenants:
#     acme:
#       constraints: {max_retries: 3, grants: {http_hosts: [api.acme.io]}}
#
# Rules add keys of their own the same way, e.g.
#
#   constraints.deadline_ms := 60000 if input.priority > 5
constraints[key] := value if {
	some key, value in data.tenants[input.tenant_id].constraints
}
