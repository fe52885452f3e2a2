/**
 * The node agent's script (POSIX sh + sed, so any small image with busybox or coreutils runs it). It edits
 * the kubeadm static Pod manifest in place the way an operator would by hand: the image tag, the proxy
 * feature gate and the --peer-* flags (which must go when the gate is off: startup fails otherwise), and
 * --emulated-version: every existing one is removed (`--emulated-version=X`, quoted or not, or the flag and
 * its value as two entries), then `--emulated-version=$EMULATED_VERSION` is added after the command name
 * when that is set. So running it twice gives the same manifest, and an empty EMULATED_VERSION (phase two of
 * a two-phase upgrade, or any call without emulation) leaves the server on its binary's own version.
 * It keeps the manifest it found under the backup dir, once per idempotency key, and writes the result
 * next to the backup then moves it into place (a rename when the backup dir is on the manifests'
 * filesystem, as by default under /etc/kubernetes), so the kubelet never reads a half-written file and never
 * sees a stray file in its manifests folder.
 * Environment: MANIFEST, BACKUP_DIR, KEY, IMAGE, VERSION, GATE (true, false, or empty: leave the gate alone),
 * PEER_CA, PEER_IP, PEER_PORT, EMULATED_VERSION (major.minor, e.g. 1.35, or empty: no --emulated-version).
 * A malformed EMULATED_VERSION fails the script before anything is written.
 */
export const AGENT_SCRIPT = String.raw`set -eu
M="$MANIFEST"; B="$BACKUP_DIR/$KEY.yaml"; T="$BACKUP_DIR/.$KEY.new"; E="$EMULATED_VERSION"
if [ -n "$E" ] && ! printf '%s\n' "$E" | grep -Eqx '[0-9]+\.[0-9]+'; then
  echo "EMULATED_VERSION must be major.minor (e.g. 1.35), got: $E" >&2
  exit 2
fi
mkdir -p "$BACKUP_DIR"
[ -f "$B" ] || cp "$M" "$B"
cp "$M" "$T"
sed -i -E "s#^([[:space:]]*image:[[:space:]]*)[^[:space:]]*kube-apiserver:[^[:space:]]*#\1$IMAGE:$VERSION#" "$T"
if [ -n "$GATE" ]; then
  if grep -q -- '- --feature-gates=' "$T"; then
    sed -i -E "/- --feature-gates=/{s/UnknownVersionInteroperabilityProxy=(true|false)//; s/=,/=/; s/,,/,/g; s/,$//; s/(- --feature-gates=)(.*)/\1UnknownVersionInteroperabilityProxy=$GATE,\2/; s/,$//}" "$T"
  else
    sed -i -E "s#^([[:space:]]*)- kube-apiserver\$#&\n\1- --feature-gates=UnknownVersionInteroperabilityProxy=$GATE#" "$T"
  fi
  sed -i -E '/- --peer-(ca-file|advertise-ip|advertise-port)=/d' "$T"
  if [ "$GATE" = true ]; then
    sed -i -E "s#^([[:space:]]*)- kube-apiserver\$#&\n\1- --peer-ca-file=$PEER_CA\n\1- --peer-advertise-ip=$PEER_IP\n\1- --peer-advertise-port=$PEER_PORT#" "$T"
  fi
fi
sed -i -E "/^[[:space:]]*- [\"']?--emulated-version[\"']?[[:space:]]*\$/{N;d;}" "$T"
sed -i -E "/^[[:space:]]*- [\"']?--emulated-version=/d" "$T"
if [ -n "$E" ]; then
  sed -i -E "s#^([[:space:]]*)- kube-apiserver\$#&\n\1- --emulated-version=$E#" "$T"
fi
mv -f "$T" "$M"
echo "manifest updated: image $IMAGE:$VERSION, gate $GATE, emulated version $E (empty: none); backup $B"
`;
