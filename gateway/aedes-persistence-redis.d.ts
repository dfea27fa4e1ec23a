// aedes-persistence-redis ships no type declarations: the part of its API the gateway uses.
declare module 'aedes-persistence-redis' {
  import type { Redis } from 'ioredis';

  /** An Aedes persistence; the broker calls the rest of its methods. */
  export interface RedisPersistence {
    destroy(): Promise<void>;
  }

  /** `conn`: an ioredis connection to use (its keyPrefix applies); otherwise ioredis options. */
  export default function aedesPersistenceRedis(opts?: { conn?: Redis; maxSessionDelivery?: number }): RedisPersistence;
}
