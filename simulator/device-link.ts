// A device's MQTT connection: publishes at QoS 1 (holding what is published while it reboots, to send after it is
// connected again), and subscribes to its commands topic on every connection (clean sessions keep no subscription).
import { connect, type MqttClient } from 'mqtt';

/** pino-compatible subset. */
export interface LinkLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export interface LinkOptions {
  mqttUrl: string;
  deviceId: string;
  secret: string;
  /** ms between reconnect attempts; also how long a reboot stays offline. */ reconnectPeriodMs: number;
  log: LinkLogger;
  /** A message on devices/<id>/commands. */ onCommand(text: string): void;
}

export interface DeviceLink {
  /** Resolves once acknowledged (or lost when the client is forced closed, which is logged); never rejects. */
  publish(topic: string, body: unknown): Promise<void>;
  /** Disconnects cleanly once in-flight messages are acknowledged, stays offline reconnectPeriodMs, connects again. */
  reboot(): Promise<void>;
  /** Resolves on the first connack or when the signal aborts; rejects on refused credentials or after timeoutMs. */
  firstConnect(timeoutMs: number, signal: AbortSignal): Promise<void>;
  /** Ends the connection for good (a reboot under way does not connect again). */
  end(force: boolean): Promise<void>;
  /** CONNACKs received. */
  connects(): number;
}

const NOT_AUTHORIZED = new Set([4, 5, 134, 135]);

export function openLink(opts: LinkOptions): DeviceLink {
  const { deviceId, log } = opts;
  const commandsTopic = `devices/${deviceId}/commands`;
  const client = connect(opts.mqttUrl, {
    clientId: deviceId, username: deviceId, password: opts.secret,
    clean: true, reconnectPeriod: opts.reconnectPeriodMs, connectTimeout: 10_000, resubscribe: false,
  });
  /** Sends held while rebooting, in order; null while connected (or reconnecting on its own: mqtt.js queues then). */
  let offline: (() => void)[] | null = null;
  let ended = false;
  let connects = 0;

  client.on('error', (err) => log.warn({ err, deviceId }, 'mqtt client error'));
  client.on('reconnect', () => log.debug({ deviceId }, 'reconnecting'));
  client.on('connect', () => {
    connects += 1;
    client.subscribeAsync(commandsTopic, { qos: 1 }).catch((err: unknown) => log.warn({ err, deviceId }, 'could not subscribe to commands'));
    const held = offline ?? [];
    offline = null;
    for (const send of held) send();
  });
  client.on('message', (topic, payload) => {
    if (topic !== commandsTopic) return;
    // A command the device cannot handle is logged; it never ends the run.
    try { opts.onCommand(payload.toString()); } catch (err) { log.warn({ err, deviceId }, 'command not handled'); }
  });

  const send = (topic: string, text: string) => client.publishAsync(topic, text, { qos: 1 }).then(
    () => undefined,
    (err: unknown) => log.warn({ err, deviceId, topic }, 'publish not acknowledged'),
  );

  return {
    publish(topic, body) {
      const text = JSON.stringify(body);
      const held = offline;
      if (!held) return send(topic, text);
      return new Promise<void>((resolve) => { held.push(() => resolve(send(topic, text))); });
    },
    async reboot() {
      if (ended || offline) return;
      offline = [];
      log.debug({ deviceId }, 'rebooting');
      await client.endAsync(false).catch((err: unknown) => log.warn({ err, deviceId }, 'disconnect failed'));
      await new Promise((resolve) => setTimeout(resolve, opts.reconnectPeriodMs));
      if (!ended) client.reconnect();
    },
    firstConnect: (timeoutMs, signal) => firstConnect(client, timeoutMs, signal),
    end(force) {
      ended = true;
      return client.endAsync(force);
    },
    connects: () => connects,
  };
}

function firstConnect(client: MqttClient, timeoutMs: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(() => finish(new Error(`no MQTT connection after ${timeoutMs} ms`)), timeoutMs);
    const onError = (err: Error & { code?: number }) => {
      if (err.code !== undefined && NOT_AUTHORIZED.has(err.code)) finish(new Error(`MQTT connection refused: ${err.message}`));
    };
    const finish = (err?: Error) => {
      clearTimeout(timer);
      client.off('connect', onConnect);
      client.off('error', onError);
      signal.removeEventListener('abort', onConnect);
      if (err) reject(err);
      else resolve();
    };
    const onConnect = () => finish();
    client.on('connect', onConnect);
    client.on('error', onError);
    signal.addEventListener('abort', onConnect, { once: true });
  });
}
