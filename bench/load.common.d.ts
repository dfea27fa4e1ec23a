// Types of load.common.js (plain JavaScript: its worker threads and child processes start outside tsx's loader).
import type { MqttClient } from 'mqtt';

export function frame(deviceIndex: number, seq: number, frameBytes?: number): string;
export function frameBody(deviceIndex: number, seq: number, ts: number, frameBytes?: number): Record<string, unknown>;
export function connect(url: string, device: { id: string; secret: string }, options?: Record<string, unknown>): Promise<MqttClient>;
export function threadCpu(): { user: number; system: number } | null;
export function cpuSince(a: { user: number; system: number } | null, b?: { user: number; system: number } | null): { user: number; system: number } | null;
export function bounded(n: number, inflight: number, run: (i: number) => Promise<unknown>): Promise<void>;
export function connectEach<D extends { id: string; secret: string }>(url: string, devices: D[], parallel: number,
  setUp: (client: MqttClient, device: D) => Promise<void>): Promise<{ failed: number; firstError: string | null }>;
