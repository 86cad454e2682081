// AWS clients acting in a tenant's AWS account: Plinth's own credentials assume the cloud account's
// role (with its external id), and the clients use what that returns, in the region of the resource.

import { ACMClient } from '@aws-sdk/client-acm';
import { ECSClient } from '@aws-sdk/client-ecs';
import { ElasticLoadBalancingV2Client } from '@aws-sdk/client-elastic-load-balancing-v2';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { AppError } from '../errors.ts';
import type { AwsConfig } from './aws-config.ts';

/** Attempts per request, throttling included, with the SDK's backoff between them. */
const MAX_ATTEMPTS = 5;
/** The shortest session STS grants: enough for the few calls one request makes. */
const SESSION_SECONDS = 900;

export interface RoleToAssume {
  /** Names the session in the account's CloudTrail. */
  sessionName: string;
  roleArn: string;
  externalId: string | null;
}

function endpointOf(config: AwsConfig) {
  return config.endpointUrl ? { endpoint: config.endpointUrl } : {};
}

export interface AssumedRole {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/** Whom a client acts as: a role it assumes, or one already assumed (several clients, one AssumeRole). */
export type ActingAs = RoleToAssume | AssumedRole;

/** assumeRole answers the credentials of the role, assumed with Plinth's own for 15 minutes. */
export async function assumeRole(config: AwsConfig, role: RoleToAssume, region: string): Promise<AssumedRole> {
  const sts = new STSClient({ region, maxAttempts: MAX_ATTEMPTS, ...endpointOf(config), ...(config.credentials ? { credentials: config.credentials } : {}) });
  try {
    const answer = await awsCall('STS AssumeRole', () =>
      sts.send(
        new AssumeRoleCommand({
          RoleArn: role.roleArn,
          RoleSessionName: role.sessionName.replace(/[^\w+=,.@-]/g, '-').slice(0, 64),
          DurationSeconds: SESSION_SECONDS,
          ...(role.externalId ? { ExternalId: role.externalId } : {}),
        }),
      ),
    );
    const c = answer.Credentials;
    if (!c?.AccessKeyId || !c.SecretAccessKey) throw awsError('STS AssumeRole', 'NoCredentials', 'STS answered without credentials');
    return { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, sessionToken: c.SessionToken, expiration: c.Expiration };
  } finally {
    sts.destroy();
  }
}

function credentialsOf(config: AwsConfig, who: ActingAs, region: string): Promise<AssumedRole> {
  return 'roleArn' in who ? assumeRole(config, who, region) : Promise.resolve(who);
}

/** ecsClientAs returns an ECS client of the region acting as the role (assumed first if need be). */
export async function ecsClientAs(config: AwsConfig, who: ActingAs, region: string): Promise<ECSClient> {
  return new ECSClient({ region, maxAttempts: MAX_ATTEMPTS, ...endpointOf(config), credentials: await credentialsOf(config, who, region) });
}

/** acmClientAs returns an ACM client of the region acting as the role (assumed first if need be). */
export async function acmClientAs(config: AwsConfig, who: ActingAs, region: string): Promise<ACMClient> {
  return new ACMClient({ region, maxAttempts: MAX_ATTEMPTS, ...endpointOf(config), credentials: await credentialsOf(config, who, region) });
}

/** elbClientAs returns an Elastic Load Balancing (v2) client of the region acting as the role (assumed first if need be). */
export async function elbClientAs(config: AwsConfig, who: ActingAs, region: string): Promise<ElasticLoadBalancingV2Client> {
  return new ElasticLoadBalancingV2Client({ region, maxAttempts: MAX_ATTEMPTS, ...endpointOf(config), credentials: await credentialsOf(config, who, region) });
}

/** awsError is the 502 of a request AWS refused, or answered with nothing to keep, naming its error code. */
export function awsError(operation: string, code: string, message: string): AppError {
  return new AppError(502, 'Aws:Request:FAILED', `AWS refused ${operation}: ${code}: ${message}`, { metadata: { awsErrorCode: code, operation } });
}

/**
 * awsCall runs one AWS request (the SDK retries throttling and server errors on its own) and turns its
 * failure into a 502 naming the operation and AWS's error code, which `metadata` also carries. What AWS
 * says of a refused AssumeRole names Plinth's own principal, and a failure to connect names Plinth's
 * endpoint: neither is passed on to the tenant, only what to check.
 */
export async function awsCall<T>(operation: string, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    if (error instanceof AppError) throw error;
    const e = error as { name?: string; message?: string; Code?: string; $fault?: string };
    if (e.$fault === undefined) throw awsError(operation, 'NetworkError', 'Plinth could not reach AWS');
    const code = e.Code ?? e.name ?? 'Error';
    if (operation.startsWith('STS ')) {
      throw awsError(operation, code, "the role's trust policy must let Plinth's principal assume it with the cloud account's externalId");
    }
    throw awsError(operation, code, e.message ?? code);
  }
}
