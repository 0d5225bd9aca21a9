import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from '../../../lib/cli/errors';
import { checkPipelineId, idFromPath, loadPipelineFile, parsePipelineText } from '../../../lib/cli/files';
import { thrown } from '../../support/thrown';

const usageError = (fn: () => unknown): UsageError => thrown(fn, UsageError);

const FIXTURES = join(__dirname, '..', '..', 'fixtures', 'cli');

describe('pipeline files', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'pipegate-cli-files-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('read JSON and YAML to the same definition', () => {
    // Act
    const json = loadPipelineFile(join(FIXTURES, 'greeting.json'));
    const yaml = loadPipelineFile(join(FIXTURES, 'greeting.yaml'));

    // Assess
    expect(json.id).toBe('greeting');
    expect(yaml.id).toBe('greeting');
    expect(yaml.definition).toEqual(json.definition);
    expect(Object.keys(json.definition)).toEqual(['description', 'nodes']);
  });

  it('send only description and nodes, keeping publish and tests aside', () => {
    // Act
    const f = loadPipelineFile(join(FIXTURES, 'greeting.yaml'));

    // Assess
    expect(Object.keys(f.definition).sort()).toEqual(['description', 'nodes']);
    expect(f.publish).toEqual({ inputs: { name: { visible: true } } });
    expect(f.tests).toEqual([{ name: 'greets Ada', inputs: { name: 'Ada' }, expect: { message: 'Hello, Ada!' } }]);
  });

  it('send retry_interrupted along when the file sets it', () => {
    // Prepare
    const path = join(dir, 'once.yml');
    writeFileSync(path, 'retry_interrupted: false\nnodes:\n  a: { type: input, value_type: boolean, value: true }\n');

    // Act
    const f = loadPipelineFile(path);

    // Assess
    expect(f.definition).toEqual({ retry_interrupted: false, nodes: { a: { type: 'input', value_type: 'boolean', value: true } } });
  });

  it('leave description out when the file has none', () => {
    // Prepare
    const path = join(dir, 'bare.yml');
    writeFileSync(path, 'nodes:\n  a: { type: input, value_type: boolean, value: true }\n');

    // Act
    const f = loadPipelineFile(path);

    // Assess
    expect(f.definition).toEqual({ nodes: { a: { type: 'input', value_type: 'boolean', value: true } } });
    expect(f.id).toBe('bare');
  });

  it('resolve relative paths against the given directory and take --id over the name', () => {
    // Act
    const f = loadPipelineFile('greeting.json', { cwd: FIXTURES, id: 'hello-2' });

    // Assess
    expect(f.id).toBe('hello-2');
    expect(f.path).toBe(join(FIXTURES, 'greeting.json'));
  });

  it.each([
    ['missing.json', /no such file: .*missing\.json/],
    ['broken.json', /broken\.json is not valid JSON \(line 1, column 14\): the text ends too early/],
    ['broken.yaml', /broken\.yaml is not valid YAML \(line \d+, column \d+\)/],
    ['list.yaml', /must hold an object with "nodes"/],
    ['.', /is a directory/],
  ])('refuse %s as a usage error', (name, message) => {
    // Act
    const e = usageError(() => loadPipelineFile(name, { cwd: FIXTURES }));

    // Assess
    expect(e.message).toMatch(message);
    expect(e.message).not.toMatch(/:\s*$/);
    expect(e.exitCode).toBe(2);
  });

  it('refuse YAML with a repeated key rather than silently keep one', () => {
    // Act
    const e = usageError(() => parsePipelineText('nodes: {}\nnodes: {}\n', 'dup.yaml'));

    // Assess
    expect(e.message).toContain('not valid YAML');
  });
});

describe('pipeline ids', () => {
  it.each([
    ['examples/greeting.json', 'greeting'],
    ['/a/b/text-stats.yaml', 'text-stats'],
    ['p1.yml', 'p1'],
    ['noext', 'noext'],
  ])('%s → %s', (path, id) => {
    expect(idFromPath(path)).toBe(id);
  });

  it.each([['My Pipeline.json'], ['greeting.v2.json'], ['-lead.json'], ['UPPER.yaml']])(
    'cannot come from %s, and say to pass --id',
    (path) => {
      // Act
      const e = usageError(() => idFromPath(path));

      // Assess
      expect(e.hint).toContain('--id');
    },
  );

  it('given with --id must match the pipeline id rule', () => {
    // Act
    const e = usageError(() => checkPipelineId('Bad_Id', '--id'));

    // Assess
    expect(e.message).toBe('--id "Bad_Id" is not a valid pipeline id');
    expect(checkPipelineId('a'.repeat(63), '--id')).toHaveLength(63);
    expect(() => checkPipelineId('a'.repeat(64), '--id')).toThrow(UsageError);
  });
});
