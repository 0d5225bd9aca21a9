/**
 * A bucket's CORS configuration in the S3 emulation (lib/local/s3.ts routes to it):
 * GetBucketCors, PutBucketCors and DeleteBucketCors, the configuration kept in the data dir as
 * S3 keeps it; until one is set, the rules the emulation was given (`cors`). How a browser's
 * preflight and request are answered from the rules is lib/local/s3-cors.ts.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as path from 'node:path';
import type { BucketCorsRule } from '../storage-cors';
import { checkPayloadHash, readSmallBody, type S3Context } from './s3-context';
import { arn, encodeSegment } from './s3-files';
import { S3Error, xmlEscape, xmlUnescape, type Authorization, type S3Address } from './s3-request';

const CORS_METHODS = new Set(['GET', 'PUT', 'HEAD', 'POST', 'DELETE']);
/** S3's limit on a bucket's CORS rules. */
const MAX_CORS_RULES = 100;

export interface BucketCorsConfig {
  /** The bucket's rules now: set through the API, else the ones the emulation was given. */
  rulesOf(bucket: string): readonly BucketCorsRule[];
  /** GetBucketCors, PutBucketCors and DeleteBucketCors; S3 authorizes the delete as s3:PutBucketCORS. */
  serve(method: string, a: S3Address, auth: Authorization, req: IncomingMessage, res: ServerResponse): Promise<void>;
}

export function bucketCorsConfig(c: S3Context): BucketCorsConfig {
  // Per bucket: the configuration set through the API (null: none set yet), read once from disk.
  const corsSet = new Map<string, BucketCorsRule[] | null>();
  const corsFile = (bucket: string): string => path.join(c.opts.dir, '.cors', `${encodeSegment(bucket)}.json`);

  function rulesOf(bucket: string): readonly BucketCorsRule[] {
    let set = corsSet.get(bucket);
    if (set === undefined) {
      try {
        set = JSON.parse(readFileSync(corsFile(bucket), 'utf8')) as BucketCorsRule[];
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        set = null;
      }
      corsSet.set(bucket, set);
    }
    return set ?? c.opts.cors?.(bucket) ?? [];
  }

  async function setRules(bucket: string, rules: BucketCorsRule[]): Promise<void> {
    await mkdir(path.dirname(corsFile(bucket)), { recursive: true, mode: 0o700 });
    await writeFile(corsFile(bucket), JSON.stringify(rules), { mode: 0o600 });
    corsSet.set(bucket, rules);
  }

  async function serve(method: string, a: S3Address, auth: Authorization, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const id = { 'x-amz-request-id': randomUUID() };
    if (method === 'GET') {
      await c.authorizeOrThrow(auth, 's3:GetBucketCORS', arn(a.bucket));
      const rules = rulesOf(a.bucket);
      if (rules.length === 0)
        throw new S3Error(404, 'NoSuchCORSConfiguration', 'The CORS configuration does not exist', { BucketName: a.bucket });
      const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${rules.map(corsRuleXml).join('')}</CORSConfiguration>`;
      res.writeHead(200, { ...id, 'Content-Type': 'application/xml', 'Content-Length': String(Buffer.byteLength(xml)) }).end(xml);
      return;
    }
    if (method === 'DELETE') {
      await c.authorizeOrThrow(auth, 's3:PutBucketCORS', arn(a.bucket));
      await setRules(a.bucket, []);
      res.writeHead(204, id).end();
      return;
    }
    if (method !== 'PUT') throw new S3Error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
    const body = await readSmallBody(req);
    checkPayloadHash(auth, body);
    await c.authorizeOrThrow(auth, 's3:PutBucketCORS', arn(a.bucket));
    await setRules(a.bucket, parseCorsConfiguration(body.toString('utf8')));
    res.writeHead(200, { ...id, 'Content-Length': '0' }).end();
  }

  return { rulesOf, serve };
}

const malformed = (detail: string) =>
  new S3Error(400, 'MalformedXML', `The XML you provided was not well-formed or did not validate against our published schema (${detail})`);

/** A PutBucketCors body, checked as S3 checks it (1 to 100 rules, each with origins and known methods). */
export function parseCorsConfiguration(xml: string): BucketCorsRule[] {
  const values = (block: string, tag: string): string[] =>
    [...block.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, 'g'))].map((m) => xmlUnescape(m[1] ?? ''));
  if (!/<CORSConfiguration[\s>]/.test(xml)) throw malformed('no CORSConfiguration');
  const blocks = [...xml.matchAll(/<CORSRule>([\s\S]*?)<\/CORSRule>/g)].map((m) => m[1] ?? '');
  if (blocks.length === 0 || blocks.length > MAX_CORS_RULES) throw malformed(`${blocks.length} CORSRule elements`);
  return blocks.map((b) => {
    const methods = values(b, 'AllowedMethod');
    const origins = values(b, 'AllowedOrigin');
    if (methods.length === 0 || origins.length === 0) throw malformed('a CORSRule needs AllowedMethod and AllowedOrigin');
    const unknown = methods.find((m) => !CORS_METHODS.has(m));
    if (unknown !== undefined)
      throw new S3Error(400, 'InvalidRequest', `Found unsupported HTTP method in CORS config. Unsupported method is ${unknown}`);
    const id = values(b, 'ID')[0];
    const maxAge = values(b, 'MaxAgeSeconds')[0];
    return {
      ...(id !== undefined ? { id } : {}),
      allowedMethods: methods,
      allowedOrigins: origins,
      allowedHeaders: values(b, 'AllowedHeader'),
      exposedHeaders: values(b, 'ExposeHeader'),
      maxAgeSeconds: maxAge === undefined ? 0 : Number(maxAge),
    };
  });
}

function corsRuleXml(r: BucketCorsRule): string {
  const each = (tag: string, list: readonly string[]) => list.map((v) => `<${tag}>${xmlEscape(v)}</${tag}>`).join('');
  return `<CORSRule>${r.id !== undefined ? `<ID>${xmlEscape(r.id)}</ID>` : ''}${each('AllowedHeader', r.allowedHeaders)}${each('AllowedMethod', r.allowedMethods)}${each('AllowedOrigin', r.allowedOrigins)}${each('ExposeHeader', r.exposedHeaders)}${r.maxAgeSeconds > 0 ? `<MaxAgeSeconds>${r.maxAgeSeconds}</MaxAgeSeconds>` : ''}</CORSRule>`;
}
