{{- define "keep.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "keep.operatorName" -}}
{{- printf "%s-operator" (include "keep.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "keep.labels" -}}
app.kubernetes.io/name: keep-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "keep.selectorLabels" -}}
app.kubernetes.io/name: keep-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "keep.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "keep.operatorName" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}
