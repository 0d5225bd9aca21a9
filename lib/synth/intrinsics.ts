/**
 * CloudFormation's intrinsic functions, evaluated against local physical resources: what
 * CloudFormation does to a template's values when it deploys the stack. Anything this does not
 * know throws with the JSON path of the value, so nothing unresolved reaches a function.
 */
import { isPlainObject } from '../../functions/core/values';

/** What a deployed resource answers to Ref and Fn::GetAtt. */
export interface PhysicalResource {
  ref: string;
  attributes: Readonly<Record<string, string>>;
}

/** Logical id -> the local resource it became. */
export type PhysicalIds = Readonly<Record<string, PhysicalResource>>;

export interface ResolveContext {
  stackName: string;
  account: string;
  region: string;
  partition: string;
  urlSuffix: string;
  /** The physical resource of a logical id in this stack (undefined when there is none). */
  resource(logicalId: string): PhysicalResource | undefined;
  /** Template parameters' values (CDK asset parameters, BootstrapVersion, ...). */
  parameters?: Readonly<Record<string, string | readonly string[]>>;
  mappings?: Readonly<Record<string, Record<string, Record<string, unknown>>>>;
  /** The value of an exported output (Fn::ImportValue). */
  importValue?(exportName: string): unknown;
  /** An output of another stack (Fn::GetStackOutput, CDK's weak cross-stack references). */
  stackOutput?(stackName: string, outputName: string, region: string | undefined): unknown;
}

export class IntrinsicError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

/** Marks a value removed by `{ "Ref": "AWS::NoValue" }`; never returned from resolve(). */
const NO_VALUE: unique symbol = Symbol('AWS::NoValue');

/** `{ "Ref": ... }` or `{ "Fn::X": ... }` (a one-key object naming a function). */
export function intrinsicName(x: unknown): string | undefined {
  if (!isPlainObject(x)) return undefined;
  const keys = Object.keys(x);
  if (keys.length !== 1) return undefined;
  const k = keys[0] as string;
  return k === 'Ref' || k.startsWith('Fn::') ? k : undefined;
}

/** The value with every intrinsic function evaluated. */
export function resolve(value: unknown, ctx: ResolveContext, path = '$'): unknown {
  const out = resolveInner(value, ctx, path);
  if (out === NO_VALUE) throw new IntrinsicError(path, 'AWS::NoValue where a value is required');
  return out;
}

/** resolve(), then insists on a string. */
export function resolveString(value: unknown, ctx: ResolveContext, path = '$'): string {
  const out = resolve(value, ctx, path);
  if (typeof out !== 'string') throw new IntrinsicError(path, `expected a string, got ${JSON.stringify(out)}`);
  return out;
}

function resolveInner(value: unknown, ctx: ResolveContext, path: string): unknown {
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    value.forEach((v, i) => {
      const r = resolveInner(v, ctx, `${path}[${i}]`);
      if (r !== NO_VALUE) out.push(r);
    });
    return out;
  }
  if (!isPlainObject(value)) return value;
  const fn = intrinsicName(value);
  if (fn) return call(fn, value[fn], ctx, `${path}.${fn}`);
  const unknownFn = Object.keys(value).find((k) => k.startsWith('Fn::'));
  if (unknownFn) throw new IntrinsicError(`${path}.${unknownFn}`, `${unknownFn} beside other keys`);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const r = resolveInner(v, ctx, `${path}.${k}`);
    if (r !== NO_VALUE) out[k] = r;
  }
  return out;
}

function str(x: unknown, path: string, what: string): string {
  if (typeof x !== 'string') throw new IntrinsicError(path, `${what} must be a string, got ${JSON.stringify(x)}`);
  return x;
}

function list(x: unknown, path: string, what: string): unknown[] {
  if (!Array.isArray(x)) throw new IntrinsicError(path, `${what} must be a list, got ${JSON.stringify(x)}`);
  return x;
}

function pseudo(name: string, ctx: ResolveContext): string | typeof NO_VALUE | undefined {
  switch (name) {
    case 'AWS::AccountId':
      return ctx.account;
    case 'AWS::Region':
      return ctx.region;
    case 'AWS::Partition':
      return ctx.partition;
    case 'AWS::URLSuffix':
      return ctx.urlSuffix;
    case 'AWS::StackName':
      return ctx.stackName;
    case 'AWS::StackId':
      return `arn:${ctx.partition}:cloudformation:${ctx.region}:${ctx.account}:stack/${ctx.stackName}/00000000-0000-4000-8000-000000000000`;
    case 'AWS::NoValue':
      return NO_VALUE;
    default:
      return undefined;
  }
}

function ref(name: string, ctx: ResolveContext, path: string): unknown {
  const p = pseudo(name, ctx);
  if (p !== undefined) return p;
  if (name.startsWith('AWS::')) throw new IntrinsicError(path, `unknown pseudo parameter ${name}`);
  const param = ctx.parameters?.[name];
  if (param !== undefined) return param;
  const r = ctx.resource(name);
  if (!r) throw new IntrinsicError(path, `Ref to ${name}, which is neither a resource nor a parameter with a value`);
  return r.ref;
}

function getAtt(logicalId: string, attribute: string, ctx: ResolveContext, path: string): string {
  const r = ctx.resource(logicalId);
  if (!r) throw new IntrinsicError(path, `Fn::GetAtt on ${logicalId}, which is not a resource`);
  const v = r.attributes[attribute];
  if (v === undefined) throw new IntrinsicError(path, `${logicalId} has no attribute ${attribute} locally`);
  return v;
}

function sub(template: string, vars: Record<string, unknown>, ctx: ResolveContext, path: string): string {
  return template.replace(/\$\{([^}]*)\}/g, (_m, inner: string) => {
    // ${!Literal} writes ${Literal}.
    if (inner.startsWith('!')) return `\${${inner.slice(1)}}`;
    const name = inner.trim();
    if (name in vars) return str(vars[name], path, `Fn::Sub variable ${name}`);
    const dot = name.indexOf('.');
    if (dot > 0 && !name.startsWith('AWS::')) return getAtt(name.slice(0, dot), name.slice(dot + 1), ctx, path);
    return str(ref(name, ctx, path), path, `\${${name}}`);
  });
}

function call(fn: string, arg: unknown, ctx: ResolveContext, path: string): unknown {
  switch (fn) {
    case 'Ref':
      return ref(str(arg, path, 'Ref'), ctx, path);
    case 'Fn::GetAtt': {
      let parts: unknown[];
      if (typeof arg === 'string') {
        const dot = arg.indexOf('.');
        if (dot <= 0) throw new IntrinsicError(path, `"${arg}" is not LogicalId.Attribute`);
        parts = [arg.slice(0, dot), arg.slice(dot + 1)];
      } else parts = list(arg, path, 'Fn::GetAtt');
      if (parts.length !== 2) throw new IntrinsicError(path, 'Fn::GetAtt takes [logicalId, attribute]');
      const attribute = resolve(parts[1], ctx, `${path}[1]`);
      return getAtt(str(parts[0], path, 'logical id'), str(attribute, path, 'attribute'), ctx, path);
    }
    case 'Fn::Join': {
      const [delimiter, values, ...rest] = list(arg, path, 'Fn::Join');
      if (rest.length > 0 || values === undefined) throw new IntrinsicError(path, 'Fn::Join takes [delimiter, [values]]');
      const resolved = list(resolve(values, ctx, `${path}[1]`), `${path}[1]`, 'Fn::Join values');
      return resolved.map((v, i) => str(v, `${path}[1][${i}]`, 'joined value')).join(str(delimiter, path, 'delimiter'));
    }
    case 'Fn::Sub': {
      if (typeof arg === 'string') return sub(arg, {}, ctx, path);
      const [template, vars, ...rest] = list(arg, path, 'Fn::Sub');
      if (rest.length > 0 || !isPlainObject(vars)) throw new IntrinsicError(path, 'Fn::Sub takes a string or [string, {variables}]');
      const resolvedVars = resolve(vars, ctx, `${path}[1]`) as Record<string, unknown>;
      return sub(str(template, path, 'Fn::Sub template'), resolvedVars, ctx, path);
    }
    case 'Fn::Select': {
      const [index, values, ...rest] = list(arg, path, 'Fn::Select');
      if (rest.length > 0 || values === undefined) throw new IntrinsicError(path, 'Fn::Select takes [index, [values]]');
      const i = Number(resolve(index, ctx, `${path}[0]`));
      const resolved = list(resolve(values, ctx, `${path}[1]`), `${path}[1]`, 'Fn::Select values');
      if (!Number.isInteger(i) || i < 0 || i >= resolved.length) {
        throw new IntrinsicError(path, `index ${JSON.stringify(index)} out of range for ${resolved.length} values`);
      }
      return resolved[i];
    }
    case 'Fn::Split': {
      const [delimiter, source, ...rest] = list(arg, path, 'Fn::Split');
      if (rest.length > 0) throw new IntrinsicError(path, 'Fn::Split takes [delimiter, string]');
      const d = str(delimiter, path, 'delimiter');
      if (d === '') throw new IntrinsicError(path, 'Fn::Split delimiter is empty');
      return str(resolve(source, ctx, `${path}[1]`), `${path}[1]`, 'Fn::Split source').split(d);
    }
    case 'Fn::ImportValue': {
      const name = str(resolve(arg, ctx, path), path, 'export name');
      if (!ctx.importValue) throw new IntrinsicError(path, `Fn::ImportValue ${name} with no exports to import from`);
      const v = ctx.importValue(name);
      if (v === undefined) throw new IntrinsicError(path, `no stack exports ${name}`);
      return v;
    }
    case 'Fn::GetStackOutput': {
      if (!isPlainObject(arg)) throw new IntrinsicError(path, 'Fn::GetStackOutput takes { StackName, OutputName }');
      const stackName = str(resolve(arg.StackName, ctx, `${path}.StackName`), path, 'StackName');
      const outputName = str(resolve(arg.OutputName, ctx, `${path}.OutputName`), path, 'OutputName');
      const region = arg.Region === undefined ? undefined : str(resolve(arg.Region, ctx, `${path}.Region`), path, 'Region');
      if (region !== undefined && region !== ctx.region)
        throw new IntrinsicError(path, `output of ${stackName} in another region (${region})`);
      if (arg.RoleArn !== undefined) throw new IntrinsicError(path, 'cross-account Fn::GetStackOutput (RoleArn) is not emulated');
      if (!ctx.stackOutput) throw new IntrinsicError(path, `Fn::GetStackOutput ${stackName}.${outputName} with no other stacks`);
      const v = ctx.stackOutput(stackName, outputName, region);
      if (v === undefined) throw new IntrinsicError(path, `stack ${stackName} has no output ${outputName}`);
      return v;
    }
    case 'Fn::FindInMap': {
      const [map, top, second, ...rest] = list(arg, path, 'Fn::FindInMap');
      if (rest.length > 0) throw new IntrinsicError(path, 'Fn::FindInMap takes [map, key, key]');
      const m = ctx.mappings?.[str(resolve(map, ctx, path), path, 'map name')];
      const v = m?.[str(resolve(top, ctx, path), path, 'key')]?.[str(resolve(second, ctx, path), path, 'key')];
      if (v === undefined) throw new IntrinsicError(path, `no mapping ${JSON.stringify(arg)}`);
      return v;
    }
    case 'Fn::Base64':
      return Buffer.from(str(resolve(arg, ctx, path), path, 'Fn::Base64 value'), 'utf8').toString('base64');
    default:
      throw new IntrinsicError(path, `unsupported intrinsic ${fn}`);
  }
}
