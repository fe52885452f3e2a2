// Reading the harness servers' audit logs (JSON lines of audit.k8s.io/v1 Events, `Cluster.start({ audit })`).
import { readFile } from 'node:fs/promises';

export interface AuditEvent {
  auditID: string;
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string; groups?: string[]; extra?: Record<string, string[]> };
  impersonatedUser?: { username: string };
  sourceIPs?: string[];
  userAgent?: string;
  responseStatus?: { code?: number; message?: string; reason?: string };
  annotations?: Record<string, string>;
  objectRef?: { resource?: string; apiGroup?: string; apiVersion?: string };
}

/** Every event of one server's audit log so far (a missing file is no events). */
export async function auditEvents(path: string): Promise<AuditEvent[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as AuditEvent);
}
