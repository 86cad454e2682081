import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RuleViolationError } from '../platform/errors.ts';
import { parsePipelineConfig, pipelineConfigProblems } from './pipeline-config.validate.ts';

const script = (id: string, extra: Record<string, unknown> = {}) => ({ id, name: id.toUpperCase(), type: 'script', with: { command: 'true' }, ...extra });
const problemsOf = (...steps: unknown[]) => pipelineConfigProblems({ steps });

describe('parsePipelineConfig', () => {
  it('returns a valid config with only the known fields, as a copy', () => {
    const raw = {
      steps: [
        script('plan', { retry: { maxAttempts: 2 }, timeoutSeconds: 60 }),
        { id: 'approve', name: 'Approve', type: 'approval', needs: ['plan'], with: { message: 'Look at the plan' } },
        { id: 'apply', name: 'Apply', type: 'opentofu.apply', needs: ['approve'], with: { workingDirectory: 'infra', variables: { region: 'eu' } } },
      ],
    };
    const config = parsePipelineConfig(raw);
    assert.deepEqual(config, raw);
    assert.notEqual(config.steps[2].with, raw.steps[2].with);
  });

  it('throws a 422 Api:PipelineConfig:INVALID listing every problem', () => {
    const error = (() => {
      try {
        parsePipelineConfig({ steps: [{ id: 'a', type: 'nope' }, script('a')] });
      } catch (e) {
        return e;
      }
    })();
    assert.ok(error instanceof RuleViolationError);
    assert.equal(error.status, 422);
    assert.equal(error.code, 'Api:PipelineConfig:INVALID');
    assert.equal(error.message, 'The pipeline config has 3 problems');
    assert.deepEqual(error.details?.[0].items, [
      'config/steps/0/name: is required',
      'config/steps/0/type: unknown step type "nope" (known: approval, script, opentofu.plan, opentofu.apply, opentofu.destroy, module.deploy)',
      'config/steps/1/id: duplicate step id "a" (first used by config/steps/0)',
    ]);
  });
});

describe('pipelineConfigProblems', () => {
  it('a config that is not an object is refused', () => {
    for (const raw of [null, 'steps', 3, [script('a')]]) {
      assert.deepEqual(pipelineConfigProblems(raw), ['config: must be an object with a `steps` array']);
    }
  });

  it('steps must be present, an array, and not empty; other top-level fields are unknown', () => {
    assert.deepEqual(pipelineConfigProblems({}), ['config/steps: is required']);
    assert.deepEqual(pipelineConfigProblems({ steps: {} }), ['config/steps: must be an array']);
    assert.deepEqual(pipelineConfigProblems({ steps: [] }), ['config/steps: must hold at least one step']);
    assert.deepEqual(pipelineConfigProblems({ steps: [script('a')], stages: [] }), ['config/stages: unknown field']);
  });

  it('refuses more than 100 steps', () => {
    const steps = Array.from({ length: 101 }, (_, i) => script(`s${i}`));
    assert.deepEqual(pipelineConfigProblems({ steps }), ['config/steps: must hold at most 100 steps, has 101']);
  });

  it('a step must be an object', () => {
    assert.deepEqual(problemsOf('build'), ['config/steps/0: must be an object']);
  });

  it('a step id is required and must be a GivenId', () => {
    const { id: _id, ...noId } = script('x');
    assert.deepEqual(problemsOf(noId), ['config/steps/0/id: is required']);
    assert.deepEqual(problemsOf({ ...script('x'), id: 7 }), ['config/steps/0/id: must be a string']);
    for (const bad of ['', '-lead', 'has space', 'a'.repeat(61)]) {
      assert.deepEqual(problemsOf({ ...script('x'), id: bad }), [
        'config/steps/0/id: must be 1 to 60 letters, digits, "_" or "-", starting with a letter or digit',
      ]);
    }
  });

  it('step ids must be unique', () => {
    assert.deepEqual(problemsOf(script('a'), script('b'), script('a')), ['config/steps/2/id: duplicate step id "a" (first used by config/steps/0)']);
  });

  it('a step name is required, non-empty and bounded', () => {
    assert.deepEqual(problemsOf({ ...script('a'), name: undefined }), ['config/steps/0/name: is required']);
    assert.deepEqual(problemsOf({ ...script('a'), name: '  ' }), ['config/steps/0/name: must be a non-empty string']);
    assert.deepEqual(problemsOf({ ...script('a'), name: 'n'.repeat(256) }), ['config/steps/0/name: must be at most 255 characters']);
  });

  it('a step type is required and must be known', () => {
    assert.deepEqual(problemsOf({ ...script('a'), type: undefined }), ['config/steps/0/type: is required']);
    assert.match(problemsOf({ ...script('a'), type: 'docker' })[0], /^config\/steps\/0\/type: unknown step type "docker" \(known: approval, script/);
  });

  it('needs must name other, existing steps, each once', () => {
    assert.deepEqual(problemsOf(script('a', { needs: 'b' })), ['config/steps/0/needs: must be an array of step ids']);
    assert.deepEqual(problemsOf(script('a'), script('b', { needs: ['a', 3, 'ghost', 'b', 'a'] })), [
      'config/steps/1/needs/1: must be a step id (string)',
      'config/steps/1/needs/2: unknown step "ghost"',
      'config/steps/1/needs/3: a step cannot need itself ("b")',
      'config/steps/1/needs/4: "a" is listed twice',
    ]);
  });

  it('a cycle is reported with the steps along it', () => {
    assert.deepEqual(problemsOf(script('a', { needs: ['c'] }), script('b', { needs: ['a'] }), script('c', { needs: ['b'] }), script('d', { needs: ['a'] })), [
      'config/steps: cycle in needs: "a" → "c" → "b" → "a"',
    ]);
  });

  it('each separate cycle is reported', () => {
    const problems = problemsOf(script('a', { needs: ['b'] }), script('b', { needs: ['a'] }), script('c', { needs: ['d'] }), script('d', { needs: ['c'] }));
    assert.equal(problems.length, 2);
    assert.ok(problems.every((p) => p.startsWith('config/steps: cycle in needs: ')));
  });

  it('a duplicated id does not hide a cycle through the original step', () => {
    const problems = problemsOf(script('a', { needs: ['b'] }), script('b', { needs: ['a'] }), script('a'));
    assert.ok(problems.includes('config/steps: cycle in needs: "a" → "b" → "a"'));
  });

  it('retry.maxAttempts must be an integer from 1 to 10, and retry takes nothing else', () => {
    for (const bad of [0, 11, 2.5, '3']) {
      assert.deepEqual(problemsOf(script('a', { retry: { maxAttempts: bad } })), ['config/steps/0/retry/maxAttempts: must be an integer from 1 to 10']);
    }
    assert.deepEqual(problemsOf(script('a', { retry: {} })), ['config/steps/0/retry/maxAttempts: is required']);
    assert.deepEqual(problemsOf(script('a', { retry: 3 })), ['config/steps/0/retry: must be an object such as {"maxAttempts": 3}']);
    assert.deepEqual(problemsOf(script('a', { retry: { maxAttempts: 1, backoff: 5 } })), [
      'config/steps/0/retry/backoff: unknown field (allowed: maxAttempts)',
    ]);
    assert.deepEqual(problemsOf(script('a', { retry: { maxAttempts: 10 } })), []);
  });

  it('timeoutSeconds must be an integer from 1 to 86400', () => {
    for (const bad of [0, 86401, 1.5, '60']) {
      assert.deepEqual(problemsOf(script('a', { timeoutSeconds: bad })), ['config/steps/0/timeoutSeconds: must be an integer from 1 to 86400']);
    }
    assert.deepEqual(problemsOf(script('a', { timeoutSeconds: 86400 })), []);
  });

  it('unknown keys on a step are refused', () => {
    assert.deepEqual(problemsOf(script('a', { when: 'always' })), [
      'config/steps/0/when: unknown field (allowed: id, name, type, needs, with, retry, timeoutSeconds)',
    ]);
  });

  it('every problem of every step is listed together', () => {
    const problems = problemsOf({ id: 'a', type: 'script' }, { id: 'a', name: 'B', type: 'script', with: { command: 'x' }, needs: ['z'] });
    assert.equal(problems.length, 4);
  });
});

describe('the `with` of each step type', () => {
  const withOf = (type: string, value: unknown) => problemsOf({ id: 's', name: 'S', type, ...(value === undefined ? {} : { with: value }) });

  it('script needs a non-empty command', () => {
    assert.deepEqual(withOf('script', undefined), ['config/steps/0/with/command: is required']);
    assert.deepEqual(withOf('script', { command: '' }), ['config/steps/0/with/command: must be a non-empty string']);
    assert.deepEqual(withOf('script', { command: ['ls'] }), ['config/steps/0/with/command: must be a non-empty string']);
    assert.deepEqual(withOf('script', 'ls'), ['config/steps/0/with: must be an object']);
  });

  it('script takes env (names to strings) and a relative workingDirectory', () => {
    assert.deepEqual(withOf('script', { command: 'ls', env: { A_1: 'x' }, workingDirectory: 'sub/dir' }), []);
    assert.deepEqual(withOf('script', { command: 'ls', env: { 'BAD-NAME': 'x', N: 1 } }), [
      'config/steps/0/with/env: "BAD-NAME" is not a valid variable name; "N" must be a string',
    ]);
    assert.deepEqual(withOf('script', { command: 'ls', env: ['A=1'] }), ['config/steps/0/with/env: must be an object of variable names to string values']);
    assert.deepEqual(withOf('script', { command: 'ls', workingDirectory: '/etc' }), [
      "config/steps/0/with/workingDirectory: must be relative to the run's working directory",
    ]);
    assert.deepEqual(withOf('script', { command: 'ls', workingDirectory: 'a/../../b' }), [
      'config/steps/0/with/workingDirectory: must not contain ".." segments',
    ]);
  });

  it('script refuses unknown with fields', () => {
    assert.deepEqual(withOf('script', { command: 'ls', shell: 'zsh' }), [
      'config/steps/0/with/shell: unknown field for a script step (allowed: command, env, workingDirectory)',
    ]);
  });

  it('approval takes nothing but an optional message', () => {
    assert.deepEqual(withOf('approval', undefined), []);
    assert.deepEqual(withOf('approval', { message: 'Check the plan' }), []);
    assert.deepEqual(withOf('approval', { message: '' }), ['config/steps/0/with/message: must be a non-empty string']);
    assert.deepEqual(withOf('approval', { approvers: ['me'] }), ['config/steps/0/with/approvers: unknown field for an approval step (allowed: message)']);
  });

  it('opentofu steps take workingDirectory and a variables object', () => {
    for (const type of ['opentofu.plan', 'opentofu.apply', 'opentofu.destroy']) {
      assert.deepEqual(withOf(type, undefined), []);
      assert.deepEqual(withOf(type, { workingDirectory: 'infra', variables: { count: 2, tags: { a: 'b' } } }), []);
      assert.deepEqual(withOf(type, { variables: ['a'] }), ['config/steps/0/with/variables: must be an object of variable names to values']);
      assert.deepEqual(withOf(type, { command: 'x' }), [
        `config/steps/0/with/command: unknown field for an ${type} step (allowed: workingDirectory, variables)`,
      ]);
    }
  });

  it('module.deploy needs a moduleInstanceId', () => {
    assert.deepEqual(withOf('module.deploy', undefined), ['config/steps/0/with/moduleInstanceId: is required']);
    assert.deepEqual(withOf('module.deploy', { moduleInstanceId: 42 }), ['config/steps/0/with/moduleInstanceId: must be a non-empty string']);
    assert.deepEqual(withOf('module.deploy', { moduleInstanceId: 'mi_1' }), []);
  });
});
