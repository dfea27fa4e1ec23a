import type { App, RequestOf } from '../../context.js';
import { Type } from 'typebox';
import { NotFound } from '../../../lib/errors.js';
import { ruleCopy, ruleSummary } from '../../../db/rules/rule-copy.js';
import { DeviceIdParams, errorResponses, NoContent, OffsetQuery } from '../../schemas/common.js';
import { offsetMeta, parseOffsetWindow } from '../../plugins/pagination.js';
import { CreateRuleBody, RuleIdParams, RuleList, RuleResponse } from './rules.schemas.js';
import { validateRule } from './rules.service.js';

/** Rules (docs/concepts/rules-events-webhooks.md): per device, owned by the application that created them; immutable. */
export default async function rulesRoutes(app: App) {
  const { repos, db } = app.deps;
  const config = { service: 'rule' as const };
  const url = app.links.url;
  const readableDevice = async (request: RequestOf<{ params: typeof DeviceIdParams }>) => {
    const { deviceId } = request.params;
    await repos.devices.requireReadable(request.principal!, deviceId);
    return deviceId;
  };

  app.post('/api/v1/devices/:deviceId/rules', {
    config,
    schema: {
      tags: ['rules'], summary: 'Create a rule on a device', params: DeviceIdParams, body: CreateRuleBody,
      response: { 201: RuleResponse, ...errorResponses(404, 415) },
    },
  }, async (request, reply) => {
    const deviceId = await readableDevice(request);
    const input = await validateRule(request.body.rule, repos.rules);
    const rule = await db.knex.transaction((trx) => repos.rules.create(request.principal!.id, deviceId, input, trx));
    const body = { rule: ruleCopy(url, rule) };
    reply.code(201).header('Location', body.rule.links.self);
    return body;
  });

  app.get('/api/v1/devices/:deviceId/rules', {
    config,
    schema: {
      tags: ['rules'], summary: "The calling application's rules of a device, newest first, without boundaries",
      params: DeviceIdParams, querystring: Type.Object(OffsetQuery), response: { 200: RuleList, ...errorResponses(404) },
    },
  }, async (request) => {
    const deviceId = await readableDevice(request);
    const w = parseOffsetWindow(request.query);
    const { total, rules } = await repos.rules.list(request.principal!, deviceId, w);
    return {
      rules: rules.map((r) => ruleSummary(url, r)),
      meta: offsetMeta(app.links, 'rule', `/api/v1/devices/${deviceId}/rules`, { total, ...w }),
    };
  });

  app.get('/api/v1/rules/:ruleId', {
    config,
    schema: {
      tags: ['rules'], summary: 'One rule with its boundaries and state', params: RuleIdParams,
      response: { 200: RuleResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const rule = await repos.rules.get(request.principal!, request.params.ruleId);
    if (!rule) throw new NotFound();
    return { rule: ruleCopy(url, rule) };
  });

  app.delete('/api/v1/rules/:ruleId', {
    config,
    schema: {
      tags: ['rules'], summary: 'Delete a rule (rules are immutable: delete and create to change one)', params: RuleIdParams,
      response: { 204: NoContent('Deleted'), ...errorResponses(404) },
    },
  }, async (request, reply) => {
    const deleted = await db.knex.transaction((trx) => repos.rules.delete(request.principal!, request.params.ruleId, trx));
    if (!deleted) throw new NotFound();
    return reply.code(204).send();
  });
}
