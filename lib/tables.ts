/**
 * The one table definition, read by the CDK stateful stack and by the local bootstrap.
 * Plain data: imports nothing from aws-cdk-lib.
 *
 * A single table holds every item (see the README's data model):
 *   PIPELINE#<id> / META                 latest version, pointers to the latest runs, deployment id
 *   PIPELINE#<id> / VERSION#<0000000001>  one immutable definition version
 *   DEPLOYMENT#<uuid> / DEPLOYMENT        contract snapshot, key hashes, sealed signing secret
 *   EXEC#<uuid> / EXEC                    a run or an API execution
 *   IDEM#<deployment>#<key hash> / IDEM   an Idempotency-Key record (24 h)
 *   UPLOAD#<uuid> / UPLOAD                a caller's upload: its deployment, size, expiry, the execution that used it
 *   OWNERSECRETS / SECRET#<name>          an owner secret, sealed with the master key
 *   USAGE#<deployment> / <bucket start>    finished executions of a five-minute bucket (2 days)
 *   FORM#<token hash> / FORM              a web-form link: its deployment (which decides whether it works)
 *   FORMRATE#<link|address> / <minute>    web-form actions in a one-minute window (rate limits; 2 minutes)
 */
export interface IndexDefinition {
  name: string;
  partitionKey: string;
  sortKey: string;
  /** ALL copies every attribute; KEYS_ONLY keeps the index out of updates that do not touch its keys. */
  projection: 'ALL' | 'KEYS_ONLY';
}
export interface TableDefinition {
  /** Logical name; the physical name comes from configuration. */
  id: string;
  partitionKey: string;
  sortKey: string;
  /** Epoch-seconds expiry attribute (DynamoDB TTL); also checked at read time. */
  ttlAttribute: string;
  indexes: IndexDefinition[];
}

export const MAIN_TABLE: TableDefinition = {
  id: 'main',
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'expires_at',
  indexes: [
    // Lists: PIPELINES → every pipeline by id; RUNS#<pipeline> → its runs by creation time.
    { name: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk', projection: 'ALL' },
    // Sparse: executions that need attention after a crash (open ones, callbacks not yet settled).
    // Keys only: the status updates of every execution then write no index copy (one write unit
    // less per execution); the rare reader fetches the items it finds.
    { name: 'sweep', partitionKey: 'sweep', sortKey: 'sweep_at', projection: 'KEYS_ONLY' },
    // EXECS#<deployment> → the deployment's API executions by creation time, for the owner.
    // Keys only and written once at create: status updates never touch it (one write unit per
    // execution, against one per update with ALL). The rare owner listing reads the items.
    { name: 'executions', partitionKey: 'dep_pk', sortKey: 'dep_sk', projection: 'KEYS_ONLY' },
  ],
};
