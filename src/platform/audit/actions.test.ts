import { createHash } from 'node:crypto';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { auditSpecOf, singular } from './actions.ts';
import { canonicalJson, chainHash, chainHashParts, type ChainedFields } from './chain.ts';

describe('audit actions from the route table', () => {
  it('names creates, updates, deletes and verbs after the resource of the path', () => {
    assert.equal(auditSpecOf('POST', '/projects', undefined)?.action, 'project.create');
    assert.equal(auditSpecOf('PATCH', '/projects/:id', undefined)?.action, 'project.update');
    assert.equal(auditSpecOf('DELETE', '/default-value-definitions/:id', undefined)?.action, 'default-value-definition.delete');
    assert.equal(auditSpecOf('POST', '/pipeline-runs/:id/cancel', undefined)?.action, 'pipeline-run.cancel');
    assert.deepEqual(auditSpecOf('POST', '/api-keys', undefined), { action: 'api-key.create', resourceType: 'api-key', table: 'api_keys' });
  });

  it('leaves reads out unless they declare an action, and honours a declared name or opt-out', () => {
    assert.equal(auditSpecOf('GET', '/projects', undefined), undefined);
    assert.equal(auditSpecOf('GET', '/stacks/:id/state', 'state.download')?.action, 'state.download');
    assert.equal(auditSpecOf('POST', '/pipeline-step-executions/:id/approve', 'run.approve')?.action, 'run.approve');
    assert.equal(auditSpecOf('POST', '/x', false), undefined);
  });

  it('makes plurals singular', () => {
    assert.deepEqual(['policies', 'stacks', 'auth', 'access'].map(singular), ['policy', 'stack', 'auth', 'access']);
  });
});

describe('the audit hash chain', () => {
  const row: ChainedFields = {
    id: 'a',
    organizationId: 'o',
    seq: 1,
    createdAt: '2026-01-01T00:00:00.000Z',
    actorType: 'MEMBERSHIP',
    actorId: 'u',
    apiKeyId: 'k',
    action: 'project.create',
    resourceType: 'project',
    resourceId: 'p',
    outcome: 'SUCCESS',
    statusCode: null,
    errorCode: null,
    requestId: 'r',
    ip: '127.0.0.1',
    userAgent: 'ua',
    diff: { b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } },
  };

  it('does not depend on key order (jsonb reorders keys) but on every value', () => {
    assert.equal(canonicalJson({ b: 1, a: 2 }), canonicalJson({ a: 2, b: 1 }));
    const hash = chainHash('prev', row);
    assert.equal(chainHash('prev', { ...row, diff: { a: { c: null, d: [1, { y: 2, z: 1 }] }, b: 1 } }), hash);
    assert.notEqual(chainHash('prev', { ...row, outcome: 'DENIED' }), hash);
    assert.notEqual(chainHash('other', row), hash);
  });

  it('hashes the previous hash, a newline and the canonical JSON of the fields in order (the form stored chains were written in)', () => {
    const fields = [
      row.id,
      row.organizationId,
      row.seq,
      row.createdAt,
      row.actorType,
      row.actorId,
      row.apiKeyId,
      row.action,
      row.resourceType,
      row.resourceId,
      row.outcome,
      row.statusCode,
      row.errorCode,
      row.requestId,
      row.ip,
      row.userAgent,
      row.diff,
    ];
    assert.equal(
      chainHash('prev', row),
      createHash('sha256')
        .update(`prev\n${canonicalJson(fields)}`)
        .digest('hex'),
    );
    const { before, after } = chainHashParts(row);
    assert.equal(`${before}${row.seq}${after}`, canonicalJson(fields));
  });
});
