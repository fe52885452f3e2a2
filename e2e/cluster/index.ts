export { Cluster, type ClusterOptions, type ServerConfig, type ServerInfo } from './cluster.ts';
export { OLD_VERSION, NEW_VERSION, ETCD_VERSION, binary } from './binaries.ts';
export { PROXY_GATE } from './apiserver-flags.ts';
export { adminRequest, type HttpResult } from './http.ts';
export { waitFor, sleep } from './exec.ts';
export type { Pki } from './pki.ts';
export { ReplaceWebhook, type ReceivedCall } from './webhook-server.ts';
