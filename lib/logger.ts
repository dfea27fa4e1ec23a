import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(level = 'info', destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'drivewire' } }, destination);
}

export const silentLogger: Logger = pino({ level: 'silent' });
