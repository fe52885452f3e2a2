{{/* Name of the chart, overridable. */}}
{{- define "auo.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name of the release's objects. */}}
{{- define "auo.fullname" -}}
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

{{- define "auo.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "auo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "auo.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "auo.labels" -}}
helm.sh/chart: {{ include "auo.chart" . }}
{{ include "auo.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "auo.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "auo.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "auo.leaderElectionNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace -}}
{{- end -}}

{{- define "auo.metricsServiceName" -}}
{{- printf "%s-metrics" (include "auo.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Matchers for the operator's own series in alert expressions. */}}
{{- define "auo.operatorSelector" -}}
{{- if .Values.prometheusRule.operatorSelector -}}
{{- .Values.prometheusRule.operatorSelector -}}
{{- else -}}
{{- printf "job=%q, namespace=%q" (include "auo.metricsServiceName" .) .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* The subject every binding names. */}}
{{- define "auo.subject" -}}
- kind: ServiceAccount
  name: {{ include "auo.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/* http, or https when /metrics has a serving certificate. */}}
{{- define "auo.metricsScheme" -}}
{{- if or .Values.metrics.tls.secretName .Values.metrics.secure -}}https{{- else -}}http{{- end -}}
{{- end -}}

{{/* An alert's runbook_url annotation: prometheusRule.runbookUrl and the alert's section in docs/operations.md (its name, lowercased, is its anchor); nothing when runbookUrl is empty (a chart not from a release: no link to a page nobody published). Call with (list $ "AlertName"). */}}
{{- define "auo.runbookUrl" -}}
{{- $alert := index . 1 -}}
{{- with (index . 0).Values.prometheusRule.runbookUrl -}}
runbook_url: {{ printf "%s#%s" (trimSuffix "/" .) (lower $alert) | quote }}
{{- end -}}
{{- end -}}

{{/* prometheusRule.aggregationLabels joined for a PromQL label list: "cluster" (then `by (cluster)`), or "" (`by ()`). */}}
{{- define "auo.aggregation" -}}
{{- join ", " .Values.prometheusRule.aggregationLabels -}}
{{- end -}}

{{- define "auo.policyConfigMapName" -}}
{{- printf "%s-policy" (include "auo.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
