import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { userCaller } from './helpers/callers.ts';
import { consoleBrowser } from './helpers/console.ts';
import { createStack, pipelineConfig, startEngineTestApp, type EngineTestApp } from './helpers/engine.ts';

describe('the console pipeline pages', () => {
  let t: EngineTestApp;
  let orgId: string;
  let cookie: string;
  let pipelineId: string;
  const browser = consoleBrowser(() => t.app);
  const { request, signIn } = browser;

  before(async () => {
    t = await startEngineTestApp();
    orgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
    cookie = (await signIn(t.adminToken)).cookie!;
    pipelineId = (await createStack(t, [{ id: 'build', command: 'echo one' }])).changePipelineId;
  });
  after(async () => t?.close());

  const pageUrl = () => `/orgs/${orgId}/pipelines/${pipelineId}`;
  const post = (form: Record<string, string>, as = cookie) => browser.submit(pageUrl(), `${pageUrl()}/versions`, form, as);
  const latestVersion = async () => (await t.call('GET', `/pipelines/${pipelineId}`)).body.data.latestVersion;

  it('lists pipelines and shows the latest version of one as JSON to edit', async () => {
    const list = await request('GET', `/orgs/${orgId}/pipelines`, { cookie });
    assert.equal(list.status, 200);
    assert.ok(list.body.includes(`href="${pageUrl()}"`));
    const page = await request('GET', pageUrl(), { cookie });
    assert.match(page.body, new RegExp(`<h1>[^<]+ <span class="copy-buttons"><button[^>]*data-copy="${pipelineId}"`));
    assert.match(
      page.body,
      /<textarea id="pipeline-config" name="config"[^>]*>\{\n {2}&quot;steps&quot;|<textarea id="pipeline-config" name="config"[^>]*>\{\n {2}"steps"/,
    );
    assert.match(page.body, /Preview changes/);
    assert.doesNotMatch(page.body, /Save version/, 'saving comes after a preview');
  });

  it('previews a new version against the latest, creating nothing, then saves it', async () => {
    const config = JSON.stringify(pipelineConfig([{ id: 'build', command: 'echo two' }]));
    const preview = await post({ config, intent: 'preview' });
    assert.equal(preview.status, 200);
    assert.match(preview.body, /Changes against version 1/);
    assert.match(preview.body, /echo one[\s\S]*echo two/);
    assert.match(preview.body, /Save version 2/);
    assert.equal(await latestVersion(), 1, 'a preview creates nothing');
    const saved = await post({ config, intent: 'save' });
    assert.equal(saved.status, 303);
    assert.equal(await latestVersion(), 2);
    // A config far beyond the console's usual 16 KiB form, URL-encoded (every quote and brace escaped).
    const large = JSON.stringify(pipelineConfig(Array.from({ length: 60 }, (_, i) => ({ id: `s${i}`, command: `echo "${'{x}'.repeat(150)}"` }))));
    assert.ok(large.length > 30_000);
    const previewed = await post({ config: large, intent: 'preview' });
    assert.equal(previewed.status, 200, previewed.body.slice(0, 300));
    assert.match(previewed.body, /Changes against version 2/);
    const again = await post({ config, intent: 'preview' });
    assert.match(again.body, /None: this is the latest version as it is/);
    assert.doesNotMatch(again.body, /Save version/);
  });

  it('shows what is wrong with a config above the editor, keeping the text, and shows a VIEWER no editor', async () => {
    const malformed = await post({ config: '{"steps": [', intent: 'preview' });
    assert.equal(malformed.status, 400);
    assert.match(malformed.body, /The config is not valid JSON/);
    assert.ok(malformed.body.includes('{&quot;steps&quot;: [</textarea>') || malformed.body.includes('{"steps": [</textarea>'));
    const cyclic = JSON.stringify(
      pipelineConfig([
        { id: 'a', command: 'true', needs: ['b'] },
        { id: 'b', command: 'true', needs: ['a'] },
      ]),
    );
    const invalid = await post({ config: cyclic, intent: 'save' });
    assert.equal(invalid.status, 422);
    assert.match(invalid.body, /<div class="error" role="alert"><p>[^<]+<\/p><ul><li>/);
    assert.equal(await latestVersion(), 2);

    const viewer = await userCaller(t, 'pipeline-viewer@example.com', 'VIEWER');
    const session = (await signIn(viewer.token)).cookie!;
    const seen = await request('GET', pageUrl(), { cookie: session });
    assert.doesNotMatch(seen.body, /<textarea|Preview changes/);
    assert.match(seen.body, /<pre class="mono">/);
    assert.equal((await post({ config: '{}', intent: 'preview' }, session)).status, 403);
  });
});
