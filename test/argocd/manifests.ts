// The Argo CD manifests this repository ships (argocd/ and the Argo CD objects in the docs' YAML blocks), and the
// waves an ApplicationSet's RollingSync steps make of its list generator's clusters, computed the way Argo CD v3.5's
// applicationset-controller selects (applicationset/progressivesync: every matchExpression must hold; In and NotIn
// match when a value does; NotIn wins). Used by test/argocd/manifests.test.ts and e2e/argocd-manifests.e2e.ts.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

const root = join(import.meta.dirname, '..', '..');

/** The Argo CD manifests of argocd/ (test/argocd/manifests.test.ts: no other file there holds an Argo CD kind). */
export const ARGOCD_MANIFESTS = ['argocd/operator-application.yaml', 'argocd/upgrade-waves-applicationset.yaml'] as const;
/** The release assets (scripts/release.ts) besides these: the argocd-cm entries of the health check and the actions. */
export const ARGOCD_CUSTOMIZATIONS = ['argocd/argocd-cm.yaml', 'argocd/argocd-cm.helm-values.yaml'] as const;

export interface ArgoObject {
  apiVersion: string;
  kind: string;
  metadata?: { name?: string; namespace?: string };
  [k: string]: unknown;
}

/** The Argo CD objects (apiVersion argoproj.io/...) of a YAML text. */
export function argoObjects(text: string): ArgoObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as unknown)
    .filter((o): o is ArgoObject => typeof o === 'object' && o !== null && typeof (o as ArgoObject).apiVersion === 'string' && (o as ArgoObject).apiVersion.startsWith('argoproj.io/'));
}

export interface DocObject {
  /** page:line of the block's opening fence */
  where: string;
  object: ArgoObject;
}

/** The Argo CD objects of every ```yaml block of docs/*.md and README.md. */
export function docArgoObjects(): DocObject[] {
  const pages = [...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`), 'README.md'];
  const out: DocObject[] = [];
  for (const page of pages) {
    const lines = readFileSync(join(root, page), 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const open = /^\s*```(yaml|yml)\s*$/.exec(lines[i]!);
      if (!open) continue;
      const end = lines.findIndex((l, j) => j > i && /^\s*```\s*$/.test(l));
      if (end < 0) break;
      const text = lines.slice(i + 1, end).join('\n');
      if (text.includes('argoproj.io/')) for (const object of argoObjects(text)) out.push({ where: `${page}:${i + 1}`, object });
      i = end;
    }
  }
  return out;
}

interface MatchExpression { key: string; operator: string; values?: string[] }
export interface ApplicationSet {
  spec: {
    goTemplate?: boolean;
    generators: { list?: { elements: Record<string, unknown>[] } }[];
    strategy?: { type?: string; rollingSync?: { steps: { matchExpressions?: MatchExpression[]; maxUpdate?: number | string }[] } };
    template: { metadata: { name: string; labels?: Record<string, string> }; spec: Record<string, unknown> };
  };
}

/** A Go template of the list generator's shape, `{{.key}}` only: anything else is not what these manifests use. */
function render(template: string, element: Record<string, unknown>): string {
  return template.replace(/\{\{\s*([^}]*?)\s*\}\}/g, (_m, expr: string) => {
    const key = /^\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(expr)?.[1];
    if (key === undefined || !(key in element)) throw new Error(`the template uses {{${expr}}}, which this check does not evaluate`);
    return String(element[key]);
  });
}

/** Renders every string of a template value with one list element (`{{.key}}` only). */
function renderDeep(v: unknown, element: Record<string, unknown>): unknown {
  if (typeof v === 'string') return render(v, element);
  if (Array.isArray(v)) return v.map((x) => renderDeep(x, element));
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, renderDeep(x, element)]));
  return v;
}

/** The Applications the ApplicationSet's list generators make (its template rendered with each element), in the ApplicationSet's namespace. */
export function generatedApplications(set: ApplicationSet & { metadata?: { namespace?: string } }): ArgoObject[] {
  return set.spec.generators.flatMap((g) => g.list?.elements ?? []).map((element) => {
    const t = renderDeep(set.spec.template, element) as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
    return { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { ...t.metadata, namespace: set.metadata?.namespace }, spec: t.spec };
  });
}

function selects(labels: Record<string, string>, exprs: MatchExpression[]): boolean {
  // Argo CD: all expressions must hold; a NotIn that matches excludes the Application whatever an In says.
  return exprs.every((e) => {
    const v = labels[e.key];
    const hit = v !== undefined && (e.values ?? []).includes(v);
    if (e.operator === 'In') return hit;
    if (e.operator === 'NotIn') return !hit;
    throw new Error(`operator ${e.operator} is not one RollingSync takes (In, NotIn)`);
  });
}

/**
 * The clusters (the list elements' `cluster`) each RollingSync step syncs, in step order: an Application goes to the
 * first step whose matchExpressions select its rendered labels; one no step selects is in no wave.
 */
export function rollingSyncWaves(set: ApplicationSet): string[][] {
  if (set.spec.goTemplate !== true) throw new Error('the ApplicationSet does not use goTemplate');
  const steps = set.spec.strategy?.rollingSync?.steps ?? [];
  const waves: string[][] = steps.map(() => []);
  for (const element of set.spec.generators.flatMap((g) => g.list?.elements ?? [])) {
    const labels = Object.fromEntries(Object.entries(set.spec.template.metadata.labels ?? {}).map(([k, v]) => [k, render(v, element)]));
    const i = steps.findIndex((s) => selects(labels, s.matchExpressions ?? []));
    if (i >= 0) waves[i]!.push(String(element.cluster));
  }
  return waves;
}
