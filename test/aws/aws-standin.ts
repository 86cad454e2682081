// A stand-in for the AWS endpoints Plinth calls, on loopback, speaking their wire protocols: STS
// AssumeRole and Elastic Load Balancing's DescribeTargetGroups and DescribeTargetHealth (the query
// protocol, XML answers), ECS and ACM (JSON 1.1, the operation in X-Amz-Target). It keeps task
// definitions, services, target groups and certificates in memory, records every call, and can be told
// to refuse or throttle an operation. Plinth reaches it through PLINTH_AWS_ENDPOINT_URL.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface AwsCall {
  operation: string;
  /** The parsed request: the query form of STS, the JSON of ECS. */
  input: Record<string, unknown>;
  /** The access key that signed it (the Credential of its Authorization header). */
  accessKeyId: string | undefined;
}

export interface AwsStandin {
  url: string;
  calls: AwsCall[];
  /** Task definitions by ARN. */
  taskDefinitions: Map<string, Record<string, unknown>>;
  /** ACM certificates by ARN, as DescribeCertificate answers them (a test sets Status and NotAfter). */
  certificates: Map<string, Record<string, unknown>>;
  /**
   * ECS services by ARN, as DescribeServices answers them: their load balancers, and their deployments
   * (`ecs-svc/` ids and statuses) with the service deployment the current one belongs to.
   */
  services: Map<
    string,
    {
      loadBalancers: { targetGroupArn: string; containerName: string; containerPort: number }[];
      deployments?: { id: string; status: string }[];
      currentServiceDeployment?: string;
    }
  >;
  /** ECS service deployments by ARN, as DescribeServiceDeployments answers them. */
  serviceDeployments: Map<string, Record<string, unknown>>;
  /** Target groups by ARN, as DescribeTargetGroups answers them (XML element names and values). */
  targetGroups: Map<string, Record<string, string | number>>;
  /** The health of each target, by `<target group ARN> <target id>`: State, and Reason and Description. */
  targetHealth: Map<string, { State: string; Reason?: string; Description?: string }>;
  /** Answers the next `times` calls of the operation with this AWS error. */
  failNext(operation: string, code: string, options?: { times?: number; status?: number }): void;
  close(): Promise<void>;
}

const ECS_TARGET = 'AmazonEC2ContainerServiceV20141113.';
const ACM_TARGET = 'CertificateManager.';
const ACCOUNT = '111122223333';

export async function startAwsStandin(): Promise<AwsStandin> {
  const calls: AwsCall[] = [];
  const taskDefinitions = new Map<string, Record<string, unknown>>();
  const failures = new Map<string, { code: string; status: number; times: number }>();
  const revisions = new Map<string, number>();
  const certificates = new Map<string, Record<string, unknown>>();
  const services: AwsStandin['services'] = new Map();
  const serviceDeployments: AwsStandin['serviceDeployments'] = new Map();
  const targetGroups: AwsStandin['targetGroups'] = new Map();
  const targetHealth: AwsStandin['targetHealth'] = new Map();
  let deployments = 0;

  const elb: Record<string, (input: Record<string, string>) => string> = {
    DescribeTargetGroups: (input) => {
      const arn = input['TargetGroupArns.member.1'];
      const group = targetGroups.get(arn);
      if (!group) throw { status: 400, code: 'TargetGroupNotFound', message: 'One or more target groups not found' };
      const fields = Object.entries({ TargetGroupArn: arn, ...group })
        .map(([k, v]) => (k === 'Matcher' ? `<Matcher><HttpCode>${v}</HttpCode></Matcher>` : `<${k}>${v}</${k}>`))
        .join('');
      return elbAnswer('DescribeTargetGroups', `<TargetGroups><member>${fields}</member></TargetGroups>`);
    },
    DescribeTargetHealth: (input) => {
      const arn = input.TargetGroupArn;
      if (!targetGroups.has(arn)) throw { status: 400, code: 'TargetGroupNotFound', message: 'One or more target groups not found' };
      const id = input['Targets.member.1.Id'];
      const port = input['Targets.member.1.Port'];
      const health = targetHealth.get(`${arn} ${id}`) ?? {
        State: 'unused',
        Reason: 'Target.NotRegistered',
        Description: 'Target is not registered to the target group',
      };
      const healthXml = Object.entries(health)
        .map(([k, v]) => `<${k}>${v}</${k}>`)
        .join('');
      return elbAnswer(
        'DescribeTargetHealth',
        `<TargetHealthDescriptions><member><HealthCheckPort>${port}</HealthCheckPort><TargetHealth>${healthXml}</TargetHealth><Target><Id>${id}</Id><Port>${port}</Port></Target></member></TargetHealthDescriptions>`,
      );
    },
  };

  const acm: Record<string, (input: any) => unknown> = {
    RequestCertificate: (input) => {
      const arn = `arn:aws:acm:us-west-2:${ACCOUNT}:certificate/${input.IdempotencyToken}`;
      if (!certificates.has(arn)) {
        certificates.set(arn, {
          CertificateArn: arn,
          DomainName: input.DomainName,
          Status: 'PENDING_VALIDATION',
          DomainValidationOptions: [
            {
              DomainName: input.DomainName,
              ValidationStatus: 'PENDING_VALIDATION',
              ResourceRecord: { Name: `_x1.${input.DomainName}.`, Type: 'CNAME', Value: '_x2.acm-validations.aws.' },
            },
          ],
        });
      }
      return { CertificateArn: arn };
    },
    DescribeCertificate: (input) => {
      const certificate = certificates.get(input.CertificateArn);
      if (!certificate) throw { status: 400, code: 'ResourceNotFoundException', message: 'Could not find certificate.' };
      return { Certificate: certificate };
    },
  };

  const ecs: Record<string, (input: any) => unknown> = {
    DescribeServices: (input) => {
      const arn = input.services[0];
      const service = services.get(arn);
      if (!service) return { services: [], failures: [{ arn, reason: 'MISSING' }] };
      return { services: [{ serviceArn: arn, clusterArn: input.cluster, status: 'ACTIVE', ...service }], failures: [] };
    },
    DescribeServiceDeployments: (input) => {
      const found = input.serviceDeploymentArns.filter((arn: string) => serviceDeployments.has(arn));
      return {
        serviceDeployments: found.map((arn: string) => ({ serviceDeploymentArn: arn, ...serviceDeployments.get(arn) })),
        failures: input.serviceDeploymentArns.filter((arn: string) => !serviceDeployments.has(arn)).map((arn: string) => ({ arn, reason: 'MISSING' })),
      };
    },
    DescribeTaskDefinition: (input) => {
      const definition = taskDefinitions.get(input.taskDefinition);
      if (!definition) throw { status: 400, code: 'ClientException', message: 'Unable to describe task definition.' };
      return { taskDefinition: definition };
    },
    RegisterTaskDefinition: (input) => {
      const revision = (revisions.get(input.family) ?? 100) + 1;
      revisions.set(input.family, revision);
      const taskDefinitionArn = `arn:aws:ecs:us-west-2:${ACCOUNT}:task-definition/${input.family}:${revision}`;
      const definition = { ...input, taskDefinitionArn, revision, status: 'ACTIVE' };
      taskDefinitions.set(taskDefinitionArn, definition);
      return { taskDefinition: definition };
    },
    UpdateService: (input) => ({
      service: {
        serviceArn: input.service,
        taskDefinition: input.taskDefinition,
        deployments: [
          { id: `ecs-svc/90000000000000000${++deployments}`, status: 'PRIMARY', taskDefinition: input.taskDefinition, rolloutState: 'IN_PROGRESS' },
          { id: 'ecs-svc/8000000000000000001', status: 'ACTIVE', taskDefinition: 'arn:aws:ecs:us-west-2:111122223333:task-definition/old:1' },
        ],
      },
    }),
  };

  const server = createServer(async (req, res) => {
    const body = await read(req);
    const target = String(req.headers['x-amz-target'] ?? '');
    const accessKeyId = /Credential=([^/]+)\//.exec(String(req.headers.authorization ?? ''))?.[1];
    if (target.startsWith(ECS_TARGET) || target.startsWith(ACM_TARGET)) {
      const service = target.startsWith(ECS_TARGET) ? ecs : acm;
      const operation = target.slice(target.indexOf('.') + 1);
      const input = JSON.parse(body || '{}');
      calls.push({ operation, input, accessKeyId });
      const failure = takeFailure(operation);
      if (failure) return json(res, failure.status, { __type: failure.code, message: `${failure.code} from the stand-in` });
      try {
        const handler = service[operation];
        if (!handler) return json(res, 400, { __type: 'InvalidAction', message: `${operation} is not served here` });
        return json(res, 200, handler(input));
      } catch (error) {
        const e = error as { status: number; code: string; message: string };
        return json(res, e.status, { __type: e.code, message: e.message });
      }
    }
    const input = Object.fromEntries(new URLSearchParams(body));
    const operation = String(input.Action ?? '');
    calls.push({ operation, input, accessKeyId });
    const failure = takeFailure(operation);
    if (failure) return xml(res, failure.status, stsError(failure.code));
    if (elb[operation]) {
      try {
        return xml(res, 200, elb[operation](input));
      } catch (error) {
        const e = error as { status: number; code: string; message: string };
        return xml(res, e.status, elbError(e.code, e.message));
      }
    }
    if (operation !== 'AssumeRole') return xml(res, 400, stsError('InvalidAction'));
    xml(res, 200, assumeRoleAnswer(String(input.RoleArn), String(input.RoleSessionName)));
  });

  function takeFailure(operation: string) {
    const failure = failures.get(operation);
    if (!failure) return undefined;
    if (--failure.times <= 0) failures.delete(operation);
    return failure;
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    taskDefinitions,
    certificates,
    services,
    serviceDeployments,
    targetGroups,
    targetHealth,
    failNext(operation, code, options = {}) {
      failures.set(operation, { code, status: options.status ?? 400, times: options.times ?? 1 });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function read(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': 'standin' });
  res.end(JSON.stringify(body));
}

function xml(res: ServerResponse, status: number, body: string) {
  res.writeHead(status, { 'content-type': 'text/xml', 'x-amzn-requestid': 'standin' });
  res.end(body);
}

function stsError(code: string) {
  return `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${code} from the stand-in</Message></Error><RequestId>standin</RequestId></ErrorResponse>`;
}

const ELB_XMLNS = 'http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/';

function elbAnswer(operation: string, result: string) {
  return `<${operation}Response xmlns="${ELB_XMLNS}"><${operation}Result>${result}</${operation}Result><ResponseMetadata><RequestId>standin</RequestId></ResponseMetadata></${operation}Response>`;
}

function elbError(code: string, message: string) {
  return `<ErrorResponse xmlns="${ELB_XMLNS}"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>standin</RequestId></ErrorResponse>`;
}

function assumeRoleAnswer(roleArn: string, sessionName: string) {
  const expiration = new Date(Date.now() + 900_000).toISOString();
  return `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <Credentials>
      <AccessKeyId>ASIASTANDINASSUMED</AccessKeyId>
      <SecretAccessKey>standin-secret</SecretAccessKey>
      <SessionToken>standin-session-token</SessionToken>
      <Expiration>${expiration}</Expiration>
    </Credentials>
    <AssumedRoleUser>
      <Arn>${roleArn.replace(':iam::', ':sts::').replace(':role/', ':assumed-role/')}/${sessionName}</Arn>
      <AssumedRoleId>AROASTANDIN:${sessionName}</AssumedRoleId>
    </AssumedRoleUser>
  </AssumeRoleResult>
  <ResponseMetadata><RequestId>standin</RequestId></ResponseMetadata>
</AssumeRoleResponse>`;
}
