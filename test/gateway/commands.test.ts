import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Commands through the real gateway and API over one database, with real MQTT clients as the devices
 * (docs/concepts/commands-and-presence.md).
 */
let g: TestGateway;
beforeAll(async () => { g = await startTestGateway(); });
afterAll(async () => { await g?.close(); });

const commandsTopic = (id: string) => `devices/${id}/commands`;
const responsesTopic = (id: string) => `devices/${id}/responses`;

type App = Awaited<ReturnType<TestGateway['t']['make']['application']>>;
const call = async (app: App, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) => {
  const res = await g.t.app.inject({ method, url, headers: { authorization: app.auth }, ...(payload !== undefined && { payload: payload as object }) });
  return { status: res.statusCode, body: res.body ? res.json() : null };
};
const send = (app: App, deviceId: string, command: Record<string, unknown>) => call(app, 'POST', `/api/v1/devices/${deviceId}/commands`, { command });
const command = async (app: App, id: string) => (await call(app, 'GET', `/api/v1/commands/${id}`)).body.command;
const untilState = (app: App, id: string, state: string, timeoutMs = 5000) =>
  eventually(() => command(app, id), (c) => c.state === state, timeoutMs);

/** A device's MQTT client that collects its commands, answering each with `answer` (none when it returns null). */
async function device(d: { id: string; secret: string }, answer: (m: Record<string, unknown>) => Record<string, unknown> | null = (m) => ({ commandId: m.commandId, ok: true, result: { echo: m.type } }),
  opts: { clean?: boolean } = {}) {
  const client = await g.connect(d, { clean: opts.clean ?? true });
  const received: Record<string, unknown>[] = [];
  client.on('message', (topic, payload) => {
    if (topic !== commandsTopic(d.id)) return;
    const m = JSON.parse(payload.toString()) as Record<string, unknown>;
    received.push(m);
    const reply = answer(m);
    if (reply) void client.publishAsync(responsesTopic(d.id), JSON.stringify(reply), { qos: 1 });
  });
  await client.subscribeAsync(commandsTopic(d.id), { qos: 1 });
  return { client, received };
}

async function setup() {
  const app = await g.t.make.application();
  const d = await g.t.make.device(app.principal);
  return { app, d };
}

describe('a command to an online device', () => {
  it('goes queued → sent → delivered → succeeded, with the reply as its response and a command-succeeded event', async () => {
    const { app, d } = await setup();
    const { client, received } = await device(d, () => null);
    const created = await send(app, d.id, { type: 'request-vin', expiresIn: 60 });
    expect(created.status).toBe(201);
    expect(created.body.command).toMatchObject({ type: 'request-vin', payload: null, state: 'queued', sentAt: null, response: null, deviceId: d.id });
    const id = created.body.command.id as string;
    const delivered = await untilState(app, id, 'delivered');
    expect(delivered.sentAt).not.toBeNull();
    expect(delivered.deliveredAt).not.toBeNull();
    expect(received).toEqual([{ commandId: id, type: 'request-vin', payload: null, expiresAt: created.body.command.expiresAt }]);
    await client.publishAsync(responsesTopic(d.id), JSON.stringify({ commandId: id, ok: true, result: { vin: '1FTFW1ET5DFC10312' } }), { qos: 1 });
    const done = await command(app, id);
    expect(done).toMatchObject({ state: 'succeeded', response: { ok: true, result: { vin: '1FTFW1ET5DFC10312' } } });
    expect(done.respondedAt).not.toBeNull();
    const events = (await call(app, 'GET', `/api/v1/devices/${d.id}/events?type=command-succeeded`)).body.events;
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ eventType: 'command-succeeded', object: { type: 'command', id }, meta: { type: 'request-vin', response: { ok: true } } });
  });

  it('records a reply with ok false as failed, with its error', async () => {
    const { app, d } = await setup();
    await device(d, (m) => ({ commandId: m.commandId, ok: false, error: 'engine running' }));
    const { body } = await send(app, d.id, { type: 'clear-dtcs' });
    const done = await untilState(app, body.command.id, 'failed');
    expect(done.response).toEqual({ ok: false, error: 'engine running' });
  });

  it("sends a device's commands one at a time, in the order they were created; a ping goes alongside", async () => {
    const { app, d } = await setup();
    const answers: ((ok: boolean) => void)[] = [];
    const { received, client } = await device(d, (m) => {
      if (m.type === 'ping') return { commandId: m.commandId, ok: true };
      answers.push((ok) => void client.publishAsync(responsesTopic(d.id), JSON.stringify({ commandId: m.commandId, ok }), { qos: 1 }));
      return null;
    });
    const a = (await send(app, d.id, { type: 'set-interval', payload: { seconds: 5 } })).body.command.id;
    const b = (await send(app, d.id, { type: 'request-dtcs' })).body.command.id;
    const p = (await send(app, d.id, { type: 'ping' })).body.command.id;
    await untilState(app, p, 'succeeded');
    await untilState(app, a, 'delivered');
    expect((await command(app, b)).state).toBe('queued');
    answers[0](true);
    await untilState(app, b, 'delivered');
    expect(received.map((m) => m.commandId).filter((id) => id !== p)).toEqual([a, b]);
    expect((await command(app, a)).state).toBe('succeeded');
  });
});

describe('a command to an offline device', () => {
  it('waits in the database and is delivered when the device connects with a clean session', async () => {
    const { app, d } = await setup();
    const { body } = await send(app, d.id, { type: 'ping' });
    await new Promise((r) => setTimeout(r, 300));
    expect((await command(app, body.command.id)).state).toBe('queued');
    const { received } = await device(d);
    await untilState(app, body.command.id, 'succeeded');
    expect(received.map((m) => m.commandId)).toEqual([body.command.id]);
  });

  it('is delivered to a persistent session when it reconnects, once', async () => {
    const { app, d } = await setup();
    const first = await device(d, () => null, { clean: false });
    await first.client.endAsync();
    const { body } = await send(app, d.id, { type: 'request-vin' });
    const received: string[] = [];
    const client = await g.connect(d, { clean: false });
    client.on('message', (topic, payload) => {
      const m = JSON.parse(payload.toString()) as { commandId: string };
      received.push(m.commandId);
      void client.publishAsync(responsesTopic(d.id), JSON.stringify({ commandId: m.commandId, ok: true, result: { vin: 'X' } }), { qos: 1 });
    });
    await untilState(app, body.command.id, 'succeeded');
    expect(received).toEqual([body.command.id]);
  });

  it('is sent again on a new clean connection when the last one closed before its PUBACK', async () => {
    const { app, d } = await setup();
    // a client that takes the command but never acknowledges it: its PUBACK is never written
    const silent = await g.connect(d, { clean: true });
    (silent as unknown as { handleMessage: (p: unknown, cb: () => void) => void }).handleMessage = () => { /* never acknowledged */ };
    await silent.subscribeAsync(commandsTopic(d.id), { qos: 1 });
    const { body } = await send(app, d.id, { type: 'ping' });
    await untilState(app, body.command.id, 'sent');
    silent.end(true);
    const { received } = await device(d);
    await untilState(app, body.command.id, 'succeeded');
    expect(received.map((m) => m.commandId)).toEqual([body.command.id]);
  });

  it('expires unanswered at expiresAt, with a command-expired event', async () => {
    const { app, d } = await setup();
    await device(d, () => null);
    const { body } = await send(app, d.id, { type: 'reboot', expiresIn: 1 });
    const expired = await untilState(app, body.command.id, 'expired', 4000);
    expect(expired.state).toBe('expired');
    const events = (await call(app, 'GET', `/api/v1/devices/${d.id}/events?type=command-expired`)).body.events;
    expect(events.map((e: { object: { id: string } }) => e.object.id)).toEqual([body.command.id]);
  });
});

describe('cancelling', () => {
  it('cancels a queued command, and refuses to cancel one already sent', async () => {
    const { app, d } = await setup();
    const { body } = await send(app, d.id, { type: 'ping' });
    const cancelled = await call(app, 'DELETE', `/api/v1/commands/${body.command.id}`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.command.state).toBe('cancelled');
    await device(d, () => null);
    await new Promise((r) => setTimeout(r, 300));
    expect((await command(app, body.command.id)).state).toBe('cancelled');

    const sent = (await send(app, d.id, { type: 'request-vin' })).body.command.id;
    await untilState(app, sent, 'delivered');
    const refused = await call(app, 'DELETE', `/api/v1/commands/${sent}`);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ statusCode: 409, error: 'Conflict', message: expect.stringContaining('only a queued command') });
  });
});

describe('who may send and read', () => {
  it("answers 404 to another application's command to the device, and to reading another's command", async () => {
    const { app, d } = await setup();
    const other = await g.t.make.application();
    const post = await send(other, d.id, { type: 'ping' });
    expect(post.status).toBe(404);
    const mine = (await send(app, d.id, { type: 'ping' })).body.command.id;
    expect((await call(other, 'GET', `/api/v1/commands/${mine}`)).status).toBe(404);
    expect((await call(other, 'DELETE', `/api/v1/commands/${mine}`)).status).toBe(404);
    expect((await call(other, 'GET', `/api/v1/devices/${d.id}/commands`)).status).toBe(404);
    // another application authorized for the same device sees none of this one's commands
    await g.t.repos.devices.authorize(d.id, other.id);
    await g.t.repos.devices.register(other.id, d.id);
    expect((await call(other, 'GET', `/api/v1/devices/${d.id}/commands`)).body.commands).toEqual([]);
    expect((await call(other, 'GET', `/api/v1/commands/${mine}`)).status).toBe(404);
  });

  it('sends nothing an application queued once it deregistered the device', async () => {
    const { app, d } = await setup();
    const { body } = await send(app, d.id, { type: 'ping' });
    expect((await call(app, 'DELETE', `/api/v1/devices/${d.id}`)).status).toBe(204);
    const { received } = await device(d);
    await new Promise((r) => setTimeout(r, 1500));
    expect(received).toEqual([]);
    expect((await g.t.db.knex('commands').where({ id: body.command.id }).first()).state).toBe('queued');
  });

  it("refuses a device's publish to another device's commands or responses topic, and its reply to another's command", async () => {
    const { app, d } = await setup();
    const victim = await g.t.make.device(app.principal);
    const v = await device(victim, () => null);
    for (const topic of [commandsTopic(victim.id), responsesTopic(victim.id), commandsTopic(d.id)]) {
      const attacker = await g.connect(d);
      attacker.on('error', () => undefined);
      const closed = new Promise<void>((resolve) => attacker.once('close', () => resolve()));
      attacker.publish(topic, JSON.stringify({ commandId: '0190a000-0000-7000-8000-000000000000', type: 'reboot', ok: true }), { qos: 1 });
      await closed;
    }
    await expect((await g.connect(d)).subscribeAsync(commandsTopic(victim.id))).rejects.toThrow(/Subscribe error/);
    const theirs = (await send(app, victim.id, { type: 'request-vin' })).body.command.id;
    await untilState(app, theirs, 'delivered');
    const again = await g.connect(d);
    await again.publishAsync(responsesTopic(d.id), JSON.stringify({ commandId: theirs, ok: true, result: { vin: 'FORGED' } }), { qos: 1 });
    expect((await command(app, theirs)).state).toBe('delivered');
    expect(v.received).toHaveLength(1);
    const letters = await g.t.db.knex('dead_letters').where({ device_id: d.id }).select('reason');
    expect(letters.map((l) => l.reason)).toEqual(expect.arrayContaining([
      expect.stringMatching(/refused: a device publishes only to/),
      expect.stringMatching(/^reply refused: reply to command .* not this device's/),
    ]));
  });
});

describe('bad input', () => {
  it('answers 400 naming the field for an unknown type or a bad payload', async () => {
    const { app, d } = await setup();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ type: 'self-destruct' }, /command\.type must be one of ping, set-interval/],
      [{ type: 'set-interval' }, /command\.payload: set-interval needs/],
      [{ type: 'set-interval', payload: { seconds: 0 } }, /command\.payload\.seconds must be an integer from 1 to 3600/],
      [{ type: 'set-interval', payload: { seconds: 5, extra: 1 } }, /command\.payload\.extra/],
      [{ type: 'ping', payload: { a: 1 } }, /command\.payload: ping takes no payload/],
      [{ type: 'custom', payload: [1] }, /custom payload must be a JSON object/],
      [{ type: 'custom', payload: { big: 'x'.repeat(20_000) } }, /at most 16384/],
      [{ type: 'ping', expiresIn: 0 }, /expiresIn/],
    ];
    for (const [body, message] of cases) {
      const res = await send(app, d.id, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.message).toMatch(message);
    }
    expect((await call(app, 'GET', `/api/v1/devices/${d.id}/commands?state=lost`)).status).toBe(400);
    expect((await call(app, 'GET', `/api/v1/devices/${d.id}/commands`)).body.commands).toEqual([]);
  });

  it('refuses a reply that is not one, counting it, and keeps the connection', async () => {
    const { d } = await setup();
    const { client } = await device(d, () => null);
    for (const bad of ['not json', '[]', '{"ok":true}', '{"commandId":"x","ok":true}', '{"commandId":"0190a000-0000-7000-8000-000000000000","ok":"yes"}']) {
      await client.publishAsync(responsesTopic(d.id), bad, { qos: 1 });
    }
    expect(client.connected).toBe(true);
    const letters = await g.t.db.knex('dead_letters').where({ device_id: d.id }).orderBy('received_at').select('reason');
    expect(letters).toHaveLength(5);
    for (const l of letters) expect(l.reason).toMatch(/^reply refused: /);
    expect(await g.gw.metrics()).toMatch(/drivewire_gateway_frames_refused_total\{reason="reply"\} [1-9]/);
  });

  it('lists the commands newest first, filtered by state, with stream pagination', async () => {
    const { app, d } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await send(app, d.id, { type: 'ping' })).body.command.id);
    await call(app, 'DELETE', `/api/v1/commands/${ids[1]}`);
    const all = (await call(app, 'GET', `/api/v1/devices/${d.id}/commands?limit=2`)).body;
    expect(all.commands.map((c: { id: string }) => c.id)).toEqual([ids[2], ids[1]]);
    expect(all.meta.pagination.links.prior).toBeDefined();
    const rest = (await call(app, 'GET', new URL(all.meta.pagination.links.prior).pathname + new URL(all.meta.pagination.links.prior).search)).body;
    expect(rest.commands.map((c: { id: string }) => c.id)).toEqual([ids[0]]);
    const cancelled = (await call(app, 'GET', `/api/v1/devices/${d.id}/commands?state=cancelled`)).body.commands;
    expect(cancelled.map((c: { id: string }) => c.id)).toEqual([ids[1]]);
  });
});
