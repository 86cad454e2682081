import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { detectDelivery, parsePush, touches, verifyDelivery } from './push-events.ts';

const body = Buffer.from('{"ref":"refs/heads/main"}');
const sign = (secret: string) => createHmac('sha256', secret).update(body).digest('hex');

describe('push webhook events', () => {
  it("tells Gitea from GitHub by its own header, though Gitea sends GitHub's too", () => {
    assert.equal(detectDelivery({ 'x-github-event': 'push', 'x-gitea-event': 'push', 'x-gitea-delivery': 'd1' })?.provider, 'GITEA');
    assert.equal(detectDelivery({ 'x-github-event': 'push', 'x-github-delivery': 'd2' })?.provider, 'GITHUB');
    assert.equal(detectDelivery({ 'x-gitlab-event': 'Push Hook', 'x-gitlab-event-uuid': 'd3' })?.deliveryId, 'd3');
    assert.equal(detectDelivery({ 'x-bitbucket-event': 'push' }), undefined);
  });

  it('verifies HMAC-SHA256 over the raw bytes (GitHub, Gitea) and the token itself (GitLab)', () => {
    const gh = detectDelivery({ 'x-github-event': 'push' })!;
    assert.equal(verifyDelivery(gh, { 'x-hub-signature-256': `sha256=${sign('s')}` }, body, 's'), true);
    assert.equal(verifyDelivery(gh, { 'x-hub-signature-256': `sha256=${sign('t')}` }, body, 's'), false);
    assert.equal(verifyDelivery(gh, {}, body, 's'), false);
    const gitea = detectDelivery({ 'x-gitea-event': 'push' })!;
    assert.equal(verifyDelivery(gitea, { 'x-gitea-signature': sign('s') }, body, 's'), true);
    assert.equal(verifyDelivery(gitea, { 'x-hub-signature-256': `sha256=${sign('s')}` }, body, 's'), false);
    const gl = detectDelivery({ 'x-gitlab-event': 'Push Hook' })!;
    assert.equal(verifyDelivery(gl, { 'x-gitlab-token': 's' }, body, 's'), true);
    assert.equal(verifyDelivery(gl, { 'x-gitlab-token': 's2' }, body, 's'), false);
  });

  it('reads a branch push with its paths; tags, deletions and other events are not pushes', () => {
    const sha = 'a'.repeat(40);
    const gh = detectDelivery({ 'x-github-event': 'push' })!;
    const push = parsePush(gh, {
      ref: 'refs/heads/main',
      after: sha,
      head_commit: { message: 'fix\nmore', author: { name: 'Ada' } },
      commits: [{ added: ['stacks/app/a.tf'], modified: ['README.md'] }],
    });
    assert.deepEqual(push, { branch: 'main', commitSha: sha, author: 'Ada', message: 'fix', changedPaths: ['stacks/app/a.tf', 'README.md'] });
    assert.equal(touches(push!, 'stacks/app'), true);
    assert.equal(touches(push!, 'stacks/other'), false);
    assert.equal(touches(push!, ''), true);
    assert.equal(parsePush(gh, { ref: 'refs/tags/v1', after: sha }), undefined);
    assert.equal(parsePush(gh, { ref: 'refs/heads/main', after: '0'.repeat(40) }), undefined);
    assert.equal(parsePush(detectDelivery({ 'x-github-event': 'ping' })!, { ref: 'refs/heads/main', after: sha }), undefined);
    const gl = parsePush(detectDelivery({ 'x-gitlab-event': 'Push Hook' })!, {
      ref: 'refs/heads/dev',
      after: sha,
      user_name: 'Grace',
      total_commits_count: 30,
      commits: [{ id: sha, message: 'm', author: { name: 'Grace' }, added: ['x'] }],
    });
    assert.equal(gl?.changedPaths, null, 'GitLab lists 20 of 30 commits: the paths are unknown');
    assert.equal(touches(gl!, 'anything'), true);
  });
});
