// The node agent's manifest edit: the kube-apiserver static Pod manifest as a YAML document (the `yaml` package's
// parseDocument), never as text. The kube-apiserver container is found by name or by its command's first entry;
// its `image` and the entries of its `command` list are set, inserted and removed as scalars (flags.ts says
// where), and the document is serialized again. A value that YAML would read as something other than that string
// (a newline, `: `, `#`, a leading `-`, `yes`, `1:20`, …) is written double-quoted, escaped by the serializer.
//
// Fail closed: the result is parsed again, as YAML 1.2 (this package's default) and as YAML 1.1 (the kubelet's
// Go YAML reads 1.1 booleans, octals and sexagesimals), and must equal the original document with exactly this
// call's image and command, or nothing is written.
import { isMap, isScalar, isSeq, parseAllDocuments, parseDocument, Scalar, type Document, type YAMLMap, type YAMLSeq } from 'yaml';
import { isDeepStrictEqual } from 'node:util';
import { arrayFlags, editFlags, type FlagEdit, type FlagList } from './flags.ts';

export interface ManifestEdit extends FlagEdit {
  /** The full target image reference. */
  image: string;
}

export type EditResult =
  | { ok: true; text: string; changed: boolean; note?: string }
  /** Nothing can be written: the message says why (the agent exits 2). */
  | { ok: false; message: string };

const CONTAINER = 'kube-apiserver';
/**
 * Serializer options: sequences as in the file; no folding of long lines (a flag stays one line); double-quoted
 * strings written with JSON's escapes (the package's own folded double quotes lost a `\n \n` in a long value).
 */
const STYLES = [{ indentSeq: false }, { indentSeq: true }] as const;
const WRITE = { lineWidth: 0, doubleQuotedAsJSON: true } as const;
const VERSIONS = ['1.2', '1.1'] as const;

/** An image reference without its tag and digest (`registry.k8s.io/kube-apiserver`). */
export function repositoryOf(image: string): string {
  const at = image.indexOf('@');
  const name = at < 0 ? image : image.slice(0, at);
  const colon = name.lastIndexOf(':');
  return colon > name.lastIndexOf('/') ? name.slice(0, colon) : name;
}

/** Whether the container's image is the one to replace: kubeadm's name under any registry, or IMAGE's repository. */
export function replaceableImage(current: string, target: string): boolean {
  const repo = repositoryOf(current.trim());
  return repo === CONTAINER || repo.endsWith(`/${CONTAINER}`) || repo === repositoryOf(target);
}

/** Whether `v`, written plain, reads back as the same string under both YAML versions. */
function plainReadsBack(v: string): boolean {
  if (v === '' || v !== v.trim() || /[\n\r\t\u0085\u2028\u2029]/.test(v)) return false;
  try {
    return VERSIONS.every((version) => {
      const doc = parseDocument(v, { version });
      return doc.errors.length === 0 && doc.toJS() === v;
    });
  } catch {
    return false;
  }
}

/** Sets a scalar's value, keeping its style unless the value needs quotes it does not have. */
function setScalar(node: Scalar, value: string): void {
  node.value = value;
  if ((node.type === undefined || node.type === Scalar.PLAIN) && !plainReadsBack(value)) node.type = Scalar.QUOTE_DOUBLE;
  // Block styles would fold or chomp a value: a flag is one line.
  if (node.type === Scalar.BLOCK_FOLDED || node.type === Scalar.BLOCK_LITERAL) node.type = Scalar.QUOTE_DOUBLE;
}

function newScalar(value: string): Scalar {
  const s = new Scalar(value);
  s.type = plainReadsBack(value) ? Scalar.PLAIN : Scalar.QUOTE_DOUBLE;
  return s;
}

/** The command sequence as a FlagList; every entry must be a string scalar. */
function seqFlags(seq: YAMLSeq): FlagList {
  const values = (): string[] => seq.items.map((x) => (x as Scalar<string>).value);
  return {
    values,
    set: (i, v) => setScalar(seq.items[i] as Scalar, v),
    insert: (i, v) => void seq.items.splice(i, 0, newScalar(v)),
    remove: (i) => void seq.items.splice(i, 1),
  };
}

function str(node: unknown): string | undefined {
  return isScalar(node) && typeof node.value === 'string' ? node.value : undefined;
}

/** The kube-apiserver container: named so, or (when none is) the one whose command starts with kube-apiserver. */
function findContainer(doc: Document): { index: number; container: YAMLMap } | string {
  const containers = doc.getIn(['spec', 'containers'], true);
  if (!isSeq(containers)) return 'the manifest has no spec.containers list';
  const maps = containers.items.map((c, index) => ({ index, container: c })).filter((x): x is { index: number; container: YAMLMap } => isMap(x.container));
  const byName = maps.filter((x) => str(x.container.get('name', true)) === CONTAINER);
  const byCommand = maps.filter((x) => {
    const cmd = x.container.get('command', true);
    return isSeq(cmd) && str(cmd.items[0]) === CONTAINER;
  });
  const found = byName.length > 0 ? byName : byCommand;
  if (found.length !== 1) return found.length === 0 ? `no container named ${CONTAINER} or running ${CONTAINER} in the manifest` : `${found.length} kube-apiserver containers in the manifest`;
  return found[0]!;
}

/** The serializer options under which the untouched document comes back byte for byte, if any. */
function styleOf(doc: Document, text: string): (typeof STYLES)[number] | undefined {
  return STYLES.find((s) => doc.toString({ ...s, ...WRITE }) === text);
}

/** Edits the manifest text; pure. */
export function editManifest(text: string, e: ManifestEdit): EditResult {
  const all = parseAllDocuments(text);
  if (!Array.isArray(all) || all.length !== 1) return { ok: false, message: `the manifest must hold one YAML document (it holds ${Array.isArray(all) ? all.length : 0})` };
  const doc = parseDocument(text);
  if (doc.errors.length > 0) return { ok: false, message: `the manifest is not valid YAML: ${doc.errors[0]!.message.split('\n')[0]}` };
  const found = findContainer(doc);
  if (typeof found === 'string') return { ok: false, message: found };
  const { index, container } = found;
  const imageNode = container.get('image', true);
  const current = str(imageNode);
  if (current === undefined || !isScalar(imageNode)) return { ok: false, message: 'the kube-apiserver container has no image' };
  if (!replaceableImage(current, e.image)) {
    return { ok: false, message: `the kube-apiserver container's image ${JSON.stringify(current)} is neither a */${CONTAINER} image nor of the repository ${repositoryOf(e.image)}` };
  }
  const command = container.get('command', true);
  if (!isSeq(command) || command.items.length === 0 || !command.items.every((x) => str(x) !== undefined)) {
    return { ok: false, message: 'the kube-apiserver container\'s command is not a list of strings' };
  }
  const args = container.get('args', true);
  if (args !== undefined) return { ok: false, message: 'the kube-apiserver container has args: the agent edits flags in its command only (kubeadm\'s layout)' };

  const style = styleOf(doc, text);
  const before = VERSIONS.map((version) => parseDocument(text, { version }).toJS() as unknown);
  const wanted = command.items.map((x) => str(x)!);
  editFlags(arrayFlags(wanted), e);

  if (current !== e.image) setScalar(imageNode, e.image);
  editFlags(seqFlags(command), e);
  const out = doc.toString({ ...(style ?? STYLES[0]), ...WRITE });

  // The result, read both ways, is the original with this image and this command, and nothing else.
  for (const [i, version] of VERSIONS.entries()) {
    const expected = structuredClone(before[i]) as { spec: { containers: Record<string, unknown>[] } };
    Object.assign(expected.spec.containers[index]!, { image: e.image, command: wanted });
    let got: unknown;
    try {
      got = parseDocument(out, { version }).toJS();
    } catch (err) {
      return { ok: false, message: `the edited manifest does not read back as YAML ${version}: ${(err as Error).message}` };
    }
    if (!isDeepStrictEqual(got, expected)) {
      return { ok: false, message: `the edited manifest read as YAML ${version} differs from the original in more than the image and the command (a value the serializer cannot keep, e.g. a 1.1 octal or sexagesimal); edit it by hand` };
    }
  }
  return { ok: true, text: out, changed: out !== text, ...(style === undefined ? { note: 'the manifest was re-formatted: its layout does not survive a YAML round trip byte for byte' } : {}) };
}
