# Package ward.safety is Ward's default safety policy. Copy this folder,
# edit it, run `ward policy test <dir>`, and ship it with `ward policy push
# <dir>`: every safety kernel swaps to it without a restart.
#
# The safety kernel evaluates it for every job before the scheduler places
# it. The input is the CheckRequest (api/ward/safety/v1) with proto field
# names, every field present (zero values included):
#
#   {"job_id": "...", "topic": "job.echo", "tenant_id": "acme",
#    "labels": {}, "requires": [], "priority": 0, "payload_size": 0,
#    "module": {"name": "echo", "digest": "", "signed": false,
#               "requested": {"http_hosts": [], "read_only_dirs": [],
#                             "env_keys": [], "memory_limit_bytes": 0,
#                             "time_limit_ms": 0}},
#    "pool": "echo", "workflow": null}
#
# workflow is set when the check is a workflow run's, made once when the
# run is submitted, before any of it starts: {"name": "...", "steps":
# [{"id", "topic", "depends_on", "for_each"}, ...]} (input.topic is then
# job.workflow.<name>). Each step is checked again as an ordinary job when
# it becomes ready; its labels say which run and task it is (ward.run,
# ward.task).
#
# module.requested is what the module's manifest asks for (null when the
# caller does not know the manifest); the policy grants a subset of it, and
# the host enforces what was granted and nothing more.
#
# Two rules make the decision:
#   deny         a set of messages; any message denies the job.
#   constraints  the limits an allowed job runs under: max_concurrent_jobs,
#                max_retries, deadline_ms and grants (http_hosts,
#                read_only_dirs, env_keys, memory_limit_bytes,
#                time_limit_ms). The kernel refuses any other key. A
#                non-empty object turns ALLOW into ALLOW_WITH_CONSTRAINTS.
#
# The settings (tenants' topic allow-lists, payload caps, limits, and what
# each module may be granted) are data, in data.yaml beside this file: a
# tenant's own entry wins, key by key, over the defaults.
#
# The kernel decides thousands of jobs a second with this policy, and it
# caches decisions keyed on the input fields the rules read (here topic,
# tenant_id, payload_size, module, pool and workflow — null for every job). Rules that compare input to
# constants (input.topic == "...") cost nothing for jobs they do not match:
# OPA indexes them.
# METADATA
# description: Ward's default safety policy; the kernel queries deny and constraints.
# entrypoint: true
package ward.safety

# ------------------------------------------------------------------ deny rules

# Forbidden topics may never run, whoever asks. Add a line per topic.
deny contains "topic sys.destroy is forbidden" if input.topic == "sys.destroy"

deny contains "tenant_id is required" if trim_space(input.tenant_id) == ""

# A tenant runs only the topics its allow-list matches: its own
# allowed_topics, else the default one (job.**). Entries are globs over the
# topic's dot-separated tokens: * matches one token, ** any number.
deny contains topic_denial if {
	not is_run
	not topic_allowed
	not input.topic == "sys.destroy"
}

# A workflow run is checked as a whole: it is denied when one of its steps
# would be (a forbidden topic, one outside the tenant's allow-list), so
# that nothing of it runs. Its own topic (job.workflow.<name>, is_run) is
# not checked against the allow-list.
deny contains msg if {
	some step in input.workflow.steps
	step.topic == "sys.destroy"
	msg := sprintf("step %s: topic sys.destroy is forbidden", [step.id])
}

deny contains msg if {
	some step in input.workflow.steps
	not step.topic == "sys.destroy"
	not allowed_topic(step.topic)
	msg := sprintf("step %s: topic %s is not allowed for tenant %q", [step.id, step.topic, input.tenant_id])
}

deny contains msg if {
	input.payload_size > payload_cap
	msg := sprintf(
		"payload of %d bytes is over the %d-byte cap for topic %s",
		[input.payload_size, payload_cap, input.topic],
	)
}

# Signed modules. A tenant whose entry (or the defaults) sets
# require_signed_modules: true, and every pool in signed_pools, run only
# module versions that carry a signature (`ward module sign`, `ward module
# deploy --sign-key`). Hosts started with --trusted-key verify the
# signature itself; this rule keeps unsigned code from such tenants and
# pools before it is placed.
deny contains msg if {
	# Anything but false requires signatures: a setting mistyped ("no",
	# 0) keeps unsigned code out rather than letting it in.
	object.get(data.tenants, [input.tenant_id, "require_signed_modules"], data.defaults.require_signed_modules) != false
	not input.module.signed
	msg := sprintf("module %s is not signed, and tenant %q runs only signed modules", [input.module.name, input.tenant_id])
}

deny contains msg if {
	input.pool in data.defaults.signed_pools
	not input.module.signed
	msg := sprintf("module %s is not signed, and pool %s runs only signed modules", [input.module.name, input.pool])
}

is_run if input.workflow.steps

# topic_allowed holds for a well-formed topic (dot-separated, non-empty
# tokens, no wildcards or spaces) that the tenant's allow-list matches.
topic_allowed if allowed_topic(input.topic)

# allowed_topic holds for a well-formed topic that the tenant's allow-list
# matches.
allowed_topic(topic) if {
	regex.match(`^[^.*>\s]+(\.[^.*>\s]+)*$`, topic)
	some pattern in object.get(data.tenants, [input.tenant_id, "allowed_topics"], data.defaults.allowed_topics)
	glob.match(pattern, ["."], topic)
}

topic_denial := sprintf("topic %q is malformed: want dot-separated tokens, such as job.echo", [input.topic]) if {
	not regex.match(`^[^.*>\s]+(\.[^.*>\s]+)*$`, input.topic)
} else := sprintf("topic %s is not allowed for tenant %q", [input.topic, input.tenant_id])

# payload_cap is the tenant's own max_payload_bytes, else the topic's entry
# in the default topic_max_payload_bytes, else the default
# max_payload_bytes.
payload_cap := object.get(
	data.tenants, [input.tenant_id, "max_payload_bytes"],
	object.get(data.defaults.topic_max_payload_bytes, input.topic, data.defaults.max_payload_bytes),
)

# ------------------------------------------------------------------ constraints

# The tenant's limits: its own constraints entry, else the defaults'.
constraints[key] := value if {
	some key, value in object.get(data.tenants, [input.tenant_id, "constraints"], data.defaults.constraints)
	key != "grants"
}

# Grants only for the modules listed in data.modules.
constraints["grants"] := grants if {
	module_settings
	count(grants) > 0
}

# ------------------------------------------------------------------ grants

# module_settings is the job's module's entry in data.modules: what it may
# be granted of what its manifest asks. A module not listed is granted
# nothing: no host, no mount, no environment, the host's default memory and
# time.
module_settings := data.modules[input.module.name]

# requested is what the module's manifest asks for. A request without one
# (requested is null: the scheduler does not know the manifest) asks for
# whatever the module's entry allows, as a manifest's "*" does; the host
# still runs the module with nothing beyond the grants.
default requested := {
	"http_hosts": ["*"], "read_only_dirs": ["*"], "env_keys": ["*"], "services": ["*"],
	"memory_limit_bytes": 0, "time_limit_ms": 0,
}

requested := input.module.requested if input.module.requested != null

# Outbound HTTP: the module entry's http_hosts that the manifest asks for
# by name, by "*.domain", or all of them with "*". The default data grant no
# module a host by address: the LLM modules get the ollama service instead.
grants["http_hosts"] := sort(hosts) if {
	hosts := {h |
		some asked in requested.http_hosts
		some h in object.get(module_settings, "http_hosts", [])
		host_matches(asked, h)
	}
	count(hosts) > 0
}

host_matches("*", _)

host_matches(asked, host) if asked == host

host_matches(asked, host) if {
	startswith(asked, "*.")
	endswith(host, substring(asked, 1, -1))
}

# Read-only mounts: the requested directories under one of the module's
# read_only_roots, or the roots themselves for "*". In the default data,
# the repo-* modules may mount what lies under /srv/ward/repos, and nothing
# else.
grants["read_only_dirs"] := sort(dirs) if {
	dirs := {d | some asked in requested.read_only_dirs; some d in granted_dirs(asked)}
	count(dirs) > 0
}

granted_dirs(asked) := {root |
	some root in object.get(module_settings, "read_only_roots", [])
	clean_path(root)
} if {
	asked == "*"
} else := {asked} if {
	under_allowed_root(asked)
}

# Named services of the host (ollama): the module entry's services that the
# manifest asks for, by name or with "*". A grant names a service, never an
# address: each host resolves it to its own (ward host --ollama-url), so the
# same grant holds wherever its Ollama listens.
grants["services"] := sort(svcs) if {
	allowed := object.get(module_settings, "services", [])
	svcs := {s | some asked in object.get(requested, "services", []); some s in allowed; asked in {"*", s}}
	count(svcs) > 0
}

grants["env_keys"] := sort(keys) if {
	allowed := object.get(module_settings, "env_keys", [])
	keys := {k | some asked in requested.env_keys; some k in allowed; asked in {"*", k}}
	count(keys) > 0
}

# Memory and time: what was asked, cut to the module's cap, else to the
# default cap, else uncut. Nothing asked, nothing granted: the host's
# defaults apply.
grants["memory_limit_bytes"] := capped(requested.memory_limit_bytes, "max_memory_bytes") if {
	requested.memory_limit_bytes > 0
}

grants["time_limit_ms"] := capped(requested.time_limit_ms, "max_time_ms") if {
	requested.time_limit_ms > 0
}

capped(asked, key) := min([asked, cap]) if {
	cap := cap_of(key)
} else := asked

# cap_of(key) is the module's cap of that name, else the defaults': a
# positive number. A cap that is not one (0, a string) is passed over,
# never taken for "nothing allowed" or for "no cap"; with neither, there
# is no cap.
cap_of(key) := c if {
	c := module_settings[key]
	is_number(c)
	c > 0
} else := c if {
	c := data.defaults[key]
	is_number(c)
	c > 0
}

# under_allowed_root(dir) holds when dir is a clean absolute path (no .,
# .. or empty components) equal to or below one of the module's roots.
under_allowed_root(dir) if {
	clean_path(dir)
	some root in module_settings.read_only_roots
	clean_path(root)
	within(dir, trim_right(root, "/"))
}

clean_path(path) if {
	startswith(path, "/")
	parts := array.slice(split(path, "/"), 1, count(path))
	every part in parts {
		not part in {"", ".", ".."}
	}
}

within(path, root) if path == root

within(path, root) if startswith(path, concat("", [root, "/"]))
