{{/* The release's name for its objects. */}}
{{- define "ward.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "ward.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object; include with (dict "root" $ "component" "scheduler"). */}}
{{- define "ward.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
{{ include "ward.selectorLabels" . }}
{{- end -}}

{{- define "ward.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ward.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "ward.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The Secret of a role's credentials. */}}
{{- define "ward.authSecret" -}}
{{- index .root.Values.auth.secrets .role -}}
{{- end -}}

{{/* Environment every part reads: NATS, the log level, TLS to NATS. */}}
{{- define "ward.commonEnv" -}}
- name: NATS_URL
  value: {{ .Values.nats.url | quote }}
- name: WARD_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- if and .Values.auth.enabled .Values.nats.tls.enabled }}
- name: WARD_TLS_CA
  value: /etc/ward/auth/ca.pem
{{- if .Values.nats.tls.mutual }}
- name: WARD_TLS_CERT
  value: /etc/ward/auth/client.pem
- name: WARD_TLS_KEY
  value: /etc/ward/auth/client-key.pem
{{- end }}
{{- end }}
{{- end -}}

{{- define "ward.redisEnv" -}}
- name: REDIS_URL
{{- if .Values.redis.existingSecret }}
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.existingSecret }}
      key: {{ .Values.redis.existingSecretKey }}
{{- else }}
  value: {{ required "redis.url or redis.existingSecret is required" .Values.redis.url | quote }}
{{- end }}
{{- end -}}

{{- define "ward.configEnv" -}}
- name: POOL_CONFIG_PATH
  value: /etc/ward/config/pools.yaml
- name: TIMEOUT_CONFIG_PATH
  value: /etc/ward/config/timeouts.yaml
- name: SCHEDULER_CONFIG_PATH
  value: /etc/ward/config/scheduler.yaml
{{- end -}}

{{/* Mounts and volumes: the role's credentials (read only to the ward
group), /tmp, and with config the ConfigMap. */}}
{{- define "ward.mounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .root.Values.auth.enabled }}
- name: auth
  mountPath: /etc/ward/auth
  readOnly: true
{{- end }}
{{- if .config }}
- name: config
  mountPath: /etc/ward/config
  readOnly: true
{{- end }}
{{- end -}}

{{- define "ward.volumes" -}}
- name: tmp
  emptyDir: {}
{{- if .root.Values.auth.enabled }}
- name: auth
  secret:
    secretName: {{ include "ward.authSecret" . }}
    defaultMode: 0440
{{- end }}
{{- if .config }}
- name: config
  configMap:
    name: {{ include "ward.fullname" .root }}-config
{{- end }}
{{- end -}}

{{- define "ward.metricsProbes" -}}
readinessProbe:
  httpGet:
    path: /metrics
    port: metrics
  periodSeconds: 10
livenessProbe:
  httpGet:
    path: /metrics
    port: metrics
  periodSeconds: 20
  failureThreshold: 6
{{- end -}}
