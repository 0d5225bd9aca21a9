/**
 * docs/cli.md covers the CLI whole: every command `--help` lists has a usage line
 * (`pipegate <command> …`) in a section of its own, and every option its `--help` lists is
 * named in that section; the global options in the paragraph that lists them.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Command, Help, Option } from 'commander';
import { buildProgram } from '../../../lib/cli/program';

const DOC = readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'cli.md'), 'utf8');

/** The document cut at its headings: each section's heading line and text. */
function sections(doc: string): string[] {
  const out: string[] = [];
  let current: string[] = [];
  let fenced = false;
  for (const line of doc.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    if (!fenced && /^#{1,3} /.test(line)) {
      out.push(current.join('\n'));
      current = [];
    }
    current.push(line);
  }
  out.push(current.join('\n'));
  return out;
}

interface Listed {
  path: string;
  options: string[];
}

/** Every command as `--help` lists it, with the flags of the options its own help lists. */
function listed(program: Command): { globals: string[]; commands: Listed[] } {
  const help: Help = program.createHelp();
  const flags = (o: Option) => [o.long, o.short].filter((f): f is string => f !== undefined && f !== '--help' && f !== '-h');
  const commands: Listed[] = [];
  const walk = (cmd: Command, prefix: string) => {
    for (const sub of help.visibleCommands(cmd)) {
      if (sub.name() === 'help') continue;
      const p = `${prefix}${sub.name()}`;
      const options = help.visibleOptions(sub).flatMap(flags);
      // A command with subcommands is used through them: its own line is what they cover.
      if (help.visibleCommands(sub).filter((s) => s.name() !== 'help').length === 0) commands.push({ path: p, options });
      walk(sub, `${p} `);
    }
  };
  walk(program, '');
  return { globals: help.visibleOptions(program).flatMap(flags), commands };
}

const program = buildProgram(
  { stdout: { write: () => true }, stderr: { write: () => true }, env: {}, cwd: process.cwd() } as unknown as Parameters<
    typeof buildProgram
  >[0],
  {},
  { code: 0 },
);

describe('docs/cli.md', () => {
  const { globals, commands } = listed(program);
  const docSections = sections(DOC);

  it('lists the commands it should: at least the ones the issue found missing', () => {
    const paths = commands.map((c) => c.path);
    expect(paths).toEqual(expect.arrayContaining(['consumers create', 'consumers list', 'keys limits', 'publish']));
    expect(commands.find((c) => c.path === 'publish')?.options).toEqual(expect.arrayContaining(['--form', '--no-form', '--form-title']));
  });

  it.each(commands.map((c) => [c.path, c] as const))('has a section for `pipegate %s` naming each of its options', (_p, cmd) => {
    const usage = new RegExp(`^pipegate ${cmd.path.replace(/ /g, ' +')}(?= |$)`, 'm');
    const section = docSections.find((s) => usage.test(s));
    expect({ command: cmd.path, documented: section !== undefined }).toEqual({ command: cmd.path, documented: true });
    const missing = cmd.options.filter((flag) => !new RegExp(`(^|[^\\w-])${flag}(?![\\w-])`).test(section ?? ''));
    expect({ command: cmd.path, missing }).toEqual({ command: cmd.path, missing: [] });
  });

  it('names every global option where it lists them', () => {
    const paragraph = DOC.split('\n\n').find((p) => p.startsWith('Global options')) ?? '';
    const missing = globals.filter((flag) => !paragraph.includes(flag));
    expect(missing).toEqual([]);
  });
});
