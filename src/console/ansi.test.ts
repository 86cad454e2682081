import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ansiSpans } from './ansi.ts';

const ESC = '\x1b';

describe('ansiSpans', () => {
  it('keeps a line without escapes as one plain span', () => {
    assert.deepEqual(ansiSpans('Plan: 1 to add'), [{ text: 'Plan: 1 to add', classes: '' }]);
  });

  it('turns colour and weight codes into classes, and a reset back into plain text', () => {
    assert.deepEqual(ansiSpans(`${ESC}[1;32m+${ESC}[0m create`), [
      { text: '+', classes: 'a-fg2 a-b' },
      { text: ' create', classes: '' },
    ]);
    assert.deepEqual(ansiSpans(`${ESC}[91mbright${ESC}[39m ${ESC}[44mon blue${ESC}[m`), [
      { text: 'bright', classes: 'a-fg9' },
      { text: ' ', classes: '' },
      { text: 'on blue', classes: 'a-bg4' },
    ]);
  });

  it('brings 256-colour and true-colour codes to the nearest of the 16 colours', () => {
    assert.deepEqual(ansiSpans(`${ESC}[38;5;196mred${ESC}[38;2;0;0;250mblue${ESC}[48;5;2mgreen bg`), [
      { text: 'red', classes: 'a-fg9' },
      { text: 'blue', classes: 'a-fg4' },
      { text: 'green bg', classes: 'a-fg4 a-bg2' },
    ]);
    assert.deepEqual(ansiSpans(`${ESC}[38:5:244mgrey`), [{ text: 'grey', classes: 'a-fg8' }]);
  });

  it('drops escapes that are not colours: cursor moves, erases, window titles and links', () => {
    assert.deepEqual(ansiSpans(`${ESC}[2K${ESC}[1Aa${ESC}]0;title${ESC}\\b${ESC}]8;;https://x.test${ESC}\\c${ESC}]8;;${ESC}\\`), [
      { text: 'abc', classes: '' },
    ]);
  });

  it('shows what a progress bar left after its last carriage return', () => {
    assert.deepEqual(ansiSpans('10%\r50%\r100%\r'), [{ text: '100%', classes: '' }]);
  });

  it('never lets a malformed escape swallow the text after it', () => {
    assert.deepEqual(ansiSpans(`a${ESC}[38;5mb${ESC}`), [{ text: 'ab', classes: '' }]);
    assert.deepEqual(ansiSpans(`${ESC}]unterminated title`), []);
  });
});
