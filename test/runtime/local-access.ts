import { KubeAccess } from '../../src/runtime/kubeconfig.ts';

/** A kubeconfig for a plain-http test server on 127.0.0.1:`port`, with a bearer token when given. */
export function localAccess(port: number, token?: string): KubeAccess {
  return KubeAccess.fromObject({
    clusters: [{ name: 'c', cluster: { server: `http://127.0.0.1:${port}` } }],
    users: [{ name: 'u', user: token === undefined ? {} : { token } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  }, '.');
}
