// A bare Aedes broker on port 0 that checks device credentials against the database (as the
// gateway does) and keeps every frame each device published, for scheduler and CLI tests that
// need a real MQTT peer but not the ingest pipeline.
import { createServer, type AddressInfo } from 'node:net';
import { Aedes, type AuthenticateError } from 'aedes';
import type { Repositories } from '../../db/index.js';
import type { GatewayFrame } from '../../simulator/frames.js';

export interface TestBroker {
  url: string;
  /** Frames per device id, in arrival order (a JSON array payload adds each of its frames). */
  frames: Map<string, GatewayFrame[]>;
  /** CONNECTs accepted per device id. */
  connects: Map<string, number>;
  close(): Promise<void>;
}

export async function startTestBroker(repos: Repositories): Promise<TestBroker> {
  const frames = new Map<string, GatewayFrame[]>();
  const connects = new Map<string, number>();
  const broker = await Aedes.createBroker({
    authenticate: (client, username, password, done) => {
      void repos.devices.authenticate(username ?? '', password?.toString() ?? '').then((ok) => {
        if (ok && client.id === username) {
          connects.set(username!, (connects.get(username!) ?? 0) + 1);
          return done(null, true);
        }
        done(Object.assign(new Error('bad credentials'), { returnCode: 5 }) as AuthenticateError, false);
      }, (err: Error) => done(Object.assign(err, { returnCode: 3 }) as AuthenticateError, false));
    },
  });
  broker.on('publish', (packet, client) => {
    const match = /^devices\/([^/]+)\/frames$/.exec(packet.topic);
    if (!client || !match) return;
    const payload = JSON.parse(packet.payload.toString()) as GatewayFrame | GatewayFrame[];
    const list = frames.get(match[1]) ?? [];
    list.push(...(Array.isArray(payload) ? payload : [payload]));
    frames.set(match[1], list);
  });
  const server = createServer(broker.handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `mqtt://127.0.0.1:${(server.address() as AddressInfo).port}`,
    frames,
    connects,
    async close() {
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
