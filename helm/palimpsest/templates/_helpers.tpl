{{/* Names, labels and the pieces every workload shares. */}}

{{- define "palimpsest.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "palimpsest.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* A component's resource name: (dict "root" $ "component" "chunker") */}}
{{- define "palimpsest.componentName" -}}
{{- printf "%s-%s" (include "palimpsest.fullname" .root | trunc 45 | trimSuffix "-") .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "palimpsest.selectorLabels" -}}
app.kubernetes.io/name: {{ include "palimpsest.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* (dict "root" $ "component" "chunker") */}}
{{- define "palimpsest.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "palimpsest.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: palimpsest
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "palimpsest.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "palimpsest.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image of a component: (dict "root" $ "component" "chunker" "override" $svc.image) */}}
{{- define "palimpsest.image" -}}
{{- $repository := default (printf "%s-%s" .root.Values.image.repository .component) .override.repository }}
{{- if .override.digest }}
{{- printf "%s@%s" $repository .override.digest }}
{{- else }}
{{- printf "%s:%s" $repository (default (default .root.Chart.AppVersion .root.Values.image.tag) .override.tag) }}
{{- end }}
{{- end }}

{{/* The Python module a service runs: recency-scanner -> palimpsest.recency_scanner */}}
{{- define "palimpsest.module" -}}
{{- printf "palimpsest.%s" (replace "-" "_" .) }}
{{- end }}

{{/* Whether a service's replica count is owned by an autoscaler: (dict "root" $ "component" name) */}}
{{- define "palimpsest.autoscaled" -}}
{{- if .root.Values.autoscaling.enabled }}true{{ end }}
{{- end }}

{{/* Whether a service is scaled by a KEDA ScaledObject (consumers only): (dict "root" $ "component" name) */}}
{{- define "palimpsest.keda" -}}
{{- if and .root.Values.autoscaling.enabled .root.Values.autoscaling.keda.enabled (ne .component "ingest") }}true{{ end }}
{{- end }}

{{/* Whether a secret reference applies to a service: (dict "ref" $ref "component" name) */}}
{{- define "palimpsest.secretApplies" -}}
{{- if and .ref.secretName (or (empty .ref.services) (has .component .ref.services)) }}true{{ end }}
{{- end }}

{{/*
The projected-volume sources of the secrets a component reads:
(dict "root" $ "component" "chunker" "migrations" false)
*/}}
{{- define "palimpsest.secretSources" -}}
{{- $s := .root.Values.secrets }}
{{- $refs := list (dict "ref" $s.databaseUrl "file" "palimpsest_database_url") }}
{{- if .migrations }}
{{- $refs = append $refs (dict "ref" $s.migrationDatabaseUrl "file" "palimpsest_migration_database_url") }}
{{- else }}
{{- $refs = append $refs (dict "ref" $s.encryptionKey "file" "palimpsest_encryption_key") }}
{{- if $s.databaseDirectUrl.secretName }}
{{- $refs = append $refs (dict "ref" $s.databaseDirectUrl "file" "palimpsest_database_direct_url") }}
{{- end }}
{{- $llm := $s.llmApiKey }}
{{- if include "palimpsest.secretApplies" (dict "ref" $llm "component" .component) }}
{{- $refs = append $refs (dict "ref" $llm "file" "palimpsest_llm_api_key") }}
{{- end }}
{{- range $s.extra }}
{{- if include "palimpsest.secretApplies" (dict "ref" . "component" $.component) }}
{{- $refs = append $refs (dict "ref" . "file" (printf "palimpsest_%s" (lower .setting))) }}
{{- end }}
{{- end }}
{{- end }}
{{- if $s.natsCreds.secretName }}
{{- $refs = append $refs (dict "ref" $s.natsCreds "file" "nats.creds") }}
{{- end }}
{{- range $refs }}
- secret:
    name: {{ required (printf "a secretName is required for %s" .file) .ref.secretName }}
    items:
      - key: {{ .ref.key }}
        path: {{ .file }}
{{- end }}
{{- end }}

{{/* Environment of a component: (dict "root" $ "component" "chunker" "extra" $svc.env) */}}
{{- define "palimpsest.env" -}}
{{- $v := .root.Values -}}
- name: PALIMPSEST_NATS_URL
  value: {{ $v.config.natsUrl | quote }}
- name: PALIMPSEST_STREAM_REPLICAS
  value: {{ $v.config.streamReplicas | quote }}
{{- if $v.secrets.natsCreds.secretName }}
- name: PALIMPSEST_NATS_CREDS_FILE
  value: {{ printf "%s/nats.creds" (include "palimpsest.secretsDir" .root) | quote }}
{{- end }}
- name: PALIMPSEST_LOG_LEVEL
  value: {{ $v.config.logLevel | quote }}
- name: PALIMPSEST_OPS_PORT
  value: {{ $v.config.opsPort | quote }}
- name: PALIMPSEST_HOME
  value: /tmp/palimpsest
{{- if eq .component "ingest" }}
- name: PALIMPSEST_INGEST_HOST
  value: "0.0.0.0"
- name: PALIMPSEST_INGEST_PORT
  value: {{ $v.ingest.port | quote }}
{{- end }}
{{- if $v.config.otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ $v.config.otlpEndpoint | quote }}
{{- end }}
- name: OTEL_SERVICE_NAME
  value: {{ printf "palimpsest-%s" .component | quote }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ printf "service.namespace=%s,k8s.namespace.name=%s" (include "palimpsest.fullname" .root) .root.Release.Namespace | quote }}
{{- range $name, $value := merge (dict) .extra $v.config.env }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}

{{/* The volumes every pod mounts: (dict "root" $ "component" name "sizeLimit" "1Gi" "migrations" false) */}}
{{- define "palimpsest.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .sizeLimit }}
- name: secrets
  projected:
    defaultMode: 0440
    sources:
      {{- include "palimpsest.secretSources" . | trim | nindent 6 }}
{{- end }}

{{/* Where pydantic-settings reads secret files (its secrets_dir); fixed by the code. */}}
{{- define "palimpsest.secretsDir" -}}
/var/run/secrets/palimpsest
{{- end }}

{{- define "palimpsest.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: secrets
  mountPath: {{ include "palimpsest.secretsDir" . }}
  readOnly: true
{{- end }}
