{{/* Names and labels. */}}
{{- define "toolgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "toolgate.fullname" -}}
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

{{- define "toolgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "toolgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "toolgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "toolgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "toolgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "toolgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The image's user and paths (deploy/Containerfile: USER, WORKDIR, the config
path of its CMD); a test keeps the two in step.
*/}}
{{- define "toolgate.uid" -}}65532{{- end }}
{{- define "toolgate.binary" -}}/usr/local/bin/toolgate{{- end }}
{{- define "toolgate.configDir" -}}/etc/toolgate{{- end }}
{{- define "toolgate.stateDir" -}}/var/lib/toolgate{{- end }}

{{/*
toolgate's own shutdown after SIGTERM: 10 s for calls in flight, then at most
10 s for sessions, upstreams and the store (cmd/toolgate/serve.go).
*/}}
{{- define "toolgate.shutdownSeconds" -}}20{{- end }}

{{/* Refusals: values that cannot make a working deployment. */}}
{{- define "toolgate.validate" -}}
{{- $v := .Values }}
{{- if eq $v.store.type "sqlite" }}
{{- if gt (int $v.replicaCount) 1 }}
{{- fail (printf "store.type sqlite serves one pod only, and replicaCount is %d: use store.type postgres for replicas" (int $v.replicaCount)) }}
{{- end }}
{{- if $v.autoscaling.enabled }}
{{- fail "store.type sqlite serves one pod only: autoscaling.enabled needs store.type postgres" }}
{{- end }}
{{- else if eq $v.store.type "postgres" }}
{{- if not $v.store.postgres.existingSecret }}
{{- fail "store.postgres.existingSecret is required: the Secret holding the PostgreSQL connection URL" }}
{{- end }}
{{- else }}
{{- fail (printf "store.type %q: use postgres or sqlite" $v.store.type) }}
{{- end }}
{{- if not $v.confirmSecret.existingSecret }}
{{- fail "confirmSecret.existingSecret is required: the Secret holding gateway.confirm.secret, shared by every replica" }}
{{- end }}
{{- $min := add (int $v.preStopSleepSeconds) (int (include "toolgate.shutdownSeconds" .)) }}
{{- if lt (int $v.terminationGracePeriodSeconds) (int $min) }}
{{- fail (printf "terminationGracePeriodSeconds %d is shorter than preStopSleepSeconds plus toolgate's 20 s shutdown (%d): calls in flight would be killed" (int $v.terminationGracePeriodSeconds) (int $min)) }}
{{- end }}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas is larger than autoscaling.maxReplicas" }}
{{- end }}
{{- $gw := (default dict $v.config.gateway) }}
{{- range $k := list "listen" "store" "credentialsKey" "admin" }}
{{- if hasKey $gw $k }}
{{- fail (printf "config.gateway.%s is set by the chart: remove it (see port, store, credentialsKey and admin in values.yaml)" $k) }}
{{- end }}
{{- end }}
{{- if and (hasKey $gw "confirm") (hasKey (default dict $gw.confirm) "secret") }}
{{- fail "config.gateway.confirm.secret is set by the chart from confirmSecret: remove it" }}
{{- end }}
{{- range $e, $ep := (default list $v.config.endpoints) }}
{{- range $i, $k := (dig "auth" "apiKeys" list $ep) }}
{{- if hasKey $k "key" }}
{{- fail (printf "config.endpoints[%d].auth.apiKeys[%d].key: keep API keys in a Secret and give existingSecret and key (the Secret's key) instead" $e $i) }}
{{- end }}
{{- if not (and $k.existingSecret $k.secretKey) }}
{{- fail (printf "config.endpoints[%d].auth.apiKeys[%d]: existingSecret and secretKey are required" $e $i) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $i, $k := $v.admin.keys }}
{{- if not (and $k.operator $k.existingSecret $k.key) }}
{{- fail (printf "admin.keys[%d]: operator, existingSecret and key are required" $i) }}
{{- end }}
{{- end }}
{{- if and $v.admin.enabled (not $v.admin.keys) }}
{{- fail "admin.enabled needs at least one entry in admin.keys" }}
{{- end }}
{{- end }}

{{/*
The environment variable carrying endpoint e's API key i into the config's
${VAR}.
*/}}
{{- define "toolgate.apiKeyEnv" -}}
{{- printf "TOOLGATE_API_KEY_%d_%d" .e .i }}
{{- end }}

{{/*
toolgate.yaml: config from the values, with what the chart sets. Secrets appear
only as ${VAR}s the container's environment fills from Secrets.
*/}}
{{- define "toolgate.config" -}}
{{- $v := .Values }}
{{- $cfg := deepCopy (default dict $v.config) }}
{{- $gw := deepCopy (default dict $cfg.gateway) }}
{{- $_ := set $gw "listen" (printf "0.0.0.0:%d" (int $v.port)) }}
{{- $_ = set $gw "store" "${TOOLGATE_GATEWAY_STORE}" }}
{{- $confirm := deepCopy (default dict $gw.confirm) }}
{{- $_ = set $confirm "secret" "${TOOLGATE_CONFIRM_SECRET}" }}
{{- $_ = set $gw "confirm" $confirm }}
{{- if $v.credentialsKey.existingSecret }}
{{- $_ = set $gw "credentialsKey" "${TOOLGATE_CREDENTIALS_KEY}" }}
{{- end }}
{{- if $v.admin.enabled }}
{{- $keys := list }}
{{- range $i, $k := $v.admin.keys }}
{{- $keys = append $keys (dict "key" (printf "${TOOLGATE_ADMIN_KEY_%d}" $i) "operator" $k.operator) }}
{{- end }}
{{- $_ = set $gw "admin" (dict "listen" (printf "127.0.0.1:%d" (int $v.admin.port)) "keys" $keys) }}
{{- end }}
{{- $_ = set $cfg "gateway" $gw }}
{{- $eps := list }}
{{- range $e, $ep := (default list $cfg.endpoints) }}
{{- $ep = deepCopy $ep }}
{{- if and (hasKey $ep "auth") (hasKey (default dict $ep.auth) "apiKeys") }}
{{- $keys := list }}
{{- range $i, $k := $ep.auth.apiKeys }}
{{- $k = omit $k "existingSecret" "secretKey" }}
{{- $_ = set $k "key" (printf "${%s}" (include "toolgate.apiKeyEnv" (dict "e" $e "i" $i))) }}
{{- $keys = append $keys $k }}
{{- end }}
{{- if $keys }}
{{- $_ = set $ep.auth "apiKeys" $keys }}
{{- else }}
{{- $_ = unset $ep.auth "apiKeys" }}
{{- end }}
{{- if not $ep.auth }}
{{- $_ = unset $ep "auth" }}
{{- end }}
{{- end }}
{{- $eps = append $eps $ep }}
{{- end }}
{{- if $eps }}
{{- $_ = set $cfg "endpoints" $eps }}
{{- else }}
{{- $_ = unset $cfg "endpoints" }}
{{- end }}
{{- if not $cfg.upstreams }}
{{- $_ = unset $cfg "upstreams" }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}
