import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { terminalLines, terminalSafe } from './output.ts';

describe('terminalSafe', () => {
  it('turns every control character into a visible \\xNN, so a hostile name cannot drive the terminal', () => {
    assert.equal(terminalSafe('ok\u001b]0;pwned\u0007name'), 'ok\\x1b]0;pwned\\x07name');
    assert.equal(terminalSafe('a\u001b[2Jb\u009bc\rd'), 'a\\x1b[2Jb\\x9bc\\x0dd');
    assert.equal(terminalSafe('tab\tstays'), 'tab\tstays');
  });

  it('keeps colour sequences of log lines only when asked, and drops them otherwise', () => {
    assert.equal(terminalSafe('\u001b[32m+ create\u001b[0m'), '+ create');
    assert.equal(terminalSafe('\u001b[32m+ create\u001b[0m', true), '\u001b[32m+ create\u001b[0m\u001b[0m');
    assert.equal(terminalSafe('\u001b[32mx\u001b[2K', true), '\u001b[32mx\\x1b[2K\u001b[0m');
  });

  it('a kept colour cannot hide or blink text, nor outlive its line', () => {
    assert.equal(terminalSafe('\u001b[8;30msecret', true), '\u001b[30msecret\u001b[0m');
    assert.equal(terminalSafe('\u001b[5mblink', true), '\u001b[mblink\u001b[0m');
    assert.equal(terminalSafe('plain', true), 'plain', 'no reset where nothing was coloured');
  });

  it('terminalLines keeps the line breaks of a message and makes each line safe', () => {
    assert.equal(terminalLines('first\nsecond\u001b[2J\r\nthird'), 'first\nsecond\\x1b[2J\nthird');
  });
});
