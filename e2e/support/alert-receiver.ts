// Where Alertmanager's webhook_configs post in the e2e tests: a plain HTTP server on loopback that keeps every
// notification, by the path it was posted to, so a test can say which receiver got which alert.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One alert of a notification (Alertmanager's webhook payload, version 4). */
export interface NotifiedAlert {
  status: 'firing' | 'resolved';
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  fingerprint: string;
}

/** A webhook notification as Alertmanager posts it. */
export interface Notification {
  version: string;
  receiver: string;
  status: 'firing' | 'resolved';
  groupKey: string;
  groupLabels: Record<string, string>;
  commonLabels: Record<string, string>;
  alerts: NotifiedAlert[];
}

export interface Received {
  path: string;
  at: number;
  body: Notification;
}

export class AlertReceiver {
  readonly url: string;
  readonly received: Received[] = [];
  private readonly server: Server;

  private constructor(server: Server, url: string) {
    this.server = server;
    this.url = url;
  }

  static async start(): Promise<AlertReceiver> {
    const ref: { r?: AlertReceiver } = {};
    const server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        try {
          ref.r!.received.push({ path: req.url ?? '', at: Date.now(), body: JSON.parse(body) as Notification });
          res.writeHead(200).end();
        } catch {
          // Not JSON: answer 400, which Alertmanager logs and retries; the test then sees nothing arrive.
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ref.r = new AlertReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return ref.r;
  }

  /** The alerts delivered to a path, each with the notification that carried it. */
  alerts(path: string): { notification: Notification; alert: NotifiedAlert }[] {
    return this.received.filter((r) => r.path === path).flatMap((r) => r.body.alerts.map((alert) => ({ notification: r.body, alert })));
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
  }
}
