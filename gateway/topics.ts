// Topic policy: a device publishes only to its frames topic and its replies to commands, and subscribes only to its
// commands. Nothing else
// under devices/<its id>/ is read by the platform, and whatever the broker took there it would route (with Redis, to
// every gateway) outside the rate limit, which applies to frames. Ids are compared in lower case, as the platform issues them; a device that logs in with an
// upper-case id may publish under either spelling, and subscribes to the lower-case commands topic.

export const framesTopic = (deviceId: string) => `devices/${deviceId}/frames`;
export const commandsTopic = (deviceId: string) => `devices/${deviceId}/commands`;
export const responsesTopic = (deviceId: string) => `devices/${deviceId}/responses`;

/** The part of a topic under devices/<deviceId>/, or null when the topic is not under it. */
function under(deviceId: string, topic: string): string | null {
  const prefix = `devices/${deviceId}/`;
  return topic.slice(0, prefix.length).toLowerCase() === prefix.toLowerCase() ? topic.slice(prefix.length) : null;
}

/**
 * What a device's PUBLISH is: `frames` on exactly its frames topic, `responses` on exactly its replies' topic (its
 * id in either case; the last level as spelled), null on any other topic.
 */
export function publishKind(deviceId: string, topic: string): 'frames' | 'responses' | null {
  const rest = under(deviceId, topic);
  return rest === 'frames' || rest === 'responses' ? rest : null;
}

/** Exactly the commands topic: no wildcards, no other device's. */
export function maySubscribe(deviceId: string, topic: string): boolean {
  return topic === commandsTopic(deviceId);
}

/**
 * A topic as logs and dead letters keep it: at most `maxBytes` bytes' worth of characters, and the whole length
 * when it was longer. A topic may be 65,535 bytes, and a log line or dead letter should stay one readable line.
 */
export function clipTopic(topic: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(topic);
  return bytes <= maxBytes ? topic : `${Buffer.from(topic).subarray(0, maxBytes).toString()}… (${bytes} bytes)`;
}
