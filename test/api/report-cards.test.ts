import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { at, batch, deviceOnVehicle, drive, feed } from '../db/trips.fixtures.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const setup = () => deviceOnVehicle(t);

describe('report cards API', () => {
  it('gives each completed trip a report card: lists, by id, the trip\'s current one and the overall grade', async () => {
    const { app, device, vehicle } = await setup();
    await feed(t, device.id, drive(0, 900, 50), 50); // 12 km, no events: A
    const short = drive(2000, 40, 20); // too short: I
    await batch(t, { [device.id]: short });
    const list = (await t.get(`/api/v1/devices/${device.id}/report_cards`, app.auth)).json();
    expect(list.reportCards.map((c: any) => c.grade)).toEqual(['I', 'A']);
    const [, a] = list.reportCards;
    expect(a.vehicleId).toBe(vehicle.id);
    expect((await t.get(a.links.self, app.auth)).json().reportCard).toEqual(a);
    const current = await t.get(`/api/v1/trips/${a.tripId}/report_cards/_current`, app.auth);
    expect(current.json().reportCard).toEqual(a);
    expect((await t.get(`/api/v1/vehicles/${vehicle.id}/report_cards`, app.auth)).json().reportCards).toHaveLength(2);
    const overall = (await t.get(`/api/v1/devices/${device.id}/report_cards/overall`, app.auth)).json();
    expect(overall).toEqual({ reportCard: { overallGrade: 'A' }, tripSampleSize: 2, gradeCount: { A: '1', B: '0', C: '0', D: '0', F: '0', I: '1' } });
    const segment = (await t.get(`/api/v1/devices/${device.id}/report_cards/overall?since=${at(1000).getTime()}`, app.auth)).json();
    expect(segment.tripSampleSize).toBe(1);
    expect(segment.reportCard.overallGrade).toBe('I');
    expect(segment.gradeCount.A).toBe('1');
  });
});
