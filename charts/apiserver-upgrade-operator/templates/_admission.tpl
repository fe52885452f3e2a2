{{- /*
  Helpers of the ValidatingAdmissionPolicy (admission-policy.yaml): the policy's lists (values.policy) turned into
  CEL list literals, each string as a JSON string literal (valid CEL: Go's JSON escapes are CEL escapes too), with
  image names normalised the way the operator's policy reads them (src/plan/policy.ts: `busybox` is
  docker.io/library/busybox, the registry host lower case, index.docker.io is docker.io).
*/}}

{{/* A repository name (no tag, no digest) normalised as Docker does. */}}
{{- define "auo.admission.repo" -}}
{{- $parts := splitList "/" . -}}
{{- $first := first $parts -}}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost") (ne $first (lower $first))) -}}
{{- $domain := lower $first -}}
{{- if eq $domain "index.docker.io" }}{{ $domain = "docker.io" }}{{ end -}}
{{- $path := rest $parts -}}
{{- if and (eq $domain "docker.io") (eq (len $path) 1) }}{{ $path = prepend $path "library" }}{{ end -}}
{{- printf "%s/%s" $domain (join "/" $path) -}}
{{- else if eq (len $parts) 1 -}}
{{- printf "docker.io/library/%s" . -}}
{{- else -}}
{{- printf "docker.io/%s" . -}}
{{- end -}}
{{- end -}}

{{/* A repositoryPrefix: its registry host is explicit; lower case, index.docker.io is docker.io, no trailing slash. */}}
{{- define "auo.admission.prefix" -}}
{{- $parts := splitList "/" (trimSuffix "/" .) -}}
{{- $domain := lower (first $parts) -}}
{{- if eq $domain "index.docker.io" }}{{ $domain = "docker.io" }}{{ end -}}
{{- join "/" (prepend (rest $parts) $domain) -}}
{{- end -}}

{{/* Image rules ({image}, {repository}, {repositoryPrefix}) as a CEL list of {kind, repo, tag, digest}. */}}
{{- define "auo.admission.imageRules" -}}
{{- $out := list -}}
{{- range $r := . -}}
{{- if $r.image -}}
{{- $digest := "" -}}{{- $name := $r.image -}}
{{- if contains "@" $name }}{{ $digest = regexReplaceAll "^[^@]*@" $name "" }}{{ $name = regexReplaceAll "@.*$" $name "" }}{{ end -}}
{{- $tag := "" -}}
{{- if regexMatch ":[^/]*$" $name }}{{ $tag = regexReplaceAll "^.*:" $name "" }}{{ $name = regexReplaceAll ":[^/]*$" $name "" }}{{ end -}}
{{- $out = append $out (dict "kind" "image" "repo" (include "auo.admission.repo" $name) "tag" $tag "digest" $digest) -}}
{{- else if $r.repository -}}
{{- $out = append $out (dict "kind" "repository" "repo" (include "auo.admission.repo" $r.repository) "tag" "" "digest" "") -}}
{{- else if $r.repositoryPrefix -}}
{{- $out = append $out (dict "kind" "repositoryPrefix" "repo" (include "auo.admission.prefix" $r.repositoryPrefix) "tag" "" "digest" "") -}}
{{- end -}}
{{- end -}}
{{- $out | toJson -}}
{{- end -}}

{{/* Path rules ({path}, {prefix}) as a CEL list of {kind, path}. */}}
{{- define "auo.admission.pathRules" -}}
{{- $out := list -}}
{{- range $r := . -}}
{{- if $r.path }}{{ $out = append $out (dict "kind" "path" "path" $r.path) }}{{ else if $r.prefix }}{{ $out = append $out (dict "kind" "prefix" "path" $r.prefix) }}{{ end -}}
{{- end -}}
{{- $out | toJson -}}
{{- end -}}

{{/*
  The variables that take one image reference apart, named <name>Image, <name>Digest, <name>Tag, <name>Repo. Call
  with (list "<name>" "<CEL expression of the image>"). The reference must first match the `wellFormed` pattern
  (a validation says so); the repository is normalised as auo.admission.repo does.
*/}}
{{- define "auo.admission.imageVariables" -}}
{{- $n := index . 0 -}}
- name: {{ $n }}Image
  expression: {{ index . 1 | toJson }}
- name: {{ $n }}NoDigest
  expression: {{ printf "variables.%sImage.split('@')[0]" $n | toJson }}
- name: {{ $n }}Digest
  expression: {{ printf "variables.%sImage.contains('@') ? variables.%sImage.split('@')[1] : ''" $n $n | toJson }}
- name: {{ $n }}Tag
  expression: {{ printf "variables.%sNoDigest.lastIndexOf(':') > variables.%sNoDigest.lastIndexOf('/') ? variables.%sNoDigest.substring(variables.%sNoDigest.lastIndexOf(':') + 1) : ''" $n $n $n $n | toJson }}
- name: {{ $n }}Name
  expression: {{ printf "variables.%sTag == '' ? variables.%sNoDigest : variables.%sNoDigest.substring(0, variables.%sNoDigest.lastIndexOf(':'))" $n $n $n $n | toJson }}
- name: {{ $n }}First
  expression: {{ printf "variables.%sName.split('/')[0]" $n | toJson }}
- name: {{ $n }}HasDomain
  expression: {{ printf "variables.%sName.contains('/') && (variables.%sFirst.contains('.') || variables.%sFirst.contains(':') || variables.%sFirst == 'localhost' || variables.%sFirst != variables.%sFirst.lowerAscii())" $n $n $n $n $n $n | toJson }}
- name: {{ $n }}Domain
  expression: {{ printf "!variables.%sHasDomain || variables.%sFirst.lowerAscii() == 'index.docker.io' ? 'docker.io' : variables.%sFirst.lowerAscii()" $n $n $n | toJson }}
- name: {{ $n }}Path
  expression: {{ printf "variables.%sHasDomain ? variables.%sName.substring(variables.%sFirst.size() + 1) : variables.%sName" $n $n $n $n | toJson }}
- name: {{ $n }}Repo
  expression: {{ printf "variables.%sDomain + '/' + (variables.%sDomain == 'docker.io' && !variables.%sPath.contains('/') ? 'library/' : '') + variables.%sPath" $n $n $n $n | toJson }}
{{- end -}}
