import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { loadConfig } from './config.ts';
import { chooseLogFormat, prettyDestination, prettyLine } from './logger.ts';

const at = (hh: number, mm: number, ss: number) => new Date(2026, 0, 2, hh, mm, ss).getTime();

describe('log formats', () => {
  it('LOG_FORMAT decides; unset, a terminal gets pretty lines and anything else JSON', () => {
    assert.equal(chooseLogFormat(undefined, true), 'pretty');
    assert.equal(chooseLogFormat(undefined, false), 'json');
    assert.equal(chooseLogFormat('json', true), 'json');
    assert.equal(chooseLogFormat('pretty', false), 'pretty');
    assert.equal(loadConfig({}).logFormat, undefined);
    assert.equal(loadConfig({ LOG_FORMAT: 'json' }).logFormat, 'json');
    assert.throws(() => loadConfig({ LOG_FORMAT: 'xml' }), /LOG_FORMAT must be json or pretty, got "xml"/);
  });

  it('a pretty line: time, level, message, then the fields as key=value, quoted only when they need it', () => {
    const line = prettyLine({ level: 30, time: at(9, 41, 7), service: 'plinth', msg: 'step failed', runId: 'r1', stepName: 'Apply it', retryAttempt: 0 });
    assert.equal(line, '09:41:07 INFO  step failed runId=r1 stepName="Apply it" retryAttempt=0\n');
  });

  it('control characters a tenant put in a name or a message reach the terminal only as visible \\u00XX text', () => {
    const line = prettyLine({
      level: 30,
      time: at(9, 0, 0),
      msg: 'step \u001b[2J started',
      stepName: '\u001b]0;owned\u0007',
      stackName: 'a\u009bb',
      err: { message: 'x\u001b[8m' },
    });
    assert.doesNotMatch(line, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    assert.equal(line, '09:00:00 INFO  step \\u001b[2J started stepName="\\u001b]0;owned\\u0007" stackName="a\\u009bb" error="x\\u001b[8m"\n');
  });

  it("an error's message ends the line; its stack follows only at error level and above", () => {
    const err = { message: 'connection refused', stack: 'Error: connection refused\n    at connect (net.js:1:1)' };
    assert.equal(
      prettyLine({ level: 40, time: at(9, 0, 0), msg: 'retrying', attempt: 2, err }),
      '09:00:00 WARN  retrying attempt=2 error="connection refused"\n',
    );
    assert.equal(
      prettyLine({ level: 50, time: at(9, 0, 0), msg: 'failed', err }),
      '09:00:00 ERROR failed error="connection refused"\n    Error: connection refused\n        at connect (net.js:1:1)\n',
    );
  });

  it('a pino logger writing to the pretty destination writes one pretty line per call', () => {
    const written: string[] = [];
    const log = pino(
      { level: 'info', base: { service: 'plinth' } },
      prettyDestination((line) => written.push(line)),
    );
    log.info({ signal: 'SIGINT' }, 'stopped');
    log.debug('not at info');
    assert.equal(written.length, 1);
    assert.match(written[0], /^\d\d:\d\d:\d\d INFO {2}stopped signal=SIGINT\n$/);
  });
});
