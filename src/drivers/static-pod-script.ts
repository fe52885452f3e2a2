/** `${name}` for the shell: a template literal would read it as its own substitution. */
const braced = (name: string): string => '${' + name + '}';

/**
 * The node agent's script: POSIX sh with busybox applets (sed, cp, mv, cmp, wget with TLS, timeout, date), as
 * the agent image has them. It edits the kubeadm static Pod manifest the way an operator would by hand: the
 * image, the proxy feature gate and the --peer-* flags (which must go when the gate is off: startup fails
 * otherwise), and --emulated-version: every existing one is removed (`--emulated-version=X`, quoted or not,
 * or the flag and its value as two entries), then `--emulated-version=$EMULATED_VERSION` is added after the
 * command name when that is set. So running it twice gives the same manifest, and an empty EMULATED_VERSION
 * (phase two of a two-phase upgrade, or any call without emulation) leaves the server on its binary's own
 * version.
 *
 * The image: every `image:` line whose repository ends in `/kube-apiserver` (kubeadm's name under any
 * imageRepository) or is IMAGE's own repository becomes IMAGE, the full target reference the driver chose
 * (src/drivers/static-pod.ts, targetImage); tag or digest, quoted or not. A manifest where no line got IMAGE
 * fails the script before anything is replaced.
 *
 * Files. The manifest found is kept as `$BACKUP_DIR/$KEY.yaml`, once per idempotency key (written under a
 * temporary name, then renamed, so a half-copied backup is never trusted). The edits are made in a scratch
 * copy under BACKUP_DIR (`sed -i` writes its own temporary file next to its target: never in the kubelet's
 * folder). The result is copied into the manifests folder as `.<manifest name>.auo-<KEY>` — the kubelet's
 * file source skips names starting with "." (kubernetes pkg/kubelet/config: the directory listing globs
 * `[^.]*`, the inotify handler drops dot names) — and renamed onto the manifest: a rename within one
 * folder, atomic, so the kubelet reads the old file or the new one, never a half-written one. The temporary
 * files are removed on every exit.
 *
 * Before anything is written, one probe of /readyz checks that the agent can read it at all: a TLS failure
 * (seen on the real nodes with Debian's busybox 1.35 wget: alert 40, handshake failure, from the Go-built
 * kube-apiserver; the project's agent image ships a static Go wget instead, images/node-agent/wget) fails
 * the script with nothing replaced (exit 2), instead of a certain revert later.
 * A server that is down then is no reason to stop (a rollback of a broken server).
 *
 * Readiness and local revert. After the rename, the agent polls https://PEER_IP:PEER_PORT/readyz every 2 s
 * (the image's wget, `timeout 5`: Debian's busybox wget crashes on -T) until READY_TIMEOUT seconds have passed. The
 * old server keeps answering 200 until the kubelet stops it, so a 200 counts only once the old server was
 * seen gone (a refused connection, a timeout or a non-200), or when /version already reports VERSION while
 * the old server reported another one. Not ready in time, or stopped by SIGTERM/SIGINT meanwhile (the Job's
 * deadline): the backup is put back the same atomic way, a line saying so goes to the termination log, and
 * the script exits 3 (143 on a signal). When the edit changes nothing (the manifest is already as asked: a
 * re-run), nothing is renamed, the wait needs no gap, and a server not ready in time is not reverted (exit 4).
 *
 * Exit codes: 0 done and ready; 2 bad input or a manifest the script cannot edit (nothing replaced);
 * 3 reverted; 4 not ready and nothing to revert; 143 reverted on a signal; others: a step failed (named in
 * the termination log; before the rename nothing was replaced).
 *
 * Environment: MANIFEST, BACKUP_DIR, KEY, IMAGE (the full target reference), VERSION, GATE (true, false, or
 * empty: leave the gate alone), PEER_CA, PEER_IP, PEER_PORT, EMULATED_VERSION (major.minor, e.g. 1.35, or
 * empty: no --emulated-version), READY_TIMEOUT (seconds), POLL_INTERVAL (seconds, default 2), TERMINATION_LOG (default /dev/termination-log,
 * which the kubelet reads into the container's terminated state; tests point it elsewhere).
 */
export const AGENT_SCRIPT = String.raw`set -eu
M="$MANIFEST"; D=$(dirname "$M"); N=$(basename "$M")
B="$BACKUP_DIR/$KEY.yaml"; BT="$BACKUP_DIR/.$KEY.yaml.tmp"; W="$BACKUP_DIR/.$KEY.work"
T="$D/.$N.auo-$KEY"
E="$EMULATED_VERSION"; TL="${braced('TERMINATION_LOG:-/dev/termination-log')}"
POLL="${braced('POLL_INTERVAL:-2')}"
STEP="checking the input"; CHANGED=0; DONE=0; TOLD=0
tell() { printf '%s\n' "$1" >"$TL" 2>/dev/null || true; TOLD=1; }
fail() { code=$1; shift; printf '%s\n' "$*" >&2; tell "$*"; exit "$code"; }
finish() {
  rc=$?
  if [ "$rc" -ne 0 ] && [ "$TOLD" = 0 ]; then
    if [ "$CHANGED" = 1 ]; then tell "failed (exit $rc) while $STEP, after the manifest was replaced; backup $B"
    else tell "failed (exit $rc) while $STEP; the manifest was not replaced"; fi
  fi
  rm -f "$T" "$BT" "$W" 2>/dev/null || true
}
trap finish EXIT
restore() {
  cp "$B" "$T"
  mv -f "$T" "$M"
}
stopped() {
  trap - TERM INT
  if [ "$CHANGED" = 1 ] && [ "$DONE" = 0 ]; then
    restore
    fail 143 "reverted: the agent was stopped (SIGTERM: the Job's deadline or a deletion) before the new kube-apiserver static Pod was ready; restored $B"
  fi
  fail 143 "stopped (SIGTERM) while $STEP; the manifest was not replaced"
}
trap stopped TERM INT
if [ -n "$E" ] && ! printf '%s\n' "$E" | grep -Eqx '[0-9]+\.[0-9]+'; then
  fail 2 "EMULATED_VERSION must be major.minor (e.g. 1.35), got: $E"
fi
case "$IMAGE" in
  '' | *[!A-Za-z0-9._/:@-]*) fail 2 "IMAGE must be an image reference, got: $IMAGE" ;;
esac
case "$POLL" in
  '' | *[!0-9.]*) fail 2 "POLL_INTERVAL must be a number of seconds, got: $POLL" ;;
esac
case "$READY_TIMEOUT" in
  '' | *[!0-9]*) fail 2 "READY_TIMEOUT must be a number of seconds, got: $READY_TIMEOUT" ;;
esac
[ -n "$PEER_IP" ] || fail 2 "PEER_IP is empty: the agent cannot check the new server"
case "$PEER_IP" in *:*) H="[$PEER_IP]" ;; *) H="$PEER_IP" ;; esac
URL="https://$H:$PEER_PORT"
[ -f "$M" ] || fail 2 "no manifest at $M"
# The first wget on PATH, called by its path: Debian's busybox-static sh (and its timeout) run their own applet
# for a bare name before looking at PATH, so the agent image's /bin/wget (a Go wget) would never run otherwise.
WGET=""; IFS0=$IFS; IFS=:
for d in $PATH; do if [ -x "$d/wget" ]; then WGET="$d/wget"; break; fi; done
IFS=$IFS0
[ -n "$WGET" ] || fail 2 "no wget on PATH ($PATH)"

probe() { timeout 5 "$WGET" -q -O - --no-check-certificate "$URL$1" 2>/dev/null; }
LAST=""
ready() {
  if LAST=$(timeout 5 "$WGET" -q -O /dev/null --no-check-certificate "$URL/readyz" 2>&1); then return 0; fi
  LAST=$(printf '%s' "$LAST" | tr '\n' ' ' | cut -c1-300)
  [ -n "$LAST" ] || LAST="no answer within 5s"
  return 1
}
version_of() { probe /version | tr -d '\n' | sed -n -E 's#.*"gitVersion"[[:space:]]*:[[:space:]]*"([^"]*)".*#\1#p'; }

STEP="checking that the agent can read $URL/readyz"
if ! ready; then
  case "$LAST" in
    *TLS* | *SSL* | *ssl* | *handshake*)
      fail 2 "the agent cannot check the server: $URL/readyz: $LAST (the agent image's wget cannot talk TLS to this server, e.g. Debian's busybox 1.35 wget against a Go-built kube-apiserver: use an agentImage whose first wget on PATH can, like the project's node agent image); the manifest was not replaced" ;;
  esac
  echo "the server does not answer $URL/readyz before the replacement ($LAST); going on"
fi
OLD_VERSION=$(version_of || true)

STEP="keeping the manifest as $B"
mkdir -p "$BACKUP_DIR"
if [ ! -f "$B" ]; then cp "$M" "$BT"; mv -f "$BT" "$B"; fi

STEP="editing a copy of the manifest"
cp "$M" "$W"
REPO=$(printf '%s\n' "$IMAGE" | sed -E 's#@.*$##; s#:[^:/]*$##')
REPO_RE=$(printf '%s\n' "$REPO" | sed 's#\.#\\.#g')
IMG_LINE='^([[:space:]]*(-[[:space:]]+)?image:[[:space:]]*)["'"'"']?'
sed -i -E "s#$IMG_LINE([^[:space:]\"']*/)?kube-apiserver[:@][^[:space:]\"']*[\"']?[[:space:]]*\$#\1$IMAGE#" "$W"
sed -i -E "s#$IMG_LINE$REPO_RE[:@][^[:space:]\"']*[\"']?[[:space:]]*\$#\1$IMAGE#" "$W"
if ! grep -E '^[[:space:]]*(-[[:space:]]+)?image:' "$W" | grep -Fq -- "$IMAGE"; then
  fail 2 "no kube-apiserver image line in $M (an image: line whose repository ends in /kube-apiserver or is $REPO); the manifest was not replaced"
fi
if [ -n "$GATE" ]; then
  if grep -q -- '- --feature-gates=' "$W"; then
    sed -i -E "/- --feature-gates=/{s/UnknownVersionInteroperabilityProxy=(true|false)//; s/=,/=/; s/,,/,/g; s/,$//; s/(- --feature-gates=)(.*)/\1UnknownVersionInteroperabilityProxy=$GATE,\2/; s/,$//}" "$W"
  else
    sed -i -E "s#^([[:space:]]*)- kube-apiserver\$#&\n\1- --feature-gates=UnknownVersionInteroperabilityProxy=$GATE#" "$W"
  fi
  sed -i -E '/- --peer-(ca-file|advertise-ip|advertise-port)=/d' "$W"
  if [ "$GATE" = true ]; then
    sed -i -E "s#^([[:space:]]*)- kube-apiserver\$#&\n\1- --peer-ca-file=$PEER_CA\n\1- --peer-advertise-ip=$PEER_IP\n\1- --peer-advertise-port=$PEER_PORT#" "$W"
  fi
fi
sed -i -E "/^[[:space:]]*- [\"']?--emulated-version[\"']?[[:space:]]*\$/{N;d;}" "$W"
sed -i -E "/^[[:space:]]*- [\"']?--emulated-version=/d" "$W"
if [ -n "$E" ]; then
  sed -i -E "s#^([[:space:]]*)- kube-apiserver\$#&\n\1- --emulated-version=$E#" "$W"
fi

if cmp -s "$W" "$M"; then
  echo "the manifest is already as asked (image $IMAGE, gate $GATE, emulated version $E): nothing to replace"
else
  STEP="replacing the manifest"
  cp "$W" "$T"
  CHANGED=1
  mv -f "$T" "$M"
  echo "manifest replaced: image $IMAGE, gate $GATE, emulated version $E (empty: none); backup $B"
fi

STEP="waiting for the new kube-apiserver to be ready"
start=$(date +%s); end=$((start + READY_TIMEOUT)); GAP=0
[ "$CHANGED" = 1 ] || GAP=1
while :; do
  if ready; then
    if [ "$GAP" = 0 ] && [ -n "$OLD_VERSION" ] && [ "$OLD_VERSION" != "$VERSION" ] && [ "$(version_of || true)" = "$VERSION" ]; then GAP=1; fi
    if [ "$GAP" = 1 ]; then DONE=1; break; fi
    LAST="200, but from the server that ran before: it was never seen stopping"
  else
    GAP=1
  fi
  [ "$(date +%s)" -lt "$end" ] || break
  sleep "$POLL"
done
if [ "$DONE" = 1 ]; then
  echo "ready: $URL/readyz answered 200 after $(( $(date +%s) - start ))s"
  exit 0
fi
if [ "$CHANGED" = 1 ]; then
  STEP="restoring $B"
  restore
  CHANGED=0
  fail 3 "reverted: the new kube-apiserver static Pod was not ready within ${braced('READY_TIMEOUT')}s ($URL/readyz, last: $LAST); restored $B"
fi
fail 4 "not ready: $URL/readyz did not answer 200 within ${braced('READY_TIMEOUT')}s (last: $LAST); the manifest was already as asked, nothing to revert"
`;
