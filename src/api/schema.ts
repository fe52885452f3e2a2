import type { PrinterColumn, Schema } from './schema-types.ts';
import { specSchema as specFields } from './schema-spec.ts';
import { startConditions } from './schema-gates.ts';
import { statusSchema } from './schema-status.ts';
import { frozenFieldRules } from './schema-frozen.ts';

/**
 * The whole ApiServerUpgrade schema: the root object and its printer columns. The single source of
 * truth for the CRD, the TypeScript types and docs/api.md (see scripts/generate-api.ts).
 */
export { statusSchema } from './schema-status.ts';

/** The whole spec: schema-spec.ts' fields and the start conditions of schema-gates.ts (gates, window, acceptRisks). */
export const specSchema: Schema = { ...specFields, properties: { ...specFields.properties, ...startConditions } };

export const rootSchema: Schema = {
  tsType: 'ApiServerUpgrade',
  type: 'object',
  description:
    'ApiServerUpgrade rolls the cluster\'s kube-apiservers to a target version batch by batch, with the Mixed Version Proxy on, analysis after each batch, and pause or rollback on a breach. Cluster-scoped; one object per upgrade.',
  required: ['spec'],
  properties: {
    apiVersion: { type: 'string', description: 'upgrade.apiserver.dev/v1alpha1' },
    kind: { type: 'string', description: 'ApiServerUpgrade' },
    metadata: { type: 'object', tsExternal: { name: 'V1ObjectMeta', from: '@kubernetes/client-node' } },
    spec: specSchema,
    status: statusSchema,
  },
  // On the root: only here may a rule read the stored status (is the upgrade under way?) next to the spec.
  'x-kubernetes-validations': frozenFieldRules(specSchema),
};

export const printerColumns: readonly PrinterColumn[] = [
  { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Where the upgrade is.' },
  { name: 'From', type: 'string', jsonPath: '.status.fromVersion', description: 'Version before the upgrade.' },
  { name: 'To', type: 'string', jsonPath: '.spec.targetVersion', description: 'Target version.' },
  { name: 'Batch', type: 'string', jsonPath: '.status.batch.progress', description: 'Current batch / total batches.' },
  { name: 'Stage', type: 'string', jsonPath: '.status.stage', description: 'TwoPhase upgrades: Binaries (phase one) or API (phase two).' },
  { name: 'Paused', type: 'boolean', jsonPath: '.spec.paused', description: 'Declarative pause from the spec.' },
  { name: 'Reason', type: 'string', jsonPath: '.status.pause.reason', description: 'Why the upgrade is paused (by the spec or automatically).' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Age of the object.' },
];
