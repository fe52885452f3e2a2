// Captures test/fixtures/job-api-fields.json from a real kube-apiserver: the fields of batch/v1 Job and every type
// inside it, from the server's /openapi/v3/apis/batch/v1 (test/support/job-api-fields.ts reads it).
//   sudo node scripts/capture-job-api-fields.ts        (the old version of the e2e pair; AUO_OLD_VERSION picks another)
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Cluster, OLD_VERSION } from '../e2e/cluster/index.ts';
import { reduceOpenApi, type OpenApiSchema } from '../test/support/job-api-fields.ts';

const ROOT = 'io.k8s.api.batch.v1.Job';
const cluster = await Cluster.start({ servers: 1, version: OLD_VERSION, verbose: true });
try {
  const r = await cluster.request(0, '/openapi/v3/apis/batch/v1');
  if (r.status !== 200) throw new Error(`/openapi/v3/apis/batch/v1: ${r.status} ${r.body.slice(0, 300)}`);
  const types = reduceOpenApi(JSON.parse(r.body) as { components: { schemas: Record<string, OpenApiSchema> } }, ROOT);
  const out = join(import.meta.dirname, '..', 'test', 'fixtures', 'job-api-fields.json');
  await writeFile(out, `${JSON.stringify({ capturedFrom: `kube-apiserver ${OLD_VERSION} /openapi/v3/apis/batch/v1`, root: ROOT, types }, null, 1)}\n`);
  process.stderr.write(`wrote ${out}: ${Object.keys(types).length} types\n`);
} finally {
  await cluster.teardown();
}
