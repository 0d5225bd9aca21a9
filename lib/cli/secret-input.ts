/**
 * Reading a secret's value for `pipegate secrets set`: never from argv (it would sit in the
 * shell history and in every process listing). From a terminal, a prompt that does not echo;
 * from a pipe or a file, everything read, without its final line break.
 */
import type { Stream } from './output';

export interface SecretSource {
  isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
  setEncoding(encoding: BufferEncoding): unknown;
  on(event: 'data', fn: (chunk: string) => void): unknown;
  on(event: 'end' | 'close', fn: () => void): unknown;
  on(event: 'error', fn: (e: Error) => void): unknown;
  removeAllListeners(event?: string): unknown;
  resume(): unknown;
  pause(): unknown;
}

const CTRL_C = '\u0003';
const CTRL_D = '\u0004';
const BACKSPACES = ['\u007f', '\b'];

/** Reads one secret value from `input`; `prompt` is shown on `prompts` when it is a terminal. */
export function readSecret(input: SecretSource, prompts: Stream, prompt: string): Promise<string> {
  return input.isTTY === true && typeof input.setRawMode === 'function' ? readHidden(input, prompts, prompt) : readAll(input);
}

function readAll(input: SecretSource): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    input.setEncoding('utf8');
    input.on('data', (chunk) => {
      text += chunk;
    });
    input.on('error', reject);
    input.on('end', () => resolve(text.replace(/\r?\n$/, '')));
    input.resume();
  });
}

function readHidden(input: SecretSource, prompts: Stream, prompt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let value = '';
    prompts.write(prompt);
    input.setRawMode?.(true);
    input.setEncoding('utf8');
    const done = (error: Error | null) => {
      input.setRawMode?.(false);
      input.removeAllListeners('data');
      input.pause();
      prompts.write('\n');
      if (error) reject(error);
      else resolve(value);
    };
    input.on('data', (chunk) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === CTRL_D) return done(null);
        if (ch === CTRL_C) return done(new Error('cancelled'));
        if (BACKSPACES.includes(ch)) value = value.slice(0, -1);
        else value += ch;
      }
    });
    input.resume();
  });
}
